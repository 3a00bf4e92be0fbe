"""LLM environments over local datasets (agilerl.families.llm.environments) and the reward-file
loader (agilerl.llm.rewards)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from agilerl.families.llm.environments import (
    MAX_CHARS_PER_TOKEN,
    PreferenceEnv,
    ReasoningEnv,
    SFTEnv,
    build_llm_env,
    chars_per_token,
    load_table,
    split_dataset,
)
from agilerl.guards.time_limit import ENV_VAR
from agilerl.guards.user_code import UserCodeError
from agilerl.llm.batches import Completions, PreferenceBatch, PromptBatch, TokenSequences
from agilerl.llm.models import LLMSetupError, load_tokenizer
from agilerl.llm.rewards import RewardError, load_reward_fn
from agilerl.models import LLMPreferenceEnvSpec, LLMReasoningEnvSpec, LLMSftEnvSpec

ROWS = [{"id": i, "question": f"what colour is the {i}", "answer": f"a{i}"} for i in range(20)]
TEMPLATE = {"system_0": "You are a helpful assistant .", "user_1": "{question}"}


@pytest.fixture(scope="module")
def tokenizer(tiny_llm):
    return load_tokenizer(tiny_llm / "model")


@pytest.fixture
def plain_tokenizer(tiny_llm):
    """The tiny tokenizer without a chat template (a base model's)."""
    tokenizer = load_tokenizer(tiny_llm / "model")
    tokenizer.chat_template = None
    return tokenizer


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _table(tmp_path, rows=ROWS):
    return load_table(_jsonl(tmp_path / "rows.jsonl", rows), field="environment.dataset")


def _completions(texts: list[str], group: int) -> Completions:
    n = len(texts)
    return Completions(
        ids=torch.zeros((n, 2), dtype=torch.long),
        attention_mask=torch.ones((n, 2), dtype=torch.long),
        loss_mask=torch.ones((n, 1), dtype=torch.bool),
        prompt_length=1,
        group_size=group,
        texts=texts,
    )


def _reasoning_env(tmp_path, tokenizer, reward_fn, *, rows=ROWS, batch_size=5, seed=3, **kw):
    train, test = split_dataset(_table(tmp_path, rows), 0.75, seed=0)
    return ReasoningEnv(
        train, test, tokenizer, reward_fn, TEMPLATE, batch_size=batch_size, seed=seed, **kw
    )


# ------------------------------------------------------------------------------ tables
def test_every_dataset_format_loads_the_same_rows(tmp_path):
    import pandas as pd

    frame = pd.DataFrame(ROWS)
    files = {
        "rows.jsonl": lambda p: _jsonl(p, ROWS),
        "rows.json": lambda p: p.write_text(json.dumps(ROWS)),
        "rows.csv": lambda p: frame.to_csv(p, index=False),
        "rows.parquet": lambda p: frame.to_parquet(p),
        "rows.pq": lambda p: frame.to_parquet(p),
    }
    for name, write in files.items():
        write(tmp_path / name)
        assert load_table(tmp_path / name, field="environment.dataset").to_list() == ROWS, name
    shards = tmp_path / "shards"
    shards.mkdir()
    _jsonl(shards / "a.jsonl", ROWS[:12])
    _jsonl(shards / "b.jsonl", ROWS[12:])
    (shards / "README.md").write_text("not data")
    assert load_table(shards, field="environment.dataset").to_list() == ROWS


def test_load_table_resolves_a_relative_path_against_base_dir_and_leaves_no_cache(tmp_path):
    _jsonl(tmp_path / "rows.jsonl", ROWS)
    before = sorted(tmp_path.rglob("*"))
    assert len(load_table("rows.jsonl", field="environment.dataset", base_dir=tmp_path)) == 20
    assert sorted(tmp_path.rglob("*")) == before


def test_load_table_renames_columns(tmp_path):
    _jsonl(tmp_path / "rows.jsonl", [{"nums": "1 2", "target": "3"}])
    table = load_table(
        tmp_path / "rows.jsonl",
        field="environment.dataset",
        columns={"nums": "question", "target": "answer"},
    )
    assert table.to_list() == [{"question": "1 2", "answer": "3"}]


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (
            lambda d: None,
            "missing.jsonl",
            r"missing\.jsonl \(relative to .*\) does not exist; .*never a hub id",
        ),
        (lambda d: (d / "rows.txt").write_text("x"), "rows.txt", r"unknown dataset format '\.txt'"),
        (lambda d: (d / "empty").mkdir(), "empty", r"holds no dataset file"),
        (
            lambda d: (
                (d / "mixed").mkdir(),
                _jsonl(d / "mixed/a.jsonl", ROWS),
                _jsonl(d / "mixed/b.csv", ROWS),
            ),
            "mixed",
            r"mixes dataset formats \(csv, json\)",
        ),
        (
            lambda d: (d / "broken.jsonl").write_text('{"question": "x"}\n{not json\n'),
            "broken.jsonl",
            r"broken\.jsonl: cannot be read as json",
        ),
    ],
    ids=["missing", "unknown-suffix", "empty-directory", "mixed-formats", "malformed"],
)
def test_load_table_refusals_name_the_field_and_the_path(tmp_path, setup, path, message):
    setup(tmp_path)
    with pytest.raises(LLMSetupError, match=rf"^environment\.dataset: .*{message}"):
        load_table(path, field="environment.dataset", base_dir=tmp_path)


