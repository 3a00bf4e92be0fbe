"""The LLM training loop and ``agilerl train`` on the LLM manifests (issue 12, part C).

The loop's own behaviour (same batches for every agent of a generation, evaluation
interval, epochs, reward errors, the environment's position in run checkpoints) is
tested with small fakes that follow the interfaces of ``agilerl.llm``; the end-to-end
tests run the ``configs/`` manifests through ``agilerl train`` on tiny assets built into
``tmp_path`` (``agilerl.llm.tiny``), a few steps each.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from support import ROOT

from agilerl.cli import main
from agilerl.families.llm.loop import SCORE_COLUMNS, STEPS, finetune_llm
from agilerl.llm.batches import Completions, PromptBatch, TokenSequences
from agilerl.models.manifest import load_manifest
from agilerl.trainer import LocalTrainer, TrainerError
from agilerl.training.callbacks import Callback
from agilerl.training.run_checkpoint import RunCheckpointer, load_run

MANIFESTS = ("grpo", "gspo", "cispo", "llm_reinforce", "llm_ppo", "dpo", "sft", "grpo_multiturn")


# -- fakes that follow agilerl/llm and the LLMAlgorithm contract ------------------------
class FakeEnv:
    """``n`` training batches per epoch, tagged by their position; a test split of one."""

    def __init__(self, n: int = 6, reasoning: bool = False) -> None:
        self.n, self.reasoning = n, reasoning
        self.position, self.num_epochs = 0, 0
        self.scored: list[list[str]] = []

    def _batch(self, tag: int):
        ids = torch.full((2, 3), tag)
        if self.reasoning:
            rows = [{"question": f"q{tag}", "answer": "a"}] * 2
            return PromptBatch(ids, torch.ones_like(ids), [f"p{tag}"] * 2, rows)
        return TokenSequences(ids, torch.ones_like(ids), torch.ones(2, 2, dtype=torch.bool))

    def next_batch(self):
        batch = self._batch(self.position)
        self.position += 1
        if self.position == self.n:
            self.position, self.num_epochs = 0, self.num_epochs + 1
        return batch

    def test_batches(self):
        yield self._batch(-1)

    def rewards(self, prompts, completions):
        self.scored.append(completions.texts)
        if any("boom" in text for text in completions.texts):
            from agilerl.llm.rewards import RewardError

            raise RewardError("reward.py:reward raised ValueError on sample question 'q0'")
        return torch.full((len(prompts), completions.group_size), 0.25)

    def state_dict(self) -> dict[str, int]:
        return {"position": self.position, "num_epochs": self.num_epochs}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.position, self.num_epochs = state["position"], state["num_epochs"]


class FakeAgent:
    """Records the batches it learns from; its fitness is how many it has seen."""

    learn_metrics = {"loss": "a loss", "kl": "a KL"}
    main_loss = "loss"

    def __init__(self, index: int = 0, text: str = "x") -> None:
        self.index, self.text = index, text
        self.fitness: list[float] = []
        self.scores: list[float] = []
        self.steps, self.mut, self.hp_config = 0, "None", {}
        self.rng = np.random.default_rng(index)
        self.seen: list[int] = []
        self.tests = 0
        self.learned_rewards: list[float] = []

    def hyperparameters(self):
        return {"lr": 0.1}

    def network_parameters(self):
        return [torch.nn.Parameter(torch.ones(2))]  # the divergence check reads them

    def clone(self, index=None):
        twin = copy.deepcopy(self)
        twin.index = self.index if index is None else index
        return twin

    def get_action(self, prompts, training=True):
        n = len(prompts) * 2
        ids = torch.zeros(n, 5, dtype=torch.long)
        return Completions(ids, torch.ones_like(ids), torch.ones(n, 4, dtype=torch.bool), 3, 2,
                           [self.text] * n)  # fmt: skip

    def learn(self, batch):
        if hasattr(batch, "rewards"):  # GRPO's Experience
            self.learned_rewards.append(float(batch.rewards.mean()))
            self.seen.append(int(batch.completions.ids.shape[0]))
        else:
            self.seen.append(int(batch.input_ids[0, 0]))
        return {"loss": 1.0 + len(self.seen), "kl": 0.5}

    def test(self, env, loop=1):
        self.tests += 1
        self.fitness.append(float(len(self.seen)))
        return self.fitness[-1]

    def state_dict(self):
        return {"index": self.index, "seen": list(self.seen)}


def run(pop, env, **kwargs):
    options = {"env_type": "sft", "max_steps": 6, "evo_steps": 3, "verbose": False}
    return finetune_llm(pop, env, **{**options, **kwargs})


# -- the loop ---------------------------------------------------------------------------
def test_every_agent_of_a_generation_trains_on_the_same_batches():
    env = FakeEnv(n=10)
    pop = [FakeAgent(0), FakeAgent(1)]
    run(pop, env)
    assert [a.seen for a in pop] == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]]
    assert env.position == 6  # the generation's batches, once each: the data moves on
    assert [a.steps for a in pop] == [6, 6]


def test_a_step_of_each_environment_type_is_in_the_table():
    assert set(STEPS) == set(SCORE_COLUMNS) == {"reasoning", "multiturn", "preference", "sft"}
    with pytest.raises(ValueError, match="env_type: 'chat'"):
        run([FakeAgent()], FakeEnv(), env_type="chat")


def test_a_reasoning_step_learns_from_the_rewards_of_its_completions():
    env = FakeEnv(reasoning=True)
    agent = FakeAgent()
    pop, _ = run([agent], env, env_type="reasoning", max_steps=2, evo_steps=2)
    assert pop[0].learned_rewards == [0.25, 0.25]
    assert pop[0].seen == [4, 4]  # 2 prompts x group of 2
    assert pop[0].scores == [0.25, 0.25]  # the training score: the mean reward


def test_a_reward_function_that_raises_stops_the_run_with_its_message():
    env = FakeEnv(reasoning=True)
    with pytest.raises(TrainerError, match=r"reward_fn_name: reward.py:reward raised .*'q0'"):
        run([FakeAgent(text="boom")], env, env_type="reasoning")


class FailingTestAgent(FakeAgent):
    """Its test scores the test split through the environment, as GRPO's does; only its
    greedy (test) completions make the reward function fail."""

    def get_action(self, prompts, training=True):
        self.text = "x" if training else "boom"
        return super().get_action(prompts, training)

    def test(self, env, loop=1):
        for prompts in env.test_batches():
            env.rewards(prompts, self.get_action(prompts, training=False))
        return super().test(env, loop)


def test_a_reward_function_that_raises_on_the_test_split_is_converted_alike():
    env = FakeEnv(reasoning=True)
    with pytest.raises(TrainerError) as err:
        run([FailingTestAgent()], env, env_type="reasoning", max_steps=2, evo_steps=2)
    assert str(err.value) == (
        "environment.reward_fn_name: reward.py:reward raised ValueError on sample question 'q0'"
    )


def test_agents_are_tested_every_evaluation_interval_and_at_the_end():
    pop = [FakeAgent()]
    run(pop, FakeEnv(n=100), max_steps=12, evo_steps=2, evaluation_interval=4)
    # generations end at 2, 4, ..., 12: tested at 2 (no fitness yet), 4, 8 and 12
    assert pop[0].tests == 4
    assert pop[0].fitness == [2.0, 4.0, 8.0, 12.0]


class Keep(Callback):
    """Keeps the run state after every generation."""

    def __init__(self, box):
        self.box = box

    def on_generation(self, state):
        self.box.append(state)


def test_num_epochs_stops_the_run_after_that_many_passes_over_the_data():
    env = FakeEnv(n=4)
    state_box = []
    pop, _ = run([FakeAgent()], env, max_steps=100, evo_steps=2, num_epochs=2,
                 callbacks=[Keep(state_box)])  # fmt: skip
    assert env.num_epochs == 2
    assert pop[0].steps == 8
    assert state_box[-1].finished == "num_epochs"


def test_max_reward_stops_the_run_when_no_target_is_given():
    pop, _ = run([FakeAgent()], FakeEnv(n=100), max_steps=30, evo_steps=2, max_reward=4.0)
    assert pop[0].steps == 4  # fitness 4 (batches seen) reaches the best reward


def test_the_generation_table_shows_the_learn_metrics(capsys):
    run([FakeAgent(0), FakeAgent(1)], FakeEnv(), verbose=True)
    err = capsys.readouterr().err
    header = next(line for line in err.splitlines() if "fitness" in line and "agent" in line)
    # SFT batches carry no reward: no training score column (it would be all "-")
    assert header.split()[:3] == ["agent", "fitness", "loss"]
    assert "kl" in header.split()


class RewardMetricAgent(FakeAgent):
    learn_metrics = {"loss": "a loss", "reward": "the batch's mean reward"}

    def learn(self, batch):
        return {**super().learn(batch), "reward": float(batch.rewards.mean())}


def test_grpos_table_shows_its_training_reward_once(capsys):
    env = FakeEnv(reasoning=True)
    run([RewardMetricAgent()], env, env_type="reasoning", max_steps=2, evo_steps=2, verbose=True)
    err = capsys.readouterr().err
    header = next(line for line in err.splitlines() if "fitness" in line and "agent" in line)
    assert header.split()[:5] == ["agent", "fitness", "train", "reward", "loss"]
    assert header.split().count("reward") == 1  # not again as the reward metric


def test_a_run_checkpoint_holds_the_environments_position(tmp_path):
    env = FakeEnv(n=10)
    checkpointer = RunCheckpointer(tmp_path / "run.pt", env=env)
    pop = [FakeAgent()]
    pop[0].state_dict = lambda: {"seen": 1}  # any agent tree
    run(pop, env, max_steps=4, evo_steps=2, checkpointer=checkpointer)
    assert load_run(tmp_path / "run.pt")["env"] == {"position": 4, "num_epochs": 0}


# -- end to end on the tiny assets ------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``configs/`` and the tiny assets beside it, as docs/families/llm.md lays them out."""
    from agilerl.llm.tiny import build_tiny_assets

    root = tmp_path_factory.mktemp("llm")
    shutil.copytree(ROOT / "configs", root / "configs")
    build_tiny_assets(root / "tiny-llm")
    return root


