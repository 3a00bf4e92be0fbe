"""LLM environments over datasets: prompts for GRPO (scored by the manifest's reward
function), preference pairs for DPO, prompt/response pairs for SFT.

Tables load through Hugging Face ``datasets``, held in memory: a local path (JSON lines,
JSON, CSV, Parquet, or a directory of such files) with the loader's cache in a temporary
directory that is removed at once, so nothing is left behind; or a hub dataset id (the
rule: :mod:`agilerl.llm.hub`), whose ``train`` split is read from the datasets cache,
fetched first unless downloads are off. The table is split once, seeded, into a train and a test split; training batches
only ever come from the train split, so no answer of the test split can reach a training
reward.

Batching: each epoch walks a permutation of the train split drawn from ``(seed, epoch)``,
so the position in the data is two integers (:meth:`state_dict`) and a resumed run draws
exactly the batches the interrupted one would have. Batches keep their size across an
epoch boundary (the last rows of an epoch and the first of the next). Test batches follow
the test split's order.
"""

from __future__ import annotations

import codecs
import re
import string
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agilerl.families.llm.rendering import pad as _pad
from agilerl.families.llm.rendering import prompt_ids as _prompt_ids
from agilerl.families.llm.rendering import render_messages
from agilerl.llm.batches import PreferenceBatch, PromptBatch, SFTBatch, TokenSequences
from agilerl.llm.data_parallel import DataParallel
from agilerl.llm.hub import (
    DATA_FILE_BUILDERS,
    HubError,
    hub_dataset,
    hub_id,
    local_path,
    not_found,
)
from agilerl.llm.models import LLMSetupError
from agilerl.llm.rewards import RewardError, load_reward_fn

if TYPE_CHECKING:
    from datasets import Dataset

    from agilerl.llm.batches import Completions

DATASET_FIELD = "environment.dataset"
TEMPLATE_FIELD = "environment.prompt_template"
#: Builders of text files, whose bytes must be UTF-8.
TEXT_BUILDERS = frozenset({"json", "csv"})
#: Bytes read at a time when a text file's encoding is checked.
UTF8_CHUNK_BYTES = 1 << 20
#: A prompt template key: the message's role and its position in the conversation.
#: How much of a row an error message quotes.
QUOTE_CHARS = 200
#: Rows rendered and tokenized at a time when prompt lengths are checked.
PROMPT_CHECK_ROWS = 256
#: Characters one token is taken to stand for, at most, when a value's size is checked
#: before anything is tokenized (:func:`check_text_sizes`); the tokenizer's longest
#: vocabulary entry where that is longer (:func:`chars_per_token`). Why it is safe: a
#: subword token (byte-level BPE, SentencePiece) spells one vocabulary entry, so it stands
#: for at most as many characters as that entry has (a byte-level entry spells each byte
#: as one character, and a character is at least one byte); and text averages 3 to 5
#: characters a token. A value longer than ``max_context_length`` times this many
#: characters is longer than the context: refused, without the minutes and gigabytes
#: that tokenizing megabytes of text takes. (A word-level tokenizer, which makes one
#: unknown token of an unknown word of any length, could fit such a value; it would be
#: trained on as that one token.)
MAX_CHARS_PER_TOKEN = 256
MESSAGE_KEY = re.compile(r"^(?P<role>[a-z]+)_(?P<position>\d+)$")
#: A template placeholder is a column name and nothing else: ``str.format`` would follow
#: ``{question.__class__}`` or ``{question[0]}`` into the value's attributes and items,
#: and ``{}`` / ``{0}`` into positional arguments there are none of.
NOT_PLAIN = re.compile(r"^$|^\d+$|[.\[\]]")