def test_renaming_a_missing_column_names_the_columns_field(tmp_path):
    with pytest.raises(LLMSetupError, match=r"^environment\.columns: .*no column 'nums' to rename"):
        load_table(
            _jsonl(tmp_path / "rows.jsonl", ROWS),
            field="environment.dataset",
            columns={"nums": "question"},
        )


# ----------------------------------------------------------------------------- splits
def test_split_sizes_are_disjoint_seeded_and_cover_the_table(tmp_path):
    table = _table(tmp_path)
    train, test = split_dataset(table, 0.75, seed=0)
    assert (len(train), len(test)) == (15, 5)
    train_ids, test_ids = set(train["id"]), set(test["id"])
    assert not train_ids & test_ids and train_ids | test_ids == set(range(20))
    again, _ = split_dataset(table, 0.75, seed=0)
    other, _ = split_dataset(table, 0.75, seed=1)
    assert again["id"] == train["id"] and other["id"] != train["id"]
    assert [len(part) for part in split_dataset(table, 0.9, seed=0)] == [18, 2]


@pytest.mark.parametrize("fraction", [1.0, 0.01])
def test_a_split_without_train_or_test_rows_is_refused(tmp_path, fraction):
    with pytest.raises(LLMSetupError, match=r"^environment\.train_test_split: .*both splits need"):
        split_dataset(_table(tmp_path), fraction, seed=0)


def test_no_test_answer_ever_reaches_a_training_reward(tmp_path, tokenizer):
    scored = []

    def reward(completion, answer, question):
        scored.append(answer)
        return 1.0 if completion == answer else 0.0

    env = _reasoning_env(tmp_path, tokenizer, reward, batch_size=4)
    for _ in range(12):  # three epochs and more
        batch = env.next_batch()
        env.rewards(batch, _completions([row["answer"] for row in batch.rows for _ in (0, 1)], 2))
    assert env.num_epochs >= 3
    assert set(scored) == set(env.train["answer"])
    assert not set(scored) & set(env.test["answer"])


# ---------------------------------------------------------------------------- batches
def test_prompt_batches_are_left_padded_rendered_with_the_chat_template(tmp_path, tokenizer):
    rows = [dict(row, question="what colour is the sky " + "? " * (row["id"] % 3)) for row in ROWS]
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, rows=rows, batch_size=6)
    batch = env.next_batch()
    assert isinstance(batch, PromptBatch) and len(batch) == 6
    assert batch.input_ids.shape == batch.attention_mask.shape == (6, batch.input_ids.shape[1])
    assert batch.attention_mask[:, -1].all()  # left padding: every row ends at the last column
    lengths = batch.attention_mask.sum(dim=1)
    assert len(set(lengths.tolist())) > 1
    for ids, mask, text, row in zip(
        batch.input_ids, batch.attention_mask, batch.texts, batch.rows, strict=True
    ):
        pad = int((mask == 0).sum())
        assert (ids[:pad] == tokenizer.pad_token_id).all() and mask[pad:].all()
        assert text == tokenizer.apply_chat_template(
            [
                {"role": "system", "content": "You are a helpful assistant ."},
                {"role": "user", "content": row["question"]},
            ],
            tokenize=False,
            add_generation_prompt=True,
        )
        assert tokenizer.decode(ids[pad:]).split() == text.split()