def agilerl(*args, cwd, check=True):
    """``agilerl ARGS`` in a fresh interpreter (the kill-and-resume test needs one)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "agilerl.cli", *args]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def train(capsys, tiny, name, out, *args):
    """``agilerl train configs/NAME.yaml --out OUT ARGS`` in this process (what the CLI
    prints, its exit status); an exception escaping it would be a traceback."""
    capsys.readouterr()
    rc = main(["train", str(tiny / "configs" / f"{name}.yaml"), "--out", str(out), *args])
    return rc, capsys.readouterr().err


BRIEF = ["--set", "training.max_steps=2", "--set", "training.evo_steps=1",
         "--set", "training.pop_size=2", "--set", "training.evaluation_interval=1"]  # fmt: skip


@pytest.mark.parametrize("name", MANIFESTS)
def test_each_llm_manifest_trains_end_to_end_through_agilerl_train(tiny, name, capsys):
    out = tiny / "runs" / name
    rc, err = train(capsys, tiny, name, out, *BRIEF)
    assert rc == 0, err
    assert "generation 1" in err and "loss" in err  # the per-generation table, as for RL
    for output in ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png",
                   "history.json", "checkpoint.pt"):  # fmt: skip
        assert (out / output).is_file(), output
    assert (out / "best_adapter" / "adapter_config.json").is_file()
    # The manifest it writes stands on its own in its new directory: absolute paths.
    written = load_manifest(out / "manifest.yaml")
    assert Path(written.network.pretrained_model_name_or_path).is_absolute()
    # a dataset, or a multi-turn environment's entry point (an installed module here)
    assert written.environment.entrypoint or Path(written.environment.dataset).is_file()
    assert written.algorithm.pretrained_model_name_or_path is None  # the network's to say


def test_the_saved_adapter_loads_with_peft_in_plain_transformers(tiny):
    """``best_adapter/`` in plain transformers + peft computes what the best agent does
    (and not what the base model alone does)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tiny / "runs" / "peft"
    trainer = LocalTrainer.from_manifest(tiny / "configs" / "sft.yaml")
    brief = {"max_steps": 2, "evo_steps": 1, "pop_size": 2, "evaluation_interval": 1}
    trainer.training = trainer.training.model_copy(update=brief)
    trainer.train(verbose=False, output_dir=out)
    base = AutoModelForCausalLM.from_pretrained(tiny / "tiny-llm" / "model")
    tokenizer = AutoTokenizer.from_pretrained(out / "best_adapter")
    model = PeftModel.from_pretrained(base, out / "best_adapter").eval()
    batch = tokenizer(["count from 3 4 5 6 7"], return_tensors="pt")
    ids, mask = batch.input_ids, batch.attention_mask

    def logprobs(model):
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
        return logits.log_softmax(-1).gather(2, ids[:, 1:, None])[..., 0]

    expected = trainer.best_agent.logprobs(ids, mask)
    torch.testing.assert_close(logprobs(model), expected, atol=1e-5, rtol=1e-5)
    with model.disable_adapter():
        assert not torch.allclose(logprobs(model), expected, atol=1e-4)  # it trained


