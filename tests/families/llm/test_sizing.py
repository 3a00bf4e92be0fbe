"""The LLM family's pre-flight (issue 24): the model sized from its config.json before it
is loaded, the memory of a batch, and the work a run asks for, each refused in one line
naming the field with the figures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from agilerl.families.llm.sizing import ModelSize
from agilerl.trainer import LocalTrainer
from agilerl.training.preflight import PreflightError

GiB = 2**30

#: A config of about 405 billion parameters (Llama 3.1 405B's shape).
HUGE = {
    "hidden_size": 16384,
    "intermediate_size": 53248,
    "num_hidden_layers": 126,
    "num_attention_heads": 128,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}


@pytest.fixture
def llm(tiny_llm: Path, tmp_path: Path) -> Path:
    """configs/grpo.yaml beside a copy of the tiny assets (its model's config is changed
    by the tests)."""
    shutil.copytree(tiny_llm, tmp_path / "tiny-llm")
    (tmp_path / "configs").mkdir()
    shutil.copy(ROOT / "configs" / "grpo.yaml", tmp_path / "configs" / "grpo.yaml")
    return tmp_path


def trainer(root: Path, **algorithm: Any) -> LocalTrainer:
    trainer = LocalTrainer.from_manifest(root / "configs" / "grpo.yaml")
    if algorithm:
        trainer.algorithm = trainer.algorithm.model_copy(update=algorithm)
    return trainer


def declare(root: Path, **fields: Any) -> None:
    path = root / "tiny-llm" / "model" / "config.json"
    config = json.loads(path.read_text())
    path.write_text(json.dumps({**config, **fields}))


def test_the_parameter_count_of_a_known_shape() -> None:
    # Llama 3.1 405B's shape: 405,853,388,800, the count its published weights hold.
    assert ModelSize(HUGE, Path("config.json")).parameters == 405_853_388_800


def test_the_shipped_grpo_manifest_fits(llm: Path) -> None:
    found = trainer(llm).preflight(available=GiB)
    assert found is not None
    fields = [need.field for need in found.needs]
    assert fields == [
        "network.pretrained_model_name_or_path",
        "training.pop_size",
        "algorithm.group_size",  # the batch's sequences, named by the count above default
    ]
    assert found.total < 64 * 2**20


def test_a_model_of_405_billion_parameters_is_refused_before_loading(llm: Path, monkeypatch):
    declare(llm, **HUGE)

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("agilerl.llm.models.load_causal_lm", never)
    with pytest.raises(PreflightError) as info:
        trainer(llm).preflight(available=64 * GiB)
    assert str(info.value) == (
        "network.pretrained_model_name_or_path: a model of 405,853,388,800 parameters "
        "(float32) need 1.5 TiB; the run needs about 1.9 TiB in all and this machine has "
        "64.0 GiB available"
    )


@pytest.mark.parametrize(
    "value, message",
    [
        ("1e12", "hidden_size: '1e12' is not a positive integer"),
        (-4, "hidden_size: -4 is not a positive integer"),
        (True, "hidden_size: True is not a positive integer"),
    ],
)
def test_a_config_field_that_is_not_a_count_is_refused(llm: Path, value: Any, message: str):
    declare(llm, hidden_size=value)
    with pytest.raises(PreflightError) as info:
        trainer(llm).preflight(available=GiB)
    assert str(info.value).endswith(f"config.json: {message}")


def test_an_oversized_config_is_refused_unread(llm: Path) -> None:
    path = llm / "tiny-llm" / "model" / "config.json"
    path.write_text(json.dumps({"hidden_size": 64, "pad": "x" * (2 << 20)}))
    with pytest.raises(PreflightError, match=r"config.json: more than 1.0 MiB, not a model"):
        trainer(llm).preflight(available=GiB)


GROUPS = {
    "group_size 1e6": (
        {"group_size": 10**6},
        "algorithm.group_size: 1,000,000 makes training 81,920,000,000 steps "
        "(training.pop_size 4 x training.max_steps 40 x algorithm.batch_size 8 x "
        "algorithm.group_size 1,000,000 x algorithm.update_epochs 1 x tokens a sequence "
        "64); the run asks for 81,920,008,192 steps of work in all, more than the "
        "10,000,000,000 a run may (AGILERL_MAX_WORK raises it)",
    ),
    "batch_size 1e6": (
        {"batch_size": 10**6},
        "algorithm.batch_size: 1,000,000 makes training 81,920,000,000 steps",
    ),
    "update_epochs 1e9": (
        {"update_epochs": 10**9},
        "algorithm.update_epochs: 1,000,000,000 makes training",
    ),
}


@pytest.mark.parametrize("case", GROUPS)
def test_counts_that_multiply_an_llm_runs_work_are_bounded(llm: Path, case: str) -> None:
    fields, refusal = GROUPS[case]
    with pytest.raises(PreflightError) as info:
        trainer(llm, **fields).preflight(available=GiB)
    assert str(info.value).startswith(refusal), str(info.value)


def test_a_population_of_a_million_adapters_is_refused(llm: Path) -> None:
    run = trainer(llm)
    update = {"pop_size": 10**6, "max_steps": 1, "evo_steps": 1}
    run.training = run.training.model_copy(update=update)
    with pytest.raises(PreflightError, match=r"^training.pop_size: 1,000,000 LoRA adapters of "):
        run.preflight(available=8 * GiB)


def test_a_batch_that_does_not_fit_names_its_count(llm: Path) -> None:
    run = trainer(llm, group_size=10**5, batch_size=64)
    run.training = run.training.model_copy(update={"pop_size": 1, "max_steps": 1, "evo_steps": 1})
    with pytest.raises(PreflightError) as info:  # little work: one step; too much memory
        run.preflight(available=GiB)
    assert str(info.value).startswith("algorithm.group_size: training on 6,400,000 sequences"), str(
        info.value
    )


@pytest.mark.slow
def test_a_huge_model_is_refused_under_an_address_space_cap(llm: Path) -> None:
    """Loading it would reserve 1.5 TiB: under a 4 GiB RLIMIT_AS that is a MemoryError
    traceback; the pre-flight refuses first, in one line."""
    declare(llm, **HUGE)
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))\n"
        "from agilerl.cli import main\n"
        "sys.exit(main(['train', sys.argv[1], '--out', sys.argv[2], '--quiet']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(llm / "configs" / "grpo.yaml"), str(llm / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "agilerl: network.pretrained_model_name_or_path: a model of 405,853,388,800 parameters"
    ), done.stderr