def test_a_prompt_without_a_chat_template_is_rendered_plainly(tmp_path, plain_tokenizer):
    env = _reasoning_env(tmp_path, plain_tokenizer, lambda c, a, q: 0.0)
    batch = env.next_batch()
    question = batch.rows[0]["question"]
    assert batch.texts[0] == f"system: You are a helpful assistant .\nuser: {question}\nassistant:"


def test_a_final_assistant_message_is_continued_not_closed(tmp_path, tokenizer, plain_tokenizer):
    train, test = split_dataset(_table(tmp_path), 0.75, seed=0)
    template = {"user_0": "{question}", "assistant_1": "it is"}
    env = ReasoningEnv(train, test, tokenizer, lambda c, a, q: 0.0, template, batch_size=2)
    batch = env.next_batch()
    assert batch.texts[0].endswith(f"{batch.rows[0]['question']} <eos> <assistant> it is")
    plain = ReasoningEnv(train, test, plain_tokenizer, lambda c, a, q: 0.0, template, batch_size=2)
    assert plain.next_batch().texts[0].endswith("\nassistant: it is")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"user_1": "Solve {nums}."}, r"prompt_template\.user_1: \{nums\} names no column"),
        ({"user": "{question}"}, r"prompt_template\.user: keys are <role>_<position>"),
        (
            {"system_1": "x", "user_1": "{question}"},
            r"prompt_template\.user_1: position 1 is also system_1",
        ),
        ({"user_0": "a {question"}, r"prompt_template\.user_0: .*literal braces"),
        ({}, r"prompt_template: holds no message"),
    ],
    ids=["missing-column", "bad-key", "shared-position", "bad-brace", "empty"],
)
def test_prompt_template_refusals_name_the_key(tmp_path, tokenizer, template, message):
    train, test = split_dataset(_table(tmp_path), 0.75, seed=0)
    with pytest.raises(LLMSetupError, match=rf"^environment\.{message}"):
        ReasoningEnv(train, test, tokenizer, lambda c, a, q: 0.0, template, batch_size=2)


def test_a_prompt_longer_than_max_context_length_is_refused_naming_the_row(tmp_path, tokenizer):
    train, test = split_dataset(_table(tmp_path), 0.75, seed=0)
    texts = [
        tokenizer.apply_chat_template(
            [
                {"role": "system", "content": "You are a helpful assistant ."},
                {"role": "user", "content": row["question"]},
            ],
            tokenize=False,
            add_generation_prompt=True,
        )
        for row in train.to_list()
    ]
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
    limit = lengths[0] - 1
    with pytest.raises(LLMSetupError) as err:
        ReasoningEnv(
            train, test, tokenizer, lambda c, a, q: 0.0, TEMPLATE, batch_size=2,
            max_context_length=limit,
        )  # fmt: skip
    assert str(err.value) == (
        f"environment.dataset: train split row 0 {train[0]!r}: its prompt is {lengths[0]} "
        f"tokens (prompt_template included), more than network.max_context_length {limit}"
    )
    fits = ReasoningEnv(
        train, test, tokenizer, lambda c, a, q: 0.0, TEMPLATE, batch_size=2,
        max_context_length=max(lengths),
    )  # fmt: skip
    assert fits.next_batch().input_ids.shape[1] <= max(lengths)


#: Per kind: its spec (on rows.jsonl) and rows whose column ``huge`` gets oversized text.
OVERSIZED_KINDS = {
    "reasoning": (
        lambda: LLMReasoningEnvSpec(
            dataset="rows.jsonl",
            reward_file_path="reward.py",
            reward_fn_name="reward",
            prompt_template=TEMPLATE,
        ),
        ROWS,
        "question",
    ),
    "preference": (
        lambda: LLMPreferenceEnvSpec(dataset="rows.jsonl"),
        [{"prompt": f"count from {i}", "chosen": "1", "rejected": "2"} for i in range(20)],
        "chosen",
    ),
    "sft": (
        lambda: LLMSftEnvSpec(dataset="rows.jsonl"),
        [{"prompt": f"count from {i}", "response": f"{i + 1}"} for i in range(20)],
        "response",
    ),
}


