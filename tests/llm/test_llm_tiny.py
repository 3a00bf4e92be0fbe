"""The tiny local LLM assets (agilerl.llm.tiny) and the offline model / tokenizer loaders
(agilerl.llm.models)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from agilerl.cli import main
from agilerl.llm.models import LLMSetupError, load_causal_lm, load_tokenizer
from agilerl.llm.rewards import load_reward_fn
from agilerl.llm.tiny import COLOURS, build_tiny_assets

FILES = [
    "data/preference.jsonl",
    "data/reasoning.jsonl",
    "data/sft.jsonl",
    "model/config.json",
    "model/generation_config.json",
    "model/model.safetensors",
    "model/tokenizer.json",
    "model/tokenizer_config.json",
    "reward.py",
]


def _contents(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_tiny_assets_are_the_same_bytes_for_a_seed_and_differ_for_another(tmp_path, tiny_llm):
    again = _contents(build_tiny_assets(tmp_path / "again", seed=0))
    assert set(FILES) <= set(again)
    assert again == _contents(tiny_llm)
    other = _contents(build_tiny_assets(tmp_path / "other", seed=1))
    assert other["model/model.safetensors"] != again["model/model.safetensors"]
    assert other["data/reasoning.jsonl"] != again["data/reasoning.jsonl"]
    # The vocabulary covers every word a task can use, whichever rows a seed draws.
    assert other["model/tokenizer.json"] == again["model/tokenizer.json"]


def test_tiny_assets_load_with_plain_transformers_offline(tiny_llm):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llm / "model", local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_llm / "model", local_files_only=True)
    assert tokenizer.padding_side == "left"
    assert (tokenizer.pad_token, tokenizer.eos_token) == ("<pad>", "<eos>")
    assert model.config.vocab_size == len(tokenizer)
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 64
    assert sum(p.numel() for p in model.parameters()) < 200_000
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "what colour is the sky ?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text.split() == [
        "<user>",
        "what",
        "colour",
        "is",
        "the",
        "sky",
        "?",
        "<eos>",
        "<assistant>",
    ]
    batch = tokenizer([text, "count from 3"], return_tensors="pt", padding=True)
    assert batch["attention_mask"][1, 0] == 0  # left padding
    out = model.generate(**batch, max_new_tokens=3, do_sample=False)
    assert out.shape == (2, batch["input_ids"].shape[1] + 3)


def test_every_word_of_the_toy_data_is_one_known_token(tiny_llm):
    tokenizer = load_tokenizer(tiny_llm / "model")
    for name in ("reasoning", "preference", "sft"):
        for line in (tiny_llm / "data" / f"{name}.jsonl").read_text().splitlines():
            for text in json.loads(line).values():
                ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                assert len(ids) == len(text.split())
                assert tokenizer.unk_token_id not in ids, text
                assert tokenizer.decode(ids) == text


def test_toy_datasets_follow_their_rules(tiny_llm):
    def rows(name):
        lines = (tiny_llm / "data" / f"{name}.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    for row in rows("reasoning"):
        assert row["question"] == f"what colour is the {row['question'].split()[4]} ?"
        assert COLOURS[row["question"].split()[4]] == row["answer"]
    for row in rows("preference"):
        assert COLOURS[row["prompt"].split()[4]] == row["chosen"] != row["rejected"]
        assert row["rejected"] in COLOURS.values()
    for row in rows("sft"):
        start = int(row["prompt"].split()[-1])
        assert row["response"].split() == [str(start + i) for i in range(1, 5)]


def test_the_reward_file_gives_partial_credit_in_zero_one(tiny_llm):
    reward = load_reward_fn("reward.py", "reward", base_dir=tiny_llm)
    question = "what colour is the sky ?"
    assert reward("blue", "blue", question) == 1.0
    assert reward("red", "blue", question) == 0.5
    assert reward("blue red 3 sky", "blue", question) == pytest.approx((1 + 0.5) / 4)
    assert reward("sky sky", "blue", question) == 0.0
    assert reward("", "blue", question) == 0.0
    # Only the first four words count.
    assert reward("blue blue blue blue 7 7 7", "blue", question) == 1.0


def test_the_random_tiny_model_sometimes_earns_reward(tiny_llm):
    """GRPO learns only from groups whose completions differ in reward: the random model
    must produce such groups from the start."""
    tokenizer = load_tokenizer(tiny_llm / "model")
    model = load_causal_lm(tiny_llm / "model")
    reward = load_reward_fn("reward.py", "reward", base_dir=tiny_llm)
    rows = [
        json.loads(line) for line in (tiny_llm / "data/reasoning.jsonl").read_text().split("\n")[:8]
    ]
    texts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": row["question"]}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for row in rows
    ]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(0)
    out = model.generate(**batch, max_new_tokens=4, do_sample=True, num_return_sequences=8, top_k=0)
    completions = tokenizer.batch_decode(
        out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True
    )
    scores = torch.tensor(
        [
            reward(c, rows[i // 8]["answer"], rows[i // 8]["question"])
            for i, c in enumerate(completions)
        ]
    ).view(8, 8)
    assert 0.0 < scores.mean() < 0.5
    assert (scores.std(dim=1) > 0).sum() >= 4  # most groups carry a learning signal


def test_cli_llm_tiny_builds_the_assets(tmp_path, capsys, tiny_llm):
    assert main(["llm", "tiny", str(tmp_path / "assets")]) == 0
    assert "model/" in capsys.readouterr().out
    assert _contents(tmp_path / "assets") == _contents(tiny_llm)


def test_cli_llm_tiny_reports_an_unwritable_directory_without_a_traceback(tmp_path, capsys):
    (tmp_path / "taken").write_text("a file, not a directory")
    assert main(["llm", "tiny", str(tmp_path / "taken")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"agilerl: {tmp_path / 'taken'}") and "Traceback" not in err


def test_cli_llm_tiny_refuses_to_overwrite_without_force(tmp_path, capsys):
    root = tmp_path / "assets"
    root.mkdir()
    (root / "reward.py").write_text("# mine\n")
    assert main(["llm", "tiny", str(root)]) == 1
    assert capsys.readouterr().err == (
        f"agilerl: {root}: holds reward.py already (use --force to overwrite)\n"
    )
    assert (root / "reward.py").read_text() == "# mine\n"  # untouched
    assert sorted(p.name for p in root.iterdir()) == ["reward.py"]
    assert main(["llm", "tiny", str(root), "--force"]) == 0
    assert "def reward" in (root / "reward.py").read_text()


# --------------------------------------------------------------------------- loaders
def test_loaders_load_the_tiny_model_in_the_dtype_asked(tiny_llm):
    tokenizer = load_tokenizer(tiny_llm / "model")
    assert tokenizer.padding_side == "left" and tokenizer.pad_token_id is not None
    assert next(load_causal_lm(tiny_llm / "model").parameters()).dtype == torch.float32
    model = load_causal_lm(str(tiny_llm / "model"), dtype=torch.bfloat16)
    assert next(model.parameters()).dtype == torch.bfloat16


@pytest.mark.parametrize("loader", [load_tokenizer, load_causal_lm])
def test_loaders_refuse_a_missing_directory_naming_the_field(loader, tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(LLMSetupError) as err:
        loader(missing)
    message = str(err.value)
    assert message.startswith("network.pretrained_model_name_or_path: ")
    assert f"{missing} does not exist" in message and "never a hub id" in message


@pytest.mark.parametrize("loader", [load_tokenizer, load_causal_lm])
def test_loaders_refuse_a_file_and_name_a_custom_field(loader, tiny_llm):
    with pytest.raises(LLMSetupError, match=r"^actor\.model: .*reward\.py is not a directory"):
        loader(tiny_llm / "reward.py", field="actor.model")


def test_load_causal_lm_refuses_a_directory_without_a_model(tiny_llm):
    with pytest.raises(
        LLMSetupError, match=r"data holds no model config \(looked for config.json\)"
    ):
        load_causal_lm(tiny_llm / "data")


def test_load_causal_lm_refuses_a_config_without_weights(tmp_path, tiny_llm):
    shutil.copy(tiny_llm / "model/config.json", tmp_path / "config.json")
    with pytest.raises(LLMSetupError, match=r"holds no model weights \(looked for \*\.safetensors"):
        load_causal_lm(tmp_path)


def test_load_causal_lm_reports_a_broken_config(tmp_path, tiny_llm):
    shutil.copytree(tiny_llm / "model", tmp_path / "model")
    (tmp_path / "model/config.json").write_text('{"model_type": "no-such-architecture"}')
    with pytest.raises(
        LLMSetupError, match=r"^network\.pretrained_model_name_or_path: .*the model does not load"
    ):
        load_causal_lm(tmp_path / "model")


def test_load_tokenizer_refuses_a_directory_without_one(tiny_llm):
    with pytest.raises(LLMSetupError, match=r"data holds no tokenizer \(looked for tokenizer.json"):
        load_tokenizer(tiny_llm / "data")


def test_load_tokenizer_pads_with_eos_when_the_tokenizer_has_no_pad_token(tmp_path, tiny_llm):
    shutil.copytree(tiny_llm / "model", tmp_path / "model")
    config_file = tmp_path / "model/tokenizer_config.json"
    config = json.loads(config_file.read_text())
    del config["pad_token"]
    config["padding_side"] = "right"
    config_file.write_text(json.dumps(config))
    tokenizer = load_tokenizer(tmp_path / "model")
    assert tokenizer.pad_token == "<eos>" and tokenizer.padding_side == "left"


class _RunsCode:
    """Unpickling this creates the file ``marker``: a stand-in for any command."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _malicious_bin(folder: Path, marker: Path) -> None:
    torch.save({"weights": _RunsCode(marker)}, folder / "pytorch_model.bin")


