"""Hub ids for LLM models and datasets (agilerl.llm.hub): which names are local paths and
which are hub ids, hub ids resolved from caches written by hand with downloads off (the
test session's conftest switches them off; nothing here downloads), and the one-line
refusals that name the field and what was tried."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
)
from support import ROOT
from support.hub_caches import write_hub_dataset, write_hub_model

from agilerl.cli import main
from agilerl.families.llm.environments import load_table
from agilerl.llm.hub import DATA_FILE_BUILDERS, datasets_cache, hub_cache, hub_id, offline_switch
from agilerl.llm.models import LLMSetupError, load_causal_lm, load_tokenizer
from agilerl.models import load_manifest

DATA = tuple(DATA_FILE_BUILDERS)


# ------------------------------------------------------------------------------ the rule
@pytest.mark.parametrize(
    ("name", "suffixes", "expected"),
    [
        ("Qwen/Qwen2.5-0.5B-Instruct", (), "Qwen/Qwen2.5-0.5B-Instruct"),
        ("gpt2", (), "gpt2"),
        ("openai/gsm8k", DATA, "openai/gsm8k"),
        ("./Qwen/Qwen2.5-0.5B-Instruct", (), None),  # written as a path
        ("../tiny-llm/model", (), None),
        ("/models/qwen", (), None),
        ("~/models/qwen", (), None),
        (".", (), None),
        ("models\\qwen", (), None),
        ("data/train.jsonl", DATA, None),  # a data file's suffix
        ("org/rows.PARQUET", DATA, None),
        ("org/rows.parquet", (), "org/rows.parquet"),  # a model has no file suffix
        ("a/b/c", (), None),  # not of a hub id's form
        ("org--x/name", (), None),
        ("org/na..me", (), None),
        ("-org/name", (), None),
        ("x" * 97, (), None),
    ],
)
def test_a_name_is_a_hub_id_only_when_nothing_marks_it_local(name, suffixes, expected, tmp_path):
    assert hub_id(name, tmp_path, suffixes) == expected


def test_a_pathlib_path_is_always_local(tmp_path, hf_caches):
    assert hub_id(Path("Qwen/Qwen2.5-0.5B-Instruct"), tmp_path) is None
    with pytest.raises(LLMSetupError, match=r"Qwen2.5-0.5B-Instruct does not exist; "):
        load_causal_lm(Path("Qwen/Qwen2.5-0.5B-Instruct"), base_dir=tmp_path)


def test_a_name_that_exists_beside_the_manifest_is_local(tmp_path):
    (tmp_path / "Qwen" / "Qwen2.5-0.5B-Instruct").mkdir(parents=True)
    assert hub_id("Qwen/Qwen2.5-0.5B-Instruct", tmp_path) is None
    assert hub_id("Qwen/Qwen2.5-0.5B-Instruct", tmp_path / "Qwen") == "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.parametrize(
    ("variables", "kind", "switch"),
    [
        ({"TRANSFORMERS_OFFLINE": "1"}, "model", "TRANSFORMERS_OFFLINE=1"),
        ({"HF_HUB_OFFLINE": "yes"}, "dataset", "HF_HUB_OFFLINE=yes"),
        ({"HF_DATASETS_OFFLINE": "ON"}, "dataset", "HF_DATASETS_OFFLINE=ON"),
        ({"HF_DATASETS_OFFLINE": "1"}, "model", None),  # datasets' variable, not the models'
    ],
)
def test_downloads_are_off_by_the_variables_read_when_a_name_resolves(
    variables, kind, switch, monkeypatch
):
    import datasets
    from huggingface_hub import constants

    # As if the libraries were imported with downloads on (this session's are off).
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert offline_switch(kind) == switch


def test_the_caches_follow_hf_hub_cache_hf_datasets_cache_then_hf_home(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_DATASETS_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert (hub_cache(), datasets_cache()) == (tmp_path / "home/hub", tmp_path / "home/datasets")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "models"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "tables"))
    assert (hub_cache(), datasets_cache()) == (tmp_path / "models", tmp_path / "tables")


# ------------------------------------------------------------------------------ models
def test_a_hub_model_loads_from_the_hub_cache_with_downloads_off(tiny_llm, hf_caches):
    snapshot = write_hub_model(hf_caches.hub, "org/tiny", tiny_llm / "model")
    tokenizer = load_tokenizer("org/tiny")
    model = load_causal_lm("org/tiny")
    local = load_causal_lm(tiny_llm / "model")
    assert tokenizer.padding_side == "left"
    assert tokenizer("what colour is the sky ?").input_ids == (
        load_tokenizer(tiny_llm / "model")("what colour is the sky ?").input_ids
    )
    for (name, ours), (_, theirs) in zip(
        model.state_dict().items(), local.state_dict().items(), strict=True
    ):
        assert torch.equal(ours, theirs), name
    assert Path(model.config._name_or_path) == snapshot  # the cache's folder, not a download


def test_hf_home_alone_locates_the_hub_cache(tiny_llm, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    write_hub_model(tmp_path / "home" / "hub", "org/tiny", tiny_llm / "model")
    assert load_tokenizer("org/tiny").pad_token_id is not None


@pytest.mark.parametrize("loader", [load_tokenizer, load_causal_lm])
def test_a_hub_model_not_in_the_cache_is_refused_in_one_line(loader, hf_caches, tmp_path):
    with pytest.raises(LLMSetupError) as err:
        loader("Qwen/Qwen2.5-0.5B-Instruct", base_dir=tmp_path / "configs")
    message = str(err.value)
    assert message == (
        "network.pretrained_model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct: no local path "
        f"(nothing at {tmp_path}/configs/Qwen/Qwen2.5-0.5B-Instruct), so it was looked up as "
        f"a Hugging Face hub model: not in the hub cache {hf_caches.hub}, and downloads are "
        "off (HF_HUB_OFFLINE=1) (write ./Qwen/Qwen2.5-0.5B-Instruct to mean a local path)"
    )


def test_a_model_folder_beside_the_manifest_wins_over_the_hub(tiny_llm, hf_caches, tmp_path):
    shutil.copytree(tiny_llm / "model", tmp_path / "org" / "tiny")  # the hub cache is empty
    assert load_causal_lm("org/tiny", base_dir=tmp_path).config.num_hidden_layers == 2


def _http(error: type[Exception], status: int) -> Exception:
    import httpx

    request = httpx.Request("GET", "https://huggingface.co/api/models/org/tiny")
    return error("refused", response=httpx.Response(status, request=request))


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (lambda: LocalEntryNotFoundError("no cache"), "and the hub cannot be reached"),
        (lambda: _http(RepositoryNotFoundError, 404), "no such repository on the hub"),
        (lambda: _http(GatedRepoError, 401), "a gated repository: accept its terms"),
        (lambda: _http(HfHubHTTPError, 500), "HfHubHTTPError: refused"),
    ],
    ids=["unreachable", "no-such-repository", "gated", "server-error"],
)
def test_what_the_hub_answers_with_downloads_on_is_said_in_one_line(
    raised, reason, hf_caches, monkeypatch
):
    """With downloads on, what the hub answers (here a stand-in for snapshot_download:
    no test reaches the network) becomes the reason of the one-line refusal."""
    import huggingface_hub

    def snapshot_download(repo, *, cache_dir, local_files_only, allow_patterns):
        assert (cache_dir, local_files_only) == (hf_caches.hub, False)
        assert "*.safetensors" in allow_patterns and not any(
            pattern.endswith((".bin", ".py", ".pt", ".pth", ".ckpt")) for pattern in allow_patterns
        )  # weights as safetensors only, never code
        raise raised()

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    with pytest.raises(LLMSetupError) as err:
        load_causal_lm("org/tiny")
    message = str(err.value)
    assert message.startswith("network.pretrained_model_name_or_path: org/tiny: no local path")
    assert reason in message.partition("looked up as a Hugging Face hub model: ")[2]
    assert "\n" not in message


@pytest.mark.parametrize("loader", [load_tokenizer, load_causal_lm])
def test_a_missing_local_path_still_names_the_missing_folder(loader, hf_caches, tmp_path):
    with pytest.raises(LLMSetupError) as err:
        loader("./missing", base_dir=tmp_path)
    assert str(err.value).startswith(
        f"network.pretrained_model_name_or_path: {tmp_path}/missing does not exist; "
    )
    assert "hub cache" not in str(err.value)  # a path is never looked up on the hub


def test_a_hub_model_holding_only_pickled_weights_is_refused_unread(tiny_llm, hf_caches):
    snapshot = write_hub_model(hf_caches.hub, "org/pickled", tiny_llm / "model")
    (snapshot / "model.safetensors").rename(snapshot / "pytorch_model.bin")  # the link moves
    with pytest.raises(LLMSetupError, match=r"holds only pickled weights \(pytorch_model.bin\)"):
        load_causal_lm("org/pickled")


# ---------------------------------------------------------------------------- datasets


@pytest.mark.parametrize("set_after_import", [False, True])
def test_a_hub_dataset_loads_from_the_datasets_cache_with_downloads_off(
    set_after_import, tiny_llm, hf_caches, monkeypatch
):
    """Also where the variable was set after datasets was imported (a notebook): datasets
    read its offline flag at import, and asking the hub first would fail here."""
    import datasets

    if set_after_import:
        monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    write_hub_dataset(hf_caches.datasets, "org/colours", tiny_llm / "data" / "reasoning.jsonl")
    table = load_table("org/colours", columns={"question": "prompt"})
    local = load_table(tiny_llm / "data" / "reasoning.jsonl", columns={"question": "prompt"})
    assert table.to_list() == local.to_list()
    assert sorted(table.column_names) == ["answer", "prompt"]


def test_a_hub_dataset_not_in_the_cache_is_refused_in_one_line(hf_caches, tmp_path):
    with pytest.raises(LLMSetupError) as err:
        load_table("openai/gsm8k", base_dir=tmp_path)
    assert str(err.value) == (
        f"environment.dataset: openai/gsm8k: no local path (nothing at {tmp_path}/openai/gsm8k), "
        "so it was looked up as a Hugging Face hub dataset: not in the datasets cache "
        f"{hf_caches.datasets}, and downloads are off (HF_HUB_OFFLINE=1) (write "
        "./openai/gsm8k to mean a local path)"
    )


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (ConnectionError("Couldn't reach 'org/colours'"), "and the hub cannot be reached"),
        (
            ValueError('Unknown split "train".\nShould be one of'),
            'ValueError: Unknown split "train".',
        ),
    ],
    ids=["unreachable", "no-train-split"],
)
def test_what_datasets_answers_with_downloads_on_is_said_in_one_line(
    raised, reason, hf_caches, monkeypatch
):
    """With downloads on, datasets' failure (a stand-in for load_dataset: no test reaches
    the network) becomes the reason of the one-line refusal."""
    import datasets

    def load_dataset(repo, *, split, cache_dir, keep_in_memory):
        assert (repo, split, cache_dir) == ("org/colours", "train", str(hf_caches.datasets))
        assert datasets.config.HF_HUB_OFFLINE is False  # downloads on, as the variables say
        raise raised

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, "0")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    with pytest.raises(LLMSetupError) as err:
        load_table("org/colours")
    message = str(err.value)
    assert message.startswith("environment.dataset: org/colours: no local path")
    assert reason in message.partition("looked up as a Hugging Face hub dataset: ")[2]
    assert "\n" not in message


@pytest.mark.parametrize("name", ["./missing", "data/missing.jsonl"])
def test_a_missing_local_dataset_still_names_the_missing_file(name, hf_caches, tmp_path):
    with pytest.raises(LLMSetupError) as err:
        load_table(name, base_dir=tmp_path)
    assert str(err.value).startswith(
        f"environment.dataset: {name} (relative to {tmp_path}) does not exist; "
    )


# ---------------------------------------------------------------------------- a run
@pytest.fixture
def hub_run(tiny_llm, hf_caches, tmp_path):
    """configs/grpo.yaml naming the tiny model and its data by hub ids, both in the
    caches; the reward file beside it."""
    write_hub_model(hf_caches.hub, "org/tiny", tiny_llm / "model")
    write_hub_dataset(hf_caches.datasets, "org/colours", tiny_llm / "data" / "reasoning.jsonl")
    manifest = yaml.safe_load((ROOT / "configs" / "grpo.yaml").read_text())
    manifest["network"]["pretrained_model_name_or_path"] = "org/tiny"
    manifest["environment"]["dataset"] = "org/colours"
    manifest["environment"]["reward_file_path"] = "reward.py"
    (tmp_path / "configs").mkdir()
    shutil.copy(tiny_llm / "reward.py", tmp_path / "configs" / "reward.py")
    path = tmp_path / "configs" / "grpo.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


BRIEF = ["--set", "training.max_steps=1", "--set", "training.evo_steps=1",
         "--set", "training.pop_size=1", "--set", "training.evaluation_interval=1"]  # fmt: skip


def test_a_run_trains_on_hub_ids_and_records_them_as_written(hub_run, tmp_path, capsys):
    out = tmp_path / "runs" / "grpo"
    assert main(["train", str(hub_run), "--out", str(out), *BRIEF]) == 0, capsys.readouterr().err
    written = load_manifest(out / "manifest.yaml")
    assert written.network.pretrained_model_name_or_path == "org/tiny"  # portable: an id
    assert written.environment.dataset == "org/colours"
    assert Path(written.environment.reward_file_path).is_absolute()  # a path made absolute


def test_a_run_naming_an_uncached_hub_model_is_refused_in_one_line(hub_run, tmp_path, capsys):
    out = tmp_path / "runs" / "refused"
    model = "network.pretrained_model_name_or_path=Qwen/Qwen2.5-0.5B-Instruct"
    assert main(["train", str(hub_run), "--out", str(out), "--set", model]) == 1
    err = capsys.readouterr().err
    assert (
        "agilerl: network.pretrained_model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct: no local "
        f"path (nothing at {hub_run.parent}/Qwen/Qwen2.5-0.5B-Instruct), so it was looked up"
    ) in err
    assert "Traceback" not in err and not (out / "checkpoint.pt").exists()