def _oversized_env(tmp_path, tokenizer, kind: str, size: int, limit: int):
    """The ``kind`` environment built from rows.jsonl whose record 3 has ``size`` characters
    in its tokenized column."""
    spec, rows, huge = OVERSIZED_KINDS[kind]
    rows = [dict(row) for row in rows]
    rows[2][huge] = "x" * size
    _jsonl(tmp_path / "rows.jsonl", rows)
    _reward_file(tmp_path, "def reward(completion, answer, question):\n    return 0.0\n")
    return build_llm_env(
        spec(), tokenizer, batch_size=2, max_context_length=limit, seed=0, base_dir=tmp_path
    )


@pytest.mark.parametrize("kind", OVERSIZED_KINDS)
def test_a_record_too_long_for_the_context_is_refused_before_it_is_tokenized(
    tmp_path, tokenizer, monkeypatch, kind
):
    tokenized: list[int] = []

    def spy(name):
        real = getattr(type(tokenizer), name)

        def call(self, text, *args, **kwargs):
            tokenized.append(len(str(text)))
            return real(self, text, *args, **kwargs)

        monkeypatch.setattr(type(tokenizer), name, call)

    for name in ("__call__", "apply_chat_template"):
        spy(name)
    huge = OVERSIZED_KINDS[kind][2]
    with pytest.raises(LLMSetupError) as err:
        _oversized_env(tmp_path, tokenizer, kind, 3_000_000, limit=64)
    assert str(err.value) == (
        f"environment.dataset: rows.jsonl: record 3: {huge} is 3,000,000 characters; "
        "network.max_context_length 64 tokens hold at most 16,384 (256 characters a token), "
        "so it cannot fit (refused before it is tokenized): shorten or remove the record"
    )
    assert tokenized == []  # nothing was rendered or tokenized, the huge record least of all


@pytest.mark.parametrize("kind", OVERSIZED_KINDS)
def test_a_record_at_the_size_bound_is_built_as_before(tmp_path, tokenizer, kind):
    # 64 x 256 characters: one unknown word, one token of the tiny word-level tokenizer.
    env = _oversized_env(tmp_path, tokenizer, kind, 64 * 256, limit=64)
    assert len(env.train) + len(env.test) == 20


def test_chars_per_token_is_the_longest_vocabulary_entry_where_that_is_longer(tokenizer):
    assert chars_per_token(tokenizer) == MAX_CHARS_PER_TOKEN == 256
    long_entry = SimpleNamespace(get_vocab=lambda: {"a": 0, " " * 300: 1})
    assert chars_per_token(long_entry) == 300


@pytest.mark.parametrize(
    ("template", "written"),
    [
        ({"user_0": "{question[9999]}"}, "{question[9999]}"),
        ({"user_0": "{question.nope}"}, "{question.nope}"),
        ({"user_0": "{question.__class__.__mro__}"}, "{question.__class__.__mro__}"),
        ({"user_0": "Q: {0}"}, "{0}"),
        ({"user_0": "Q: {}"}, "{}"),
        ({"user_0": "{question!r}"}, "{question!r}"),
        ({"user_0": "{question:{answer}}"}, "{question:{answer}}"),
    ],
)
def test_a_template_placeholder_is_a_column_name_only(tmp_path, tokenizer, template, written):
    train, test = split_dataset(_table(tmp_path), 0.75, seed=0)
    with pytest.raises(LLMSetupError) as err:
        ReasoningEnv(train, test, tokenizer, lambda c, a, q: 0.0, template, batch_size=2)
    assert str(err.value) == (
        f"environment.prompt_template.user_0: {written}: a placeholder is a column name only "
        "(no attributes, indexes, conversions or format specs)"
    )


@pytest.mark.parametrize(
    ("row", "column", "what"),
    [
        ({"question": None, "answer": "a"}, "question", "null"),
        ({"question": "q", "answer": None}, "answer", "null"),
        ({"question": "q", "answer": "a", "topic": None}, "topic", "null"),
    ],
)
def test_a_null_value_in_a_column_read_is_refused_naming_the_row(
    tmp_path, tokenizer, row, column, what
):
    rows = [dict(ROWS[i], topic="t") for i in range(8)]
    train, test = split_dataset(_table(tmp_path, rows), 0.5, seed=0)
    bad = dict(train[1], **row)
    train = _with_row(train, 1, bad)
    template = {"user_0": "{topic}: {question}"}
    with pytest.raises(LLMSetupError) as err:
        ReasoningEnv(train, test, tokenizer, lambda c, a, q: 0.0, template, batch_size=2)
    assert str(err.value) == (
        f"environment.dataset: train split row 1 {train[1]!r}: {column} is {what}"
    )