REFUSALS = {
    "missing model directory": (
        ["--set", "network.pretrained_model_name_or_path=../nowhere"],
        "network.pretrained_model_name_or_path",
    ),
    "missing reward function": (
        ["--set", "environment.reward_fn_name=no_such_reward"],
        "no_such_reward",
    ),
    "missing reward file": (
        ["--set", "environment.reward_file_path=../tiny-llm/none.py"],
        "environment.reward_file_path",
    ),
    "missing dataset": (
        ["--set", "environment.dataset=../tiny-llm/data/none.jsonl"],
        "environment.dataset",
    ),
    "an RL-only training setting": (
        ["--set", "training.learning_delay=10"],
        "training.learning_delay",
    ),
    "weight-noise mutation": (
        ["--set", "mutation.probabilities.params_mut=0.1"],
        "mutation.probabilities.params_mut",
    ),
    "vLLM without vllm": (
        ["--set", "algorithm.use_vllm=true", "--set", "algorithm.vllm_config={}"],
        "algorithm.use_vllm",
    ),
    "architecture mutation": (
        ["--set", "mutation.probabilities.arch_mut=0.2"],
        "mutation.probabilities.arch_mut",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_refusal_names_its_field_before_the_first_step_without_a_traceback(tiny, case, capsys):
    args, field = REFUSALS[case]
    out = tiny / "runs" / f"refused-{case.replace(' ', '-')}"
    rc, err = train(capsys, tiny, "grpo", out, *args)
    assert rc == 1
    assert err.startswith("agilerl: ") or "\nagilerl: " in err, err
    assert field in err[err.index("agilerl: ") :], err
    assert not (out / "checkpoint.pt").exists()  # refused before the first generation


@pytest.mark.slow
def test_a_killed_llm_run_resumes_where_it_stood(tiny, capsys):
    """Killed at its first checkpoint and resumed, a GRPO run gives the generations an
    uninterrupted run gives: adapters, optimisers, RNG and the dataset position came
    back (the losses agree to the last digit)."""
    from support.killed_runs import kill_at_first_checkpoint

    steps = [*BRIEF, "--set", "training.max_steps=4", "--set", "algorithm.batch_size=2",
             "--set", "algorithm.group_size=4", "--quiet"]  # fmt: skip
    whole, killed = tiny / "runs" / "whole", tiny / "runs" / "killed"
    assert train(capsys, tiny, "grpo", whole, *steps)[0] == 0  # in this process
    command = [sys.executable, "-m", "agilerl.cli", "train", str(tiny / "configs/grpo.yaml"),
               "--out", str(killed), *steps]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    kill_at_first_checkpoint(command, killed / "checkpoint.pt", env)
    assert not (killed / "history.json").exists()  # it did not finish
    result = agilerl(*command[3:], "--resume", cwd=tiny)
    assert "resumed from" in result.stdout  # in the one line of --quiet

    def losses(run):
        history = json.loads((run / "history.json").read_text())
        return [[a["metrics"]["loss"] for a in gen["agents"]] for gen in history]

    assert len(losses(whole)) == 4
    assert losses(killed) == losses(whole)


def test_a_mutated_learning_rate_takes_effect_in_the_next_generation(tiny):
    from agilerl.files.documents import load_document
    from agilerl.models.manifest import parse_manifest

    doc = load_document(tiny / "configs" / "grpo.yaml")[0]
    doc["training"].update(max_steps=3, evo_steps=1, pop_size=2, evaluation_interval=1)
    doc["mutation"]["probabilities"].update(no_mut=0.0, rl_hp_mut=1.0)
    doc["mutation"]["rl_hp_selection"] = {"lr": {"min": 1e-5, "max": 1.0}}
    trainer = LocalTrainer.from_manifest(parse_manifest(doc), base_dir=tiny / "configs")
    population, _ = trainer.train(verbose=False)
    mutated = population[1]  # slot 0 is the unmutated elite
    assert mutated.mut.startswith("lr ")
    assert mutated.lr != doc["algorithm"]["lr"]
    (optimizer_attr,) = type(mutated).optimizer_specs
    # The clone's optimiser trains with the mutated rate, not its parent's.
    assert [g["lr"] for g in getattr(mutated, optimizer_attr).param_groups] == [mutated.lr]
    history = trainer.state.history
    assert history[-1]["agents"][1]["hyperparameters"]["lr"] == mutated.lr


def test_the_manifests_target_score_and_eval_loop_reach_the_llm_loop(tiny, monkeypatch):
    from agilerl.algorithms.sft import SFT

    loops = []
    real_test = SFT.test

    def counting(self, env, loop=1):
        loops.append(loop)
        return real_test(self, env, loop)

    monkeypatch.setattr(SFT, "test", counting)
    trainer = LocalTrainer.from_manifest(tiny / "configs" / "sft.yaml")
    brief = {"max_steps": 3, "evo_steps": 1, "pop_size": 2, "evaluation_interval": 1}
    trainer.training = trainer.training.model_copy(
        update={**brief, "target_score": 0.0, "eval_loop": 2}
    )
    trainer.train(verbose=False)
    assert trainer.state.finished == "target_score"  # after the first generation
    assert trainer.state.generation == 1 and loops == [2, 2]