def test_pickled_weights_are_refused_unread(tmp_path, tiny_llm):
    model, marker = tmp_path / "model", tmp_path / "unpickled"
    shutil.copytree(tiny_llm / "model", model)
    (model / "model.safetensors").unlink()
    _malicious_bin(model, marker)
    with pytest.raises(LLMSetupError) as caught:
        load_causal_lm(model)
    assert str(caught.value) == (
        f"network.pretrained_model_name_or_path: {model}: holds only pickled weights "
        "(pytorch_model.bin); unpickling can run code, so only safetensors weights are read: "
        "save the model with save_pretrained(..., safe_serialization=True)"
    )
    assert not marker.exists()


def test_a_pickle_beside_safetensors_weights_is_never_read(tmp_path, tiny_llm):
    model, marker = tmp_path / "model", tmp_path / "unpickled"
    shutil.copytree(tiny_llm / "model", model)
    _malicious_bin(model, marker)
    assert load_causal_lm(model) is not None
    assert not marker.exists()


@pytest.mark.parametrize(
    "damage",
    [lambda data: data[: len(data) // 2], lambda data: b"\xff" * 100],
    ids=["truncated", "garbage"],
)
def test_a_damaged_safetensors_file_is_one_line_naming_it(tiny_llm, tmp_path, damage):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_llm / "model", model)
    weights = model / "model.safetensors"
    weights.write_bytes(damage(weights.read_bytes()))
    with pytest.raises(LLMSetupError) as err:
        load_causal_lm(model)
    message = str(err.value)
    assert message.startswith(
        f"network.pretrained_model_name_or_path: {weights}: the model does not load: "
        "damaged safetensors file (Error while deserializing header: "
    )
    assert "\n" not in message