def _with_row(split, i, row):
    from datasets import Dataset

    rows = split.to_list()
    rows[i] = row
    return Dataset.from_list(rows)


def test_a_question_that_is_not_text_is_refused(tmp_path, tokenizer):
    rows = [dict(row, question=row["id"]) for row in ROWS]  # numbers, not text
    train, test = split_dataset(_table(tmp_path, rows), 0.75, seed=0)
    with pytest.raises(LLMSetupError) as err:
        ReasoningEnv(train, test, tokenizer, lambda c, a, q: 0.0, TEMPLATE, batch_size=2)
    assert str(err.value) == (
        f"environment.dataset: train split row 0 {train[0]!r}: question is int, not text"
    )


@pytest.mark.parametrize("env_cls", [PreferenceEnv, SFTEnv])
def test_preference_and_sft_rows_need_text(tmp_path, tokenizer, env_cls):
    from datasets import Dataset

    row = {"prompt": "p", "chosen": "c", "rejected": "r", "response": "s"}
    train = Dataset.from_list([row, dict(row, prompt=None)])
    with pytest.raises(LLMSetupError) as err:
        env_cls(train, Dataset.from_list([row]), tokenizer, batch_size=1)
    assert str(err.value) == (
        f"environment.dataset: train split row 1 {train[1]!r}: prompt is null"
    )


def _check_sequences(tokenizer, seqs: TokenSequences, responses: list[str]) -> None:
    rows, width = seqs.input_ids.shape
    assert seqs.attention_mask.shape == (rows, width) and seqs.loss_mask.shape == (rows, width - 1)
    assert seqs.attention_mask[:, 0].all()  # right padding: every row starts at column 0
    for ids, mask, loss, response in zip(
        seqs.input_ids, seqs.attention_mask, seqs.loss_mask, responses, strict=True
    ):
        length = int(mask.sum())
        assert mask[:length].all() and (ids[length:] == tokenizer.pad_token_id).all()
        # The predictions that count are exactly those of the response and its <eos>.
        targets = ids[1:][loss]
        assert tokenizer.decode(targets) == f"{response} <eos>"
        first = int(loss.nonzero()[0])
        assert (
            not loss[:first].any()
            and loss[first : length - 1].all()
            and not loss[length - 1 :].any()
        )
        assert tokenizer.decode(ids[: first + 1]).split()[-1] == "<assistant>"


def test_preference_batches_mask_the_chosen_and_rejected_responses(tiny_llm, tokenizer):
    spec = LLMPreferenceEnvSpec(dataset="data/preference.jsonl")
    env = build_llm_env(
        spec, tokenizer, batch_size=4, max_context_length=None, seed=0, base_dir=tiny_llm
    )
    assert isinstance(env, PreferenceEnv)
    assert isinstance(env.next_batch(), PreferenceBatch)
    batch, rows = next(env.test_batches()), env.test.to_list()[:4]
    assert len(batch) == 4
    _check_sequences(tokenizer, batch.chosen, [row["chosen"] for row in rows])
    _check_sequences(tokenizer, batch.rejected, [row["rejected"] for row in rows])
    for chosen, row in zip(batch.chosen.input_ids, rows, strict=True):
        assert tokenizer.decode(chosen[:-2]) == f"<user> {row['prompt']} <eos> <assistant>"


def test_sft_batches_mask_the_response_and_respect_max_context_length(tiny_llm, tokenizer):
    spec = LLMSftEnvSpec(dataset="data/sft.jsonl")
    env = build_llm_env(
        spec, tokenizer, batch_size=3, max_context_length=None, seed=0, base_dir=tiny_llm
    )
    assert isinstance(env, SFTEnv)
    batch = next(env.test_batches())
    _check_sequences(tokenizer, batch, [row["response"] for row in env.test.to_list()[:3]])
    short = build_llm_env(
        spec, tokenizer, batch_size=3, max_context_length=8, seed=0, base_dir=tiny_llm
    )
    cut = next(short.test_batches())
    assert cut.input_ids.shape[1] == 8
    # The prompt (6 tokens) survives whole; the response keeps its first two tokens.
    assert cut.loss_mask.sum(dim=1).tolist() == [2, 2, 2]


