"""AgileRL's single-turn reasoning manifests (``tests/agilerl_manifests/configs/llm_finetuning``)
train a few steps here with the tiny local model, data and reward put in place of the hub
ones (``--set``, as a user without the hub would), and are refused as written for vLLM.

Their multi-turn and LLM-PPO siblings are refused at validation (``support.corpus``).
"""

from __future__ import annotations

import json

import pytest
from support import TESTS

from agilerl.cli import main

CORPUS = TESTS / "agilerl_manifests" / "configs" / "llm_finetuning"
REASONING = ("gspo", "cispo", "reinforce_llm")


def stand_ins(tiny) -> list[str]:
    """The tiny model, data and reward in place of the hub model and Countdown (the tiny
    data's columns are already ``question`` / ``answer``)."""
    sets = {
        "network.pretrained_model_name_or_path": tiny / "model",
        "environment.dataset": tiny / "data" / "reasoning.jsonl",
        "environment.reward_file_path": tiny / "reward.py",
        "environment.reward_fn_name": "reward",
        "environment.columns": "null",
    }
    return [arg for key, value in sets.items() for arg in ("--set", f"{key}={value}")]


@pytest.mark.parametrize("name", REASONING)
def test_as_written_the_manifest_is_refused_for_vllm(tiny_llm, tmp_path, name, capsys):
    rc = main(["train", str(CORPUS / f"{name}.yaml"), "--out", str(tmp_path), *stand_ins(tiny_llm)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "agilerl: algorithm.use_vllm: generation with vLLM is not supported" in err
    assert not (tmp_path / "checkpoint.pt").exists()


@pytest.mark.parametrize("name", REASONING)
def test_without_vllm_the_manifest_trains_a_few_steps(tiny_llm, tmp_path, name, capsys):
    brief = {
        "algorithm.use_vllm": "false",
        "algorithm.vllm_config": "null",
        "algorithm.max_output_tokens": "4",  # the tiny model's answers are one word
        "training.max_steps": "2",
        "training.evaluation_interval": "1",
    }
    args = [arg for key, value in brief.items() for arg in ("--set", f"{key}={value}")]
    out = tmp_path / "run"
    rc = main(["train", str(CORPUS / f"{name}.yaml"), "--out", str(out), "--quiet",
               *stand_ins(tiny_llm), *args])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    (generation,) = json.loads((out / "history.json").read_text())
    (agent,) = generation["agents"]  # pop_size 1
    assert agent["metrics"]["completion_length"] > 0 and "loss" in agent["metrics"]
    assert (out / "best_adapter" / "adapter_config.json").is_file()
