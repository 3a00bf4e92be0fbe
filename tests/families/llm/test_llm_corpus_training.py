"""AgileRL's single-turn LLM manifests (``tests/agilerl_manifests/configs/llm_finetuning``
and ``configs/sft.yaml``) train a few steps here with the tiny local model, data and
reward put in place of the hub ones (``--set``, as a user without the hub would); those
that generate with vLLM are refused as written.

Their multi-turn siblings validate and, naming a GEM environment (``env_name``), are
refused before a run's first step (``support.corpus``); ``grpo_multiturn.yaml`` trains a
few steps with the tiny two-turn environment named by ``entrypoint`` in the GEM game's
place. The LLM-PPO quantisation benchmark asks for the fused Liger loss, which a run
refuses.
"""

from __future__ import annotations

import json

import pytest
from support import TESTS

from agilerl.cli import main

CORPUS = TESTS / "agilerl_manifests" / "configs" / "llm_finetuning"
REASONING = ("gspo", "cispo", "reinforce_llm", "ppo_llm")
#: ppo_llm.yaml evolves a population of 4 (lr_actor and beta mutate): two agents here,
#: evolving after each step, so its clones (critic and both optimisers) are exercised.
POPULATION = {"ppo_llm": {"training.pop_size": "2", "training.evo_steps": "1"}}


def stand_ins(tiny, task: str = "reasoning") -> list[str]:
    """The tiny model and data (and, for reasoning, reward) in place of the hub model and
    dataset (the tiny data's columns are already the ones each environment reads)."""
    sets = {
        "network.pretrained_model_name_or_path": tiny / "model",
        "environment.dataset": tiny / "data" / f"{task}.jsonl",
    }
    if task == "reasoning":
        sets |= {
            "environment.reward_file_path": tiny / "reward.py",
            "environment.reward_fn_name": "reward",
            "environment.columns": "null",
        }
    return [arg for key, value in sets.items() for arg in ("--set", f"{key}={value}")]


#: The manifests that generate without vLLM: path in the corpus -> the tiny data's task
#: (sft.yaml trains on the chosen answers of a preference dataset: response_column).
WITHOUT_VLLM = {
    "configs/llm_finetuning/grpo.yaml": "reasoning",
    "configs/llm_finetuning/dpo.yaml": "preference",
    "configs/sft.yaml": "preference",
}


@pytest.mark.parametrize("name", sorted(WITHOUT_VLLM))
def test_with_the_tiny_model_the_manifest_trains_a_few_steps(tiny_llm, tmp_path, name, capsys):
    brief = {"training.max_steps": "2", "training.evaluation_interval": "1",
             "training.pop_size": "2", "training.evo_steps": "1"}  # fmt: skip
    if WITHOUT_VLLM[name] == "reasoning":
        brief["algorithm.max_output_tokens"] = "4"  # the tiny model's answers are one word
        # grpo.yaml configures vLLM without using it, which a run refuses (a setting
        # that would not take effect): the one change beyond the stand-ins
        brief["algorithm.vllm_config"] = "null"
    args = [arg for key, value in brief.items() for arg in ("--set", f"{key}={value}")]
    out = tmp_path / "run"
    manifest = TESTS / "agilerl_manifests" / name
    rc = main(["train", str(manifest), "--out", str(out), "--quiet",
               *stand_ins(tiny_llm, WITHOUT_VLLM[name]), *args])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    history = json.loads((out / "history.json").read_text())
    assert history and all(len(generation["agents"]) == 2 for generation in history)
    assert (out / "best_adapter" / "adapter_config.json").is_file()


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
        **POPULATION.get(name, {}),
    }
    args = [arg for key, value in brief.items() for arg in ("--set", f"{key}={value}")]
    out = tmp_path / "run"
    rc = main(["train", str(CORPUS / f"{name}.yaml"), "--out", str(out), "--quiet",
               *stand_ins(tiny_llm), *args])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    history = json.loads((out / "history.json").read_text())
    size = int(POPULATION.get(name, {}).get("training.pop_size", "1"))
    assert history and all(len(generation["agents"]) == size for generation in history)
    agent = history[-1]["agents"][0]
    assert agent["metrics"]["completion_length"] > 0 and "loss" in agent["metrics"]
    assert (out / "best_adapter" / "adapter_config.json").is_file()


def test_the_ppo_quantisation_benchmark_is_refused_for_the_liger_loss(tiny_llm, tmp_path, capsys):
    # Without vLLM (as the others train) it still asks for the fused Liger loss
    # (quantization: none is no quantisation).
    brief = {"algorithm.use_vllm": "false", "algorithm.vllm_config": "null"}
    args = [arg for key, value in brief.items() for arg in ("--set", f"{key}={value}")]
    rc = main(["train", str(CORPUS / "ppo_llm_quant_bench.yaml"), "--out", str(tmp_path),
               *stand_ins(tiny_llm), *args])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1
    assert "algorithm.use_liger_loss: the fused Liger kernel loss is not supported" in err
    assert "quantization" not in err
    assert not (tmp_path / "checkpoint.pt").exists()


def test_grpo_multiturn_trains_a_few_steps_with_the_tiny_environment_in_the_gems_place(
    tiny_llm, tmp_path, capsys
):
    sets = {
        "environment.env_name": "null",
        "environment.entrypoint": "agilerl.testing.multiturn:RevealedTopic",
        "network.pretrained_model_name_or_path": tiny_llm / "model",
        "algorithm.use_vllm": "false",
        "algorithm.vllm_config": "null",
        "algorithm.max_output_tokens": "2",  # the tiny model's answers are a word or two
        "algorithm.batch_size": "4",
        "training.max_steps": "2",
        "training.evaluation_interval": "1",
    }
    args = [arg for key, value in sets.items() for arg in ("--set", f"{key}={value}")]
    out = tmp_path / "run"
    manifest = CORPUS / "grpo_multiturn.yaml"
    rc = main(["train", str(manifest), "--out", str(out), "--quiet", *args])
    assert rc == 0, capsys.readouterr().err
    (generation,) = json.loads((out / "history.json").read_text())
    (agent,) = generation["agents"]  # pop_size 1
    assert agent["metrics"]["completion_length"] > 0 and "loss" in agent["metrics"]
    assert 0.0 <= agent["fitness"] <= 1.0  # the mean return of greedy test episodes
    assert (out / "best_adapter" / "adapter_config.json").is_file()