def test_response_column_names_the_sft_target(tmp_path, tokenizer):
    rows = [{"prompt": f"count from {i}", "target": f"{i + 1}"} for i in range(10)]
    _jsonl(tmp_path / "sft.jsonl", rows)
    spec = LLMSftEnvSpec(dataset="sft.jsonl", response_column="target")
    env = build_llm_env(
        spec, tokenizer, batch_size=2, max_context_length=None, seed=0, base_dir=tmp_path
    )
    batch = env.next_batch()
    assert tokenizer.decode(batch.input_ids[0][1:][batch.loss_mask[0]]).split()[0].isdigit()
    with pytest.raises(LLMSetupError, match=r"no column 'response' .*environment\.columns renames"):
        build_llm_env(
            LLMSftEnvSpec(dataset="sft.jsonl"),
            tokenizer,
            batch_size=2,
            max_context_length=None,
            seed=0,
            base_dir=tmp_path,
        )


# ----------------------------------------------------------------------- epochs, state
def _ids(env) -> list[int]:
    return [row["id"] for row in env.next_batch().rows]


def test_epochs_cover_the_train_split_once_each_and_reshuffle_deterministically(
    tmp_path, tokenizer
):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=5)  # 15 train rows
    epochs = []
    for epoch in range(3):
        assert env.num_epochs == epoch
        epochs.append(sum((_ids(env) for _ in range(3)), []))
        assert sorted(epochs[-1]) == sorted(env.train["id"])
    assert env.num_epochs == 3
    assert epochs[0] != epochs[1] != epochs[2]
    twin = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=5)
    assert sum((_ids(twin) for _ in range(9)), []) == sum(epochs, [])
    other = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=5, seed=4)
    assert sum((_ids(other) for _ in range(3)), []) != epochs[0]


def test_a_batch_crossing_an_epoch_keeps_its_size(tmp_path, tokenizer):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=4)  # 15 rows
    sizes = [len(env.next_batch()) for _ in range(4)]
    assert sizes == [4, 4, 4, 4] and env.num_epochs == 1


def test_test_batches_walk_the_whole_test_split_in_order(tmp_path, tokenizer):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=2)
    batches = list(env.test_batches())
    assert [len(b) for b in batches] == [2, 2, 1]
    assert [row["id"] for b in batches for row in b.rows] == env.test["id"]
    assert [row["id"] for b in env.test_batches() for row in b.rows] == env.test["id"]


def test_state_dict_round_trip_resumes_at_the_same_batch(tmp_path, tokenizer):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=4)
    for _ in range(5):
        env.next_batch()
    state = json.loads(json.dumps(env.state_dict()))  # plain JSON: a run checkpoint holds it
    expected = [_ids(env) for _ in range(4)]
    resumed = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0, batch_size=4, seed=99)
    resumed.load_state_dict(state)
    assert resumed.num_epochs == 1
    assert [_ids(resumed) for _ in range(4)] == expected


def test_load_state_dict_refuses_a_state_of_a_larger_dataset(tmp_path, tokenizer):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 0.0)
    with pytest.raises(ValueError, match="position 40 is past the train split"):
        env.load_state_dict({"seed": 1, "epoch": 0, "position": 40})


# ----------------------------------------------------------------------------- rewards
def test_rewards_are_one_row_per_prompt_one_column_per_completion(tmp_path, tokenizer):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: float(c == a), batch_size=2)
    batch = env.next_batch()
    answers = [row["answer"] for row in batch.rows]
    scores = env.rewards(batch, _completions([answers[0], "x", "y", answers[1]], 2))
    assert scores.dtype == torch.float32
    assert scores.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ValueError, match="3 completions for 2 prompts of group size 2"):
        env.rewards(batch, _completions(["a", "b", "c"], 2))


def test_max_reward_is_enforced(tmp_path, tokenizer):
    env = _reasoning_env(tmp_path, tokenizer, lambda c, a, q: 2.0, max_reward=1.0)
    batch = env.next_batch()
    assert env.max_reward == 1.0
    with pytest.raises(
        RewardError, match=r"returned 2\.0 for question .*above environment\.max_reward 1\.0"
    ):
        env.rewards(batch, _completions(["a"] * len(batch), 1))


