"""Data-parallel LLM fine-tuning (issue 15): GRPO on the tiny model over 2 CPU processes
(gloo) against the same run on 1 process, with the same global batch.

Each run is this file started as a script once per rank (``tests/distributed_runs.py``,
the way torchrun starts a run): it joins the process group, trains GRPO agents with
``finetune_llm`` and saves what each rank ends with. Every rank draws the same global
batch of 8 prompts and takes its 4; the completions of a prompt are sampled from streams
keyed by its row of the global batch, so both runs sample the same completions and the
only difference left is the order of float32 sums (a rank's half-batch backward plus an
all-reduce against one whole-batch backward).

Tolerance of the 1- vs 2-process comparison: the loss to 1e-5 relative, the adapters to
1e-6 absolute. After one Adam step an adapter weight moves by about ``lr`` (Adam
normalises the gradient): 1e-2 here. A reordered float32 sum changes a gradient by
about 1e-7 relative, and the step by the same fraction of ``lr``, so 1e-6 is a hundred
times that error and a hundredth of one step: a missed or doubled gradient, a wrong
normalisation or another batch would all show.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from distributed_runs import launch

HERE = Path(__file__).resolve()
SETTINGS = {
    "group_size": 4,
    "lr": 0.01,
    "beta": 0.01,
    "max_output_tokens": 4,
    "temperature": 1.0,
    "gradient_checkpointing": False,
    "max_grad_norm": 1.0,
    # No dropout: its masks fall on other rows when the batch is split.
    "lora_config": {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0},
}


def worker(tiny: str, out: str, pop_size: int, batch_size: int, max_steps: int) -> None:
    """One rank of a GRPO run of ``pop_size`` agents; saves its agents and learn
    metrics to ``out/rank{RANK}.pt``."""
    from agilerl.algorithms import GRPO
    from agilerl.distributed import join, leave
    from agilerl.hpo.mutation import Mutations
    from agilerl.hpo.tournament import TournamentSelection
    from agilerl.llm.environments import ReasoningEnv, load_table, split_dataset
    from agilerl.llm.models import load_causal_lm, load_tokenizer
    from agilerl.llm.rewards import load_reward_fn
    from agilerl.training.llm_loop import finetune_llm

    group = join("cpu")
    root = Path(tiny)
    tokenizer, base = load_tokenizer(root / "model"), load_causal_lm(root / "model")
    reward = load_reward_fn(root / "reward.py", "reward")
    train, test = split_dataset(load_table(root / "data" / "reasoning.jsonl", field="data"), 0.8, 0)
    env = ReasoningEnv(
        train, test, tokenizer, reward, {"user_0": "{question}"}, batch_size=batch_size, seed=0
    )
    pop = [
        GRPO(i, tokenizer=tokenizer, actor_network=base, seed=1 + i, **SETTINGS,
             hp_config={"lr": {"min": 0.001, "max": 0.1}})
        for i in range(pop_size)
    ]  # fmt: skip
    learned: list[dict[str, float]] = []
    learn = GRPO.learn  # record what every step's learn returns (clones' too), on this rank
    GRPO.learn = lambda agent, exp: learned.append(learn(agent, exp)) or learned[-1]
    evolution = {}
    if pop_size > 1:  # every agent but the elite mutates its lr
        evolution = {
            "selection_strategy": TournamentSelection(2, True, pop_size, rand_seed=3),
            "mutation": Mutations(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, rand_seed=4),
        }
    pop, _ = finetune_llm(
        pop, env, env_type="reasoning", max_steps=max_steps, evo_steps=1, verbose=False,
        **evolution,
    )  # fmt: skip
    torch.save(
        {
            "adapters": [{k: v.clone() for k, v in a.actor.state_dict().items()} for a in pop],
            "lr": [a.lr for a in pop],
            "fitness": [list(a.fitness) for a in pop],
            "learned": learned,
            "world_size": group.world_size,
        },
        Path(out) / f"rank{group.rank}.pt",
    )
    leave()


def _run(tiny_llm: Path, out: Path, processes: int, *, pop_size: int = 1, batch_size: int = 8,
         max_steps: int = 1) -> list[dict]:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    argv = [str(HERE), str(tiny_llm), str(out), str(pop_size), str(batch_size), str(max_steps)]
    done = launch(argv, processes, env={"PYTHONPATH": str(HERE.parents[1])}, timeout=150)
    for rank, proc in enumerate(done):
        assert proc.returncode == 0, f"rank {rank}:\n{proc.stderr[-3000:]}"
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(processes)]


def _assert_adapters(a: list[dict], b: list[dict], **tolerance) -> None:
    assert len(a) == len(b)
    for one, other in zip(a, b, strict=True):
        assert one.keys() == other.keys()
        for key in one:
            if tolerance:
                torch.testing.assert_close(one[key], other[key], rtol=0, **tolerance)
            else:
                assert torch.equal(one[key], other[key]), key


@pytest.fixture(scope="module")
def one_process(tiny_llm, tmp_path_factory):
    return _run(tiny_llm, tmp_path_factory.mktemp("one"), 1)[0]


def test_two_processes_train_one_adapter_and_the_one_process_step(tiny_llm, tmp_path, one_process):
    ranks = _run(tiny_llm, tmp_path, 2)
    assert [r["world_size"] for r in ranks] == [2, 2]
    # Both ranks end with the same adapter, bit for bit, the same metrics and fitness.
    _assert_adapters(ranks[0]["adapters"], ranks[1]["adapters"])
    assert ranks[0]["learned"] == ranks[1]["learned"]
    assert ranks[0]["fitness"] == ranks[1]["fitness"]
    # ... and what one process computes on the whole batch of 8 prompts (see the module
    # docstring for the tolerances).
    (two,), (one,) = ranks[0]["learned"], one_process["learned"]
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-5, abs=1e-7)
    for key in ("reward", "completion_length", "kl", "clip_fraction"):
        assert two[key] == pytest.approx(one[key], rel=1e-5, abs=1e-7), key
    assert one["loss"] != 0.0  # a real step was taken (the groups' rewards differ)
    _assert_adapters(ranks[0]["adapters"], one_process["adapters"], atol=1e-6)
    trained = one_process["adapters"][0]
    assert any(v.abs().max() > 1e-3 for k, v in trained.items() if "lora_B" in k)
    # The test split (51 rows, uneven over 2 ranks) gives the same fitness.
    assert ranks[0]["fitness"][0][0] == pytest.approx(one_process["fitness"][0][0], abs=1e-9)


def test_a_population_of_two_evolves_alike_on_both_ranks(tiny_llm, tmp_path):
    """Two generations of two agents with selection and lr mutation between them: every
    rank holds the whole population and decides the same clones and mutations."""
    one = _run(tiny_llm, tmp_path / "one", 1, pop_size=2, max_steps=2)[0]
    ranks = _run(tiny_llm, tmp_path / "two", 2, pop_size=2, max_steps=2)
    _assert_adapters(ranks[0]["adapters"], ranks[1]["adapters"])
    assert ranks[0]["lr"] == ranks[1]["lr"] == one["lr"]
    assert one["lr"][1] != SETTINGS["lr"]  # the mutation took place
    assert ranks[0]["fitness"] == ranks[1]["fitness"]
    assert ranks[0]["learned"] == ranks[1]["learned"]
    assert len(one["learned"]) == 4  # 2 agents x 2 generations
    # Two steps: in the second, Adam's first moments of the lora_A weights are their
    # first non-zero gradients, tiny ones, whose float32 noise Adam's normalisation turns
    # into relative error; 1e-5 is still a thousandth of a step.
    _assert_adapters(ranks[0]["adapters"], one["adapters"], atol=1e-5)
    assert [s["loss"] for s in ranks[0]["learned"]] == pytest.approx(
        [s["loss"] for s in one["learned"]], rel=1e-5, abs=1e-7
    )


def test_a_batch_size_that_does_not_split_over_the_processes_is_refused(tiny_llm, tmp_path):
    done = launch(
        [str(HERE), str(tiny_llm), str(tmp_path), "1", "7", "1"],
        2,
        env={"PYTHONPATH": str(HERE.parents[1])},
        timeout=120,
    )
    for proc in done:
        assert proc.returncode != 0
        assert "batch_size: 7 rows per batch do not split evenly over the 2 processes" in (
            proc.stderr
        )


def test_the_trainer_refuses_the_batch_size_before_building_anything(tiny_llm, monkeypatch):
    """The run's own check, from the launcher's WORLD_SIZE, names the manifest field."""
    from types import SimpleNamespace

    from agilerl.training import TrainerError
    from agilerl.training.llm_setup import make_llm_env

    monkeypatch.setenv("WORLD_SIZE", "4")
    trainer = SimpleNamespace(algorithm=SimpleNamespace(batch_size=6))
    with pytest.raises(TrainerError, match=r"algorithm\.batch_size: 6 rows per batch .* 4 proc"):
        make_llm_env(trainer)


def test_a_deepspeed_or_fsdp_launch_is_refused_naming_why(monkeypatch):
    from agilerl.llm.data_parallel import launch_refusals

    monkeypatch.delenv("ACCELERATE_USE_FSDP", raising=False)
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "false")
    assert launch_refusals() == []
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    (message,) = launch_refusals()
    assert message.startswith("ACCELERATE_USE_DEEPSPEED: the launch asks for DeepSpeed")


def test_shares_cover_a_batch_in_order_and_splits_allow_uneven_rows():
    from agilerl.llm.data_parallel import DataParallel

    shares = [DataParallel(r, 4).share(8) for r in range(4)]
    assert [(s.start, s.stop) for s in shares] == [(0, 2), (2, 4), (4, 6), (6, 8)]
    splits = [DataParallel(r, 2).split(3) for r in range(2)]
    assert [(s.start, s.stop) for s in splits] == [(0, 2), (2, 3)]
    assert DataParallel().share(7) == slice(0, 7)
    with pytest.raises(ValueError, match="^algorithm.batch_size: 6 rows"):
        DataParallel(0, 4).share(6, "algorithm.batch_size")


if __name__ == "__main__":
    tiny, out, pop_size, batch_size, max_steps = sys.argv[1:6]
    worker(tiny, out, int(pop_size), int(batch_size), int(max_steps))