# ---------------------------------------------------------------------------- tables
def _data_files(path: Path, field: str) -> tuple[str, list[str]]:
    """The builder and the files of a dataset file or directory."""
    if path.is_dir():
        files = sorted(
            p for p in path.iterdir() if p.is_file() and p.suffix.lower() in DATA_FILE_BUILDERS
        )
        if not files:
            raise LLMSetupError(
                f"{field}: {path} holds no dataset file ({', '.join(DATA_FILE_BUILDERS)})"
            )
    else:
        files = [path]
    if any(p.suffix.lower() not in DATA_FILE_BUILDERS for p in files):
        raise LLMSetupError(
            f"{field}: {path}: unknown dataset format {path.suffix!r} "
            f"(known: {', '.join(DATA_FILE_BUILDERS)})"
        )
    builders = {DATA_FILE_BUILDERS[p.suffix.lower()] for p in files}
    if len(builders) > 1:
        raise LLMSetupError(
            f"{field}: {path} mixes dataset formats ({', '.join(sorted(builders))}); "
            "a directory must hold files of one format"
        )
    return builders.pop(), [str(p) for p in files]


def check_utf8(path: Path, field: str) -> None:
    """Refuse a text dataset file that is not UTF-8, naming its line and byte. pyarrow's
    JSON reader takes such bytes into its strings and fails only when a row is read, in
    the middle of a run. Read in chunks: memory stays bounded whatever the file's size."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line = 0, 1
    with path.open("rb") as handle:
        while True:
            chunk = handle.read(UTF8_CHUNK_BYTES)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as err:
                # The decoder may hold back up to 3 bytes of the previous chunk (the start
                # of a character, never a newline): ``bad`` is then negative.
                bad = err.start - (len(err.object) - len(chunk))
                byte, line = err.object[err.start], line + chunk[: max(bad, 0)].count(b"\n")
                raise LLMSetupError(
                    f"{field}: {path}:{line}: not UTF-8 text "
                    f"(byte 0x{byte:02x} at offset {offset + bad})"
                ) from None
            if not chunk:
                return
            offset += len(chunk)
            line += chunk.count(b"\n")


def _columns_field(field: str) -> str:
    return field.rpartition(".")[0] + ".columns" if "." in field else "columns"


def load_table(
    path: str | Path,
    *,
    field: str = DATASET_FIELD,
    base_dir: Path | None = None,
    columns: dict[str, str] | None = None,
) -> Dataset:
    """The dataset ``path`` names: a local path (relative to ``base_dir`` when relative)
    or a hub dataset id; its columns renamed by ``columns`` (dataset name -> name the
    environment expects)."""
    repo = hub_id(path, base_dir, tuple(DATA_FILE_BUILDERS))
    if repo is None:
        where, table = _local_table(path, field, base_dir)
    else:
        try:
            where, table = repo, hub_dataset(repo)
        except HubError as err:
            raise LLMSetupError(not_found(field, path, base_dir, "dataset", err)) from None
    if columns:
        missing = sorted(set(columns) - set(table.column_names))
        if missing:
            raise LLMSetupError(
                f"{_columns_field(field)}: {where} has no column {', '.join(map(repr, missing))} "
                f"to rename (its columns: {', '.join(table.column_names)})"
            )
        table = table.rename_columns(dict(columns))
    return table


def _local_table(path: str | Path, field: str, base_dir: Path | None) -> tuple[Path, Dataset]:
    """The local dataset file or directory ``path`` and the table it holds."""
    import datasets

    where = local_path(path, base_dir)
    if not where.exists():
        relative = f" (relative to {base_dir})" if base_dir is not None else ""
        raise LLMSetupError(
            f"{field}: {path}{relative} does not exist; a name written as a path (starting "
            "with /, ./, ../ or ~) or ending in a data file suffix is a local file, never a "
            "hub id"
        )
    builder, files = _data_files(where, field)
    if builder in TEXT_BUILDERS:
        for file in files:
            check_utf8(Path(file), field)
    progress = datasets.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()
    try:
        with tempfile.TemporaryDirectory(prefix="agilerl-datasets-") as cache:
            table = datasets.load_dataset(
                builder, data_files=files, split="train", cache_dir=cache, keep_in_memory=True
            )
    except Exception as err:  # the loader's parse errors come in many types
        cause = err.__cause__ or err
        raise LLMSetupError(
            f"{field}: {where}: cannot be read as {builder}: {type(cause).__name__}: {cause}"
        ) from None
    finally:
        if progress:
            datasets.utils.logging.enable_progress_bar()
    return where, table


def require_columns(table: Dataset, names: list[str], where: str) -> None:
    """Refuse a table that lacks a column the environment reads."""
    missing = [name for name in names if name not in table.column_names]
    if missing:
        raise LLMSetupError(
            f"{where}: the dataset has no column {', '.join(map(repr, missing))} (its columns: "
            f"{', '.join(table.column_names)}; environment.columns renames them)"
        )


def split_dataset(table: Dataset, train_fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """Seeded train/test split; both splits must hold at least one row (fitness is
    measured on the test split)."""
    held_out = 1.0 - train_fraction
    test_rows = int(np.ceil(held_out * len(table) - 1e-9))
    if test_rows < 1 or test_rows >= len(table):
        raise LLMSetupError(
            f"environment.train_test_split: {train_fraction} of {len(table)} rows leaves "
            f"{len(table) - test_rows} for training and {test_rows} for testing; both "
            "splits need at least one row (agents are compared on the test split)"
        )
    parts = table.train_test_split(test_size=test_rows, seed=seed, keep_in_memory=True)
    return parts["train"], parts["test"]


# ----------------------------------------------------------------------- rendering
def parse_template(template: dict[str, str], columns: list[str]) -> list[tuple[str, str]]:
    """``{"<role>_<position>": text}`` as (role, text) messages in position order; a
    key of another form, two messages at one position, or a placeholder naming no
    column is refused naming the key."""
    messages: dict[int, tuple[str, str]] = {}
    for key, text in template.items():
        match = MESSAGE_KEY.match(key)
        if match is None:
            raise LLMSetupError(
                f"{TEMPLATE_FIELD}.{key}: keys are <role>_<position>, e.g. system_0, user_1"
            )
        position = int(match["position"])
        if position in messages:
            raise LLMSetupError(
                f"{TEMPLATE_FIELD}.{key}: position {position} is also "
                f"{messages[position][0]}_{position}; each position holds one message"
            )
        try:
            placeholders = [
                (name, conversion, spec)
                for _, name, spec, conversion in string.Formatter().parse(text)
                if name is not None
            ]
        except ValueError as err:
            raise LLMSetupError(
                f"{TEMPLATE_FIELD}.{key}: {err} (write {{{{ and }}}} for literal braces)"
            ) from None
        for name, conversion, spec in placeholders:
            if NOT_PLAIN.search(name) or conversion or spec:
                written = (
                    name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
                )
                raise LLMSetupError(
                    f"{TEMPLATE_FIELD}.{key}: {{{written}}}: a placeholder is a column name "
                    "only (no attributes, indexes, conversions or format specs)"
                )
            if name not in columns:
                column = name
                raise LLMSetupError(
                    f"{TEMPLATE_FIELD}.{key}: {{{column}}} names no column of the dataset "
                    f"(its columns: {', '.join(columns)})"
                )
        messages[position] = (match["role"], text)
    if not messages:
        raise LLMSetupError(f"{TEMPLATE_FIELD}: holds no message")
    return [messages[position] for position in sorted(messages)]


def _placeholders(text: str) -> list[str]:
    """The column names a (parsed, checked) template text fills in."""
    return [name for _, name, _, _ in string.Formatter().parse(text) if name]


def template_columns(messages: list[tuple[str, str]]) -> tuple[str, ...]:
    """The columns a parsed template (:func:`parse_template`) renders, sorted."""
    return tuple(sorted({name for _, text in messages for name in _placeholders(text)}))


def chars_per_token(tokenizer: Any) -> int:
    """The most characters one token of ``tokenizer`` is taken to stand for
    (:data:`MAX_CHARS_PER_TOKEN`, or its longest vocabulary entry where that is longer)."""
    return max(MAX_CHARS_PER_TOKEN, max(map(len, tokenizer.get_vocab()), default=0))


def check_text_sizes(
    table: Dataset, columns: tuple[str, ...], where: str, limit: int, per_token: int
) -> None:
    """Refuse a record whose value in one of ``columns`` (text the environment tokenizes)
    has more than ``limit`` x ``per_token`` characters, so cannot fit in ``limit`` tokens
    (:data:`MAX_CHARS_PER_TOKEN`), before anything is tokenized. The record is named by
    its number in the dataset ``where`` names, counting from 1 (a directory's files in
    name order), before the table is split."""
    most = limit * per_token
    for name in columns:
        if name not in table.column_names:
            continue  # the environment refuses the missing column, naming it
        for i, value in enumerate(table[name]):
            size = len(str(value))  # what rendering writes, before it is tokenized
            if size > most:
                raise LLMSetupError(
                    f"{where}: record {i + 1}: {name} is {size:,} characters; "
                    f"network.max_context_length {limit} tokens hold at most {most:,} "
                    f"({per_token} characters a token), so it cannot fit (refused before "
                    "it is tokenized): shorten or remove the record"
                )


def _sequences(
    tokenizer: Any, prompts: list[list[int]], responses: list[str], limit: int | None
) -> TokenSequences:
    """Prompt + response (+ end of sequence) rows, right-padded, the loss on the response.

    Past ``limit`` tokens the prompt keeps its end (at most ``limit - 1`` tokens) and the
    response its start, so every row keeps at least one response token to learn from."""
    rows, starts = [], []
    for prompt, response in zip(prompts, responses, strict=True):
        answer = [
            *tokenizer(response, add_special_tokens=False)["input_ids"],
            tokenizer.eos_token_id,
        ]
        if limit:
            prompt = prompt[-(limit - 1) :] if limit > 1 else []
            answer = answer[: limit - len(prompt)]
        rows.append(prompt + answer)
        starts.append(len(prompt))
    ids, mask = _pad(rows, tokenizer.pad_token_id, left=False)
    # Prediction t (logits[:, t]) is of token t + 1: a response token when t + 1 >= start.
    positions = torch.arange(ids.shape[1] - 1).unsqueeze(0) + 1
    start = torch.tensor(starts).unsqueeze(1)
    loss_mask = (positions >= start) & mask[:, 1:].bool()
    return TokenSequences(input_ids=ids, attention_mask=mask, loss_mask=loss_mask)


# ----------------------------------------------------------------------- environments
def _quote(row: dict[str, Any]) -> str:
    text = repr(row)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "...}"


def check_values(
    splits: dict[str, Dataset], columns: tuple[str, ...], text: tuple[str, ...]
) -> None:
    """Refuse a row whose value in one of ``columns`` is null, or in one of ``text``
    (rendered as prompt or response text) is not a string: ``str(None)`` would train on
    the prompt "None". The row is named by its split and position, and quoted."""
    for split_name, split in splits.items():
        for name in columns:
            values = split[name]
            for i, value in enumerate(values):
                if value is None or (name in text and not isinstance(value, str)):
                    what = "null" if value is None else f"{type(value).__name__}, not text"
                    raise LLMSetupError(
                        f"{DATASET_FIELD}: {split_name} split row {i} {_quote(split[i])}: "
                        f"{name} is {what}"
                    )


class _DatasetEnv:
    """Seeded, resumable batches over a train split, and the test split in order."""

    #: Columns every row must have, by environment.
    required: tuple[str, ...] = ()
    #: Columns rendered as text (strings only).
    text: tuple[str, ...] = ()

    def __init__(
        self,
        train: Dataset,
        test: Dataset,
        tokenizer: Any,
        *,
        batch_size: int,
        max_context_length: int | None = None,
        seed: int = 42,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if len(train) == 0 or len(test) == 0:
            raise LLMSetupError("environment: the train and the test split both need rows")
        if tokenizer.pad_token_id is None:
            raise LLMSetupError("the tokenizer has no pad token (load it with load_tokenizer)")
        for split in (train, test):
            require_columns(split, list(self.required), "environment")
        check_values({"train": train, "test": test}, self.required, self.text)
        self.train, self.test, self.tokenizer = train, test, tokenizer
        self.batch_size, self.max_context_length, self.seed = batch_size, max_context_length, seed
        self.num_epochs, self._position = 0, 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.train))

    def _take(self) -> list[int]:
        taken: list[int] = []
        while len(taken) < self.batch_size:
            end = min(len(self._order), self._position + self.batch_size - len(taken))
            taken.extend(int(i) for i in self._order[self._position : end])
            self._position = end
            if self._position == len(self._order):  # an epoch is done: reshuffle
                self.num_epochs += 1
                self._order, self._position = self._permutation(self.num_epochs), 0
        return taken

    def _batch(self, rows: list[dict[str, Any]], first_row: int) -> Any:
        """The batch of ``rows``, the first of which is row ``first_row`` of its global
        batch."""
        raise NotImplementedError

    def next_batch(self) -> Any:
        """The next training batch (train split only): this process's share of it when
        the run is data-parallel (every process draws the same global batch)."""
        taken = self._take()
        share = DataParallel.current().share(len(taken), "batch_size")
        return self._batch(self.train.select(taken[share]).to_list(), share.start)

    def test_batches(self) -> Iterator[Any]:
        """The whole test split, in its order, ``batch_size`` rows at a time; this
        process's share of each when the run is data-parallel (a process whose share
        of a batch is empty skips it; the algorithms sum what they count over the
        processes)."""
        dp = DataParallel.current()
        for start in range(0, len(self.test), self.batch_size):
            end = min(start + self.batch_size, len(self.test))
            share = dp.split(end - start)
            if share.stop > share.start:
                rows = range(start + share.start, start + share.stop)
                yield self._batch(self.test.select(rows).to_list(), share.start)

    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "epoch": self.num_epochs, "position": self._position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if int(state["position"]) > len(self.train):
            raise ValueError(
                f"environment state: position {state['position']} is past the train split "
                f"({len(self.train)} rows); the state is from another dataset"
            )
        self.seed, self.num_epochs = int(state["seed"]), int(state["epoch"])
        self._order, self._position = self._permutation(self.num_epochs), int(state["position"])

    def _render(self, messages: list[tuple[str, str]], row: dict[str, Any]) -> str:
        filled = [{"role": role, "content": text.format_map(row)} for role, text in messages]
        return render_messages(self.tokenizer, filled)


class ReasoningEnv(_DatasetEnv):
    """GRPO: prompts rendered from ``prompt_template``, completions scored by
    ``reward_fn(completion, row["answer"], row["question"])``."""

    required = ("question", "answer")
    text = ("question",)

    def __init__(
        self,
        train: Dataset,
        test: Dataset,
        tokenizer: Any,
        reward_fn: Callable[[str, Any, Any], float],
        prompt_template: dict[str, str],
        *,
        batch_size: int,
        max_context_length: int | None = None,
        seed: int = 42,
        max_reward: float | None = None,
    ) -> None:
        super().__init__(
            train,
            test,
            tokenizer,
            batch_size=batch_size,
            max_context_length=max_context_length,
            seed=seed,
        )
        self.messages = parse_template(prompt_template, train.column_names)
        self.reward_fn, self.max_reward = reward_fn, max_reward
        check_values({"train": train, "test": test}, template_columns(self.messages), self.text)
        if max_context_length:
            for name, split in (("train", train), ("test", test)):
                self._check_prompt_lengths(name, split, max_context_length)

    def _check_prompt_lengths(self, name: str, split: Dataset, limit: int) -> None:
        """Refuse a prompt (template and row, rendered) longer than ``limit`` tokens: cut,
        it would lose the template's start or the question's, and train on the rest."""
        for start in range(0, len(split), PROMPT_CHECK_ROWS):
            rows = split.select(range(start, min(start + PROMPT_CHECK_ROWS, len(split)))).to_list()
            ids = _prompt_ids(self.tokenizer, [self._render(self.messages, row) for row in rows])
            for i, row_ids in enumerate(ids):
                if len(row_ids) > limit:
                    raise LLMSetupError(
                        f"{DATASET_FIELD}: {name} split row {start + i} {_quote(rows[i])}: its "
                        f"prompt is {len(row_ids)} tokens (prompt_template included), more "
                        f"than network.max_context_length {limit}"
                    )

    def _batch(self, rows: list[dict[str, Any]], first_row: int) -> PromptBatch:
        texts = [self._render(self.messages, row) for row in rows]
        ids = _prompt_ids(self.tokenizer, texts)  # lengths checked at construction
        input_ids, attention_mask = _pad(ids, self.tokenizer.pad_token_id, left=True)
        return PromptBatch(
            input_ids=input_ids,
            attention_mask=attention_mask,
            texts=texts,
            rows=rows,
            first_row=first_row,
        )

    def test_rewards(self, agent: Any) -> Iterator[torch.Tensor]:
        """The rewards of ``agent``'s greedy completions of this process's share of the
        test split, a batch at a time (``agent.test`` averages them)."""
        for prompts in self.test_batches():
            yield self.rewards(prompts, agent.get_action(prompts, training=False))

    def rewards(self, prompts: PromptBatch, completions: Completions) -> torch.Tensor:
        """``[B, G]`` rewards of the ``group_size`` completions of each prompt."""
        group = completions.group_size
        if len(completions.texts) != len(prompts.rows) * group:
            raise ValueError(
                f"{len(completions.texts)} completions for {len(prompts.rows)} prompts "
                f"of group size {group}"
            )
        scores = torch.empty((len(prompts.rows), group), dtype=torch.float32)
        for b, row in enumerate(prompts.rows):
            for g in range(group):
                value = self.reward_fn(
                    completions.texts[b * group + g], row["answer"], row["question"]
                )
                if self.max_reward is not None and value > self.max_reward + 1e-9:
                    raise RewardError(
                        f"{self.reward_fn!r} returned {value} for question "
                        f"{row['question']!r}, above environment.max_reward {self.max_reward}"
                    )
                scores[b, g] = value
        return scores


class PreferenceEnv(_DatasetEnv):
    """DPO: the prompt (a user message) with its chosen and its rejected response."""

    required = ("prompt", "chosen", "rejected")
    text = required

    def _batch(self, rows: list[dict[str, Any]], first_row: int) -> PreferenceBatch:
        prompts = _prompt_ids(
            self.tokenizer, [self._render([("user", "{prompt}")], row) for row in rows]
        )
        limit = self.max_context_length
        return PreferenceBatch(
            chosen=_sequences(self.tokenizer, prompts, [str(r["chosen"]) for r in rows], limit),
            rejected=_sequences(self.tokenizer, prompts, [str(r["rejected"]) for r in rows], limit),
        )


class SFTEnv(_DatasetEnv):
    """SFT: the prompt (a user message) followed by the target response."""

    def __init__(
        self,
        train: Dataset,
        test: Dataset,
        tokenizer: Any,
        *,
        response_column: str = "response",
        batch_size: int,
        max_context_length: int | None = None,
        seed: int = 42,
    ) -> None:
        self.response_column = response_column
        self.required = self.text = ("prompt", response_column)
        super().__init__(
            train,
            test,
            tokenizer,
            batch_size=batch_size,
            max_context_length=max_context_length,
            seed=seed,
        )

    def _batch(self, rows: list[dict[str, Any]], first_row: int) -> SFTBatch:
        prompts = _prompt_ids(
            self.tokenizer, [self._render([("user", "{prompt}")], row) for row in rows]
        )
        responses = [str(row[self.response_column]) for row in rows]
        return _sequences(self.tokenizer, prompts, responses, self.max_context_length)


# ----------------------------------------------------------------------- from a spec
def _table(spec: Any, base_dir: Path | None) -> Dataset:
    return load_table(spec.dataset, base_dir=base_dir, columns=spec.columns)


def _splits(
    spec: Any, table: Dataset, tokenizer: Any, columns: tuple[str, ...], common: dict[str, Any]
) -> tuple[Dataset, Dataset]:
    """The table's seeded train and test splits, once no record's value in ``columns``
    (the text the environment tokenizes) is too long to tokenize."""
    limit = common["max_context_length"]
    if limit:
        where = f"{DATASET_FIELD}: {spec.dataset}"
        check_text_sizes(table, columns, where, limit, chars_per_token(tokenizer))
    return split_dataset(table, spec.train_test_split, common["seed"])


def _reasoning(spec: Any, tokenizer: Any, base_dir: Path | None, **common: Any) -> ReasoningEnv:
    table, template = _table(spec, base_dir), dict(spec.prompt_template)
    rendered = template_columns(parse_template(template, table.column_names))
    train, test = _splits(spec, table, tokenizer, rendered, common)
    reward_fn = load_reward_fn(spec.reward_file_path, spec.reward_fn_name, base_dir=base_dir)
    return ReasoningEnv(
        train, test, tokenizer, reward_fn, template, max_reward=spec.max_reward, **common
    )


def _preference(spec: Any, tokenizer: Any, base_dir: Path | None, **common: Any) -> PreferenceEnv:
    train, test = _splits(spec, _table(spec, base_dir), tokenizer, PreferenceEnv.text, common)
    return PreferenceEnv(train, test, tokenizer, **common)


def _sft(spec: Any, tokenizer: Any, base_dir: Path | None, **common: Any) -> SFTEnv:
    texts = ("prompt", spec.response_column)
    train, test = _splits(spec, _table(spec, base_dir), tokenizer, texts, common)
    return SFTEnv(train, test, tokenizer, response_column=spec.response_column, **common)


def _multiturn(spec: Any, tokenizer: Any, base_dir: Path | None, **common: Any) -> Any:
    """The rollout over the environment ``entrypoint`` makes (``env_config`` its keyword
    arguments; :mod:`agilerl.families.llm.multiturn`)."""
    from agilerl.families.environments import EnvironmentSpecError, import_target
    from agilerl.families.llm.multiturn import MultiTurnEpisodes

    where = "environment.entrypoint"
    try:
        target = import_target(spec.entrypoint, where, None if base_dir is None else str(base_dir))
    except EnvironmentSpecError as err:
        raise LLMSetupError(str(err)) from None
    if not callable(target):
        raise LLMSetupError(
            f"{where}: {spec.entrypoint} is a {type(target).__name__}, not a class or factory"
        )
    config = dict(spec.env_config or {})
    return MultiTurnEpisodes(
        lambda: target(**config),
        tokenizer,
        batch_size=common["batch_size"],
        max_turns=spec.max_turns,
        max_reward=spec.max_reward,
        seed=common["seed"],
        name=f"{where} {spec.entrypoint}",
    )


#: How each ``env_type`` of an LLM environment spec becomes an environment: (spec,
#: tokenizer, the manifest's directory, batch_size / max_context_length / seed).
ENV_BUILDERS: dict[str, Callable[..., Any]] = {
    "reasoning": _reasoning,
    "preference": _preference,
    "sft": _sft,
    "multiturn": _multiturn,
}


def build_llm_env(
    env_spec: Any,
    tokenizer: Any,
    *,
    batch_size: int,
    max_context_length: int | None,
    seed: int,
    base_dir: Path | None,
) -> Any:
    """The environment an ``LLMEnvSpec`` (or a manifest's section built on its fields)
    describes; relative paths resolve against ``base_dir`` (the manifest's directory).
    A multi-turn section naming a GEM environment (``env_name``) is refused
    (:func:`agilerl.models.env.gem_env_name`)."""
    from agilerl.models.env import gem_env_name

    refusal = gem_env_name(env_spec)
    if refusal is not None:
        raise LLMSetupError(refusal)
    builder = ENV_BUILDERS.get(env_spec.env_type)
    if builder is None:
        raise LLMSetupError(
            f"environment.env_type: {env_spec.env_type!r} is not an LLM environment "
            f"(known: {', '.join(ENV_BUILDERS)})"
        )
    return builder(
        env_spec,
        tokenizer,
        base_dir,
        batch_size=batch_size,
        max_context_length=max_context_length,
        seed=seed,
    )