def test_build_llm_env_builds_a_reasoning_env_from_its_spec(tiny_llm, tokenizer):
    spec = LLMReasoningEnvSpec(
        dataset="data/reasoning.jsonl",
        reward_file_path="reward.py",
        reward_fn_name="reward",
        prompt_template=TEMPLATE,
        train_test_split=0.75,
    )
    env = build_llm_env(
        spec, tokenizer, batch_size=8, max_context_length=None, seed=0, base_dir=tiny_llm
    )
    assert isinstance(env, ReasoningEnv) and (len(env.train), len(env.test)) == (192, 64)
    batch = env.next_batch()
    answer = batch.rows[0]["answer"]
    assert env.rewards(batch, _completions([answer] * 8, 1))[0, 0] == 1.0


def test_build_llm_env_refuses_an_unknown_env_type(tokenizer):
    with pytest.raises(LLMSetupError, match=r"environment\.env_type: 'dialogue' is not an LLM"):
        build_llm_env(
            SimpleNamespace(env_type="dialogue"),
            tokenizer,
            batch_size=1,
            max_context_length=None,
            seed=0,
            base_dir=None,
        )


def test_build_llm_env_refuses_a_gem_multiturn_env_naming_the_field(tokenizer):
    with pytest.raises(LLMSetupError, match=r"environment\.env_name: 'game:X' is a GEM"):
        build_llm_env(
            SimpleNamespace(env_type="multiturn", env_name="game:X"),
            tokenizer,
            batch_size=1,
            max_context_length=None,
            seed=0,
            base_dir=None,
        )


# ----------------------------------------------------------------- reward-file refusals
def _reward_file(tmp_path, body: str) -> Path:
    path = tmp_path / "reward.py"
    path.write_text(body)
    return path


def test_a_relative_reward_file_resolves_against_the_manifest_directory(tmp_path):
    _reward_file(tmp_path, "def score(completion, answer, question):\n    return 1\n")
    fn = load_reward_fn("reward.py", "score", base_dir=tmp_path)
    assert fn("x", "y", "z") == 1.0 and isinstance(fn("x", "y", "z"), float)


def test_a_missing_reward_file_names_the_file_and_the_function(tmp_path):
    with pytest.raises(
        LLMSetupError,
        match=r"^environment\.reward_file_path: reward\.py \(relative to .*\): no such file \(it should define score\)",
    ):
        load_reward_fn("reward.py", "score", base_dir=tmp_path)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "def other(c, a, q):\n    return 0\n",
            r"^environment\.reward_fn_name: .*reward\.py defines no 'score' \(its functions: other\)",
        ),
        (
            "score = 3\n",
            r"^environment\.reward_fn_name: .*reward\.py: score is not callable \(it is of type int\)",
        ),
        (
            "def score(completion, answer):\n    return 0\n",
            r"score\(completion, answer\) cannot be called as score\(completion, answer, question\)",
        ),
        (
            "def score(completion, *, answer, question):\n    return 0\n",
            r"cannot be called as score\(completion, answer, question\)",
        ),
        (
            "def score(c, a, q)\n    return 0\n",
            r"^environment\.reward_file_path: .*reward\.py:1:\d+: syntax error",
        ),
        (
            "raise RuntimeError('no GPU')\n",
            r"^environment\.reward_file_path: .*reward\.py: importing it raised RuntimeError: no GPU",
        ),
    ],
    ids=[
        "missing-function",
        "not-callable",
        "too-few-parameters",
        "keyword-only",
        "syntax-error",
        "import-raises",
    ],
)
def test_reward_file_refusals_name_the_file_and_the_function(tmp_path, body, message):
    _reward_file(tmp_path, body)
    with pytest.raises(LLMSetupError, match=message):
        load_reward_fn(tmp_path / "reward.py", "score")


def test_flexible_signatures_and_numeric_types_are_accepted(tmp_path):
    _reward_file(
        tmp_path,
        "import numpy as np\n"
        "def score(*args):\n    return np.float32(0.25)\n"
        "def extra(completion, answer, question, scale=2):\n    return scale\n",
    )
    assert load_reward_fn(tmp_path / "reward.py", "score")("a", "b", "c") == 0.25
    assert load_reward_fn(tmp_path / "reward.py", "extra")("a", "b", "c") == 2.0


def test_a_reward_function_that_raises_names_the_file_the_function_and_the_sample(tmp_path):
    path = _reward_file(tmp_path, "def score(completion, answer, question):\n    return 1 / 0\n")
    fn = load_reward_fn(path, "score")
    with pytest.raises(RewardError) as err:
        fn("blue red", "blue", "what colour is the sky ?")
    message = str(err.value)
    assert message.startswith(f"{path}: score(completion='blue red'")
    assert "question='what colour is the sky ?'" in message
    assert message.endswith("raised ZeroDivisionError: division by zero")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("'high'", r"returned 'high' \(str\), not a number"),
        ("None", r"returned None \(NoneType\)"),
        ("True", r"returned True \(bool\), not a number"),
        ("float('nan')", r"returned nan, not a finite number"),
    ],
    ids=["str", "none", "bool", "nan"],
)
def test_a_reward_function_returning_no_number_is_an_error_naming_the_sample(
    tmp_path, value, message
):
    path = _reward_file(tmp_path, f"def score(completion, answer, question):\n    return {value}\n")
    with pytest.raises(
        RewardError, match=rf"score\(completion='x', answer=\.\.\., question='q'\) {message}"
    ):
        load_reward_fn(path, "score")("x", "a", "q")


def test_a_reward_error_during_training_names_the_sample(tmp_path, tokenizer):
    path = _reward_file(
        tmp_path, "def score(completion, answer, question):\n    raise KeyError(answer)\n"
    )
    env = _reasoning_env(tmp_path, tokenizer, load_reward_fn(path, "score"), batch_size=1)
    batch = env.next_batch()
    with pytest.raises(
        RewardError, match=rf"score\(completion='blue', .*question={batch.rows[0]['question']!r}"
    ):
        env.rewards(batch, _completions(["blue"], 1))


def test_a_reward_beyond_float32_is_refused_naming_the_sample(tmp_path):
    path = _reward_file(tmp_path, "def score(completion, answer, question):\n    return 1e308\n")
    with pytest.raises(RewardError) as err:
        load_reward_fn(path, "score")("x", "a", "q")
    assert str(err.value) == (
        f"{path}: score(completion='x', answer=..., question='q') returned 1e+308, beyond the "
        "float32 range of rewards (magnitude at most 3.403e+38)"
    )


def test_a_reward_function_that_never_returns_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "0.3")
    path = _reward_file(
        tmp_path,
        "def score(completion, answer, question):\n"
        "    while True:\n"
        "        try:\n"
        "            pass\n"
        "        except Exception:\n"
        "            pass\n",
    )
    with pytest.raises(UserCodeError) as err:
        load_reward_fn(path, "score")("x", "a", "q")
    assert str(err.value) == (
        f"environment.reward_fn_name {path}:score ran longer than the 0.3 s "
        f"time limit for user code and was stopped (set {ENV_VAR} to change it)"
    )


def test_a_reward_file_that_sleeps_at_import_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "0.3")
    path = _reward_file(
        tmp_path, "import time\ntime.sleep(600)\ndef score(c, a, q):\n    return 1\n"
    )
    with pytest.raises(UserCodeError) as err:
        load_reward_fn(path, "score")
    assert str(err.value) == (
        f"environment.reward_file_path {path} ran longer than the 0.3 s time "
        f"limit for user code and was stopped (set {ENV_VAR} to change it)"
    )


def test_the_split_generator_is_the_tables_not_numpys_global(tmp_path):
    np.random.seed(0)
    first, _ = split_dataset(_table(tmp_path), 0.75, seed=5)
    np.random.seed(1)
    second, _ = split_dataset(_table(tmp_path), 0.75, seed=5)
    assert first["id"] == second["id"]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
@pytest.mark.parametrize("chunk", [5, 1 << 20], ids=["small-chunks", "one-chunk"])
def test_a_dataset_that_is_not_utf8_is_refused_naming_line_and_byte(
    tmp_path, monkeypatch, suffix, chunk
):
    import agilerl.families.llm.environments as environments

    monkeypatch.setattr(environments, "UTF8_CHUNK_BYTES", chunk)
    good = '{"question": "q\u00e9", "answer": "a"}\n' if suffix == ".jsonl" else "q\u00e9,a\n"
    head = "" if suffix == ".jsonl" else "question,answer\n"
    data = (head + good * 3).encode() + b"\xc3(" + good.encode()
    path = tmp_path / f"rows{suffix}"
    path.write_bytes(data)
    with pytest.raises(LLMSetupError) as err:
        load_table(path, field="environment.dataset")
    offset = data.index(b"\xc3(")
    line = data[:offset].count(b"\n") + 1
    assert str(err.value) == (
        f"environment.dataset: {path}:{line}: not UTF-8 text (byte 0xc3 at offset {offset})"
    )
