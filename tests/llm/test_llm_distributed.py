"""Data-parallel LLM fine-tuning (issue 15): GRPO (and LLM-REINFORCE, whose return
normalisation sums moments over the ranks, and LLM-PPO, whose advantage whitening does and
whose critic's gradients are summed too; and GRPO in the tiny multi-turn environment, each
rank playing its block of the batch's episodes) on the tiny model over 2 CPU processes
(gloo) against the same run on 1 process, with the same global batch.

Each run is this file started as a script once per rank (``tests/support/distributed_runs.py``,
the way torchrun starts a run): it joins the process group, trains GRPO agents with
``finetune_llm`` and saves what each rank ends with. Every rank draws the same global
batch of 8 prompts and takes its 4; the completions of a prompt are sampled from streams
keyed by its row of the global batch, so both runs sample the same completions and the
only difference left is the order of float32 sums (a rank's half-batch backward plus an
all-reduce against one whole-batch backward).

Tolerances of the 1- vs 2-process comparison (measured differences in brackets):

* gradients of a step (compared unclipped): 1e-5 of their largest entry [5e-7]. A
  reordered float32 sum changes a sum by about 1e-7 of its terms' size; a gradient
  averaged instead of summed over the ranks, or normalised by a rank's own token count,
  is off by a factor (2, or the ratio of the halves' counts);
* losses: 1e-5 relative or 1e-7 absolute [3e-7 relative]; LLM-REINFORCE's and LLM-PPO's
  1e-6 absolute: at ratio 1 the policy loss is the mean of batch-normalised advantages,
  0 up to the float noise of its O(1) terms [1.2e-7];
* adapters: 1e-4 absolute, a hundredth of a step [1.5e-5 after two steps]. Adam moves a
  weight by about ``lr`` (1e-2) whatever its gradient's size, but by
  ``lr * g / (|g| + eps)`` for a gradient near ``eps`` (1e-8), which multiplies a
  gradient's absolute float noise by up to ``lr / (4 eps)``: the adapter differs by
  more than the gradient does, and more after each step. A step on another batch or on
  other completions moves most weights by about ``lr``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from support.distributed_runs import launch

HERE = Path(__file__).resolve()
POP_SIZE = 2
SETTINGS = {
    "lr": 0.01,
    "beta": 0.01,
    "max_output_tokens": 4,
    "temperature": 1.0,
    "gradient_checkpointing": False,
    "max_grad_norm": 0.0,  # no clipping: the gradients compared are the ones computed
    # No dropout: its masks fall on other rows when the batch is split.
    "lora_config": {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0},
}
#: Each algorithm's own settings (GSPO and CISPO learn through GRPO's step).
OWN = {"GRPO": {"group_size": 4}, "LLMREINFORCE": {}, "LLMPPO": {"lr_critic": 0.01}}
#: The learning rate that SETTINGS' ``lr`` sets and that mutates (LLM-PPO's actor rate).
RATE = {"LLMPPO": "lr_actor"}
#: Absolute tolerance of the losses (see the module docstring).
LOSS_ABS = {"GRPO": 1e-7, "LLMREINFORCE": 1e-6, "LLMPPO": 1e-6}
#: Absolute tolerance of the adapters after two generations (the module docstring): the
#: multi-turn task's turn 1 earns nothing, so its tokens' advantages are 0 and more
#: gradients sit near Adam's eps, whose float noise Adam multiplies [1.6e-4 measured].
ADAPTER_ABS = {"reasoning": 1e-4, "multiturn": 5e-4}
#: On one pytest-xdist worker with test_distributed.py's runs (see there).
pytestmark = pytest.mark.xdist_group("distributed")


def worker(tiny: str, out: str, name: str, kind: str = "reasoning") -> None:
    """One rank of a run of algorithm ``name`` in an environment of ``kind`` (the tiny
    reasoning task, or the tiny two-turn task of agilerl.testing.multiturn, 8 episodes a
    batch): 2 agents, 2 generations of one step each, tournament
    selection and lr mutation between them; saves to ``out/rank{RANK}.pt`` what each
    step's learn returned with the adapter after it, and the final agents."""
    import agilerl.algorithms
    from agilerl.distributed import join, leave
    from agilerl.families.llm.loop import finetune_llm
    from agilerl.hpo.mutation import Mutations
    from agilerl.hpo.tournament import TournamentSelection

    group = join("cpu")
    env, tokenizer, base = _reasoning_env(Path(tiny))
    if kind == "multiturn":
        from agilerl.families.llm.multiturn import MultiTurnEpisodes
        from agilerl.testing.multiturn import RevealedTopic

        env = MultiTurnEpisodes(RevealedTopic, tokenizer, batch_size=8, seed=0, test_episodes=13)
    cls = getattr(agilerl.algorithms, name)
    rate = RATE.get(name, "lr")
    settings = {**{k: v for k, v in SETTINGS.items() if k != "lr"}, rate: SETTINGS["lr"]}
    pop = [
        cls(i, tokenizer=tokenizer, actor_network=base, seed=1 + i, **settings, **OWN[name],
            hp_config={rate: {"min": 0.001, "max": 0.1}})
        for i in range(POP_SIZE)
    ]  # fmt: skip
    steps: list[dict] = []
    learn = cls.learn  # record every step (clones' too), on this rank

    def recorded(agent: Any, experience: object) -> dict[str, float]:
        metrics = learn(agent, experience)
        grads = {key: p.grad.clone() for key, p in agent.actor.named_parameters()}
        steps.append({**metrics, "adapter": _adapter(agent), "grad": grads})
        return metrics

    cls.learn = recorded
    started = time.perf_counter()
    pop, _ = finetune_llm(
        pop, env, env_type=kind, max_steps=2, evo_steps=1, verbose=False,
        selection_strategy=TournamentSelection(2, True, POP_SIZE, rand_seed=3),
        mutation=Mutations(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, rand_seed=4),  # all but the elite
    )  # fmt: skip
    torch.save(
        {
            "steps": steps,
            "adapters": [_adapter(a) for a in pop],
            "lr": [a.lr for a in pop],
            "fitness": [list(a.fitness) for a in pop],
            "world_size": group.world_size,
            "name": name,
            "kind": kind,
            "seconds": time.perf_counter() - started,
        },
        Path(out) / f"rank{group.rank}.pt",
    )
    leave()


def _reasoning_env(tiny: Path, batch_size: int = 8):
    """The tiny reasoning task: 8 prompts a batch; a test split of 13 rows (batches of
    8 and 5, which split unevenly over 2 processes)."""
    from agilerl.families.llm.environments import ReasoningEnv, load_table, split_dataset
    from agilerl.llm.models import load_causal_lm, load_tokenizer
    from agilerl.llm.rewards import load_reward_fn

    tokenizer, base = load_tokenizer(tiny / "model"), load_causal_lm(tiny / "model")
    reward = load_reward_fn(tiny / "reward.py", "reward")
    train, test = split_dataset(
        load_table(tiny / "data" / "reasoning.jsonl", field="data"), 0.95, 0
    )
    env = ReasoningEnv(
        train, test, tokenizer, reward, {"user_0": "{question}"}, batch_size=batch_size, seed=0
    )
    return env, tokenizer, base


def _adapter(agent) -> dict[str, torch.Tensor]:
    return {key: value.clone() for key, value in agent.actor.state_dict().items()}


def _assert_adapters(one: dict, other: dict, **tolerance) -> None:
    assert one.keys() == other.keys()
    for key in one:
        if tolerance:
            torch.testing.assert_close(one[key], other[key], rtol=0, **tolerance)
        else:
            assert torch.equal(one[key], other[key]), key


def _metrics(step: dict) -> dict[str, float]:
    return {key: value for key, value in step.items() if key not in ("adapter", "grad")}


def _run(tiny_llm: Path, out: Path, processes: int, run: tuple[str, str]) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    done = launch([str(HERE), str(tiny_llm), str(out), *run], processes, timeout=150)
    for rank, proc in enumerate(done):
        assert proc.returncode == 0, f"rank {rank}:\n{proc.stderr[-3000:]}"
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(processes)]


#: (algorithm, environment) of each compared run: the multi-turn rollout plays each rank's
#: block of the batch's episodes (their groups' sampling streams keyed by global row).
RUNS = [(name, "reasoning") for name in sorted(OWN)] + [("GRPO", "multiturn")]


@pytest.fixture(scope="module", params=RUNS, ids="-".join)
def runs(tiny_llm, tmp_path_factory, request) -> tuple[dict, list[dict]]:
    """The run on 1 process, and its 2 ranks on 2 processes."""
    (one,) = _run(tiny_llm, tmp_path_factory.mktemp("one"), 1, request.param)
    return one, _run(tiny_llm, tmp_path_factory.mktemp("two"), 2, request.param)


@pytest.mark.slow
def test_one_generation_on_two_processes_takes_the_one_process_step(runs):
    one, ranks = runs
    assert [r["world_size"] for r in ranks] == [2, 2]
    for step in range(POP_SIZE):  # generation 1: one step of each agent
        mine, theirs, alone = (run["steps"][step] for run in (*ranks, one))
        # Both ranks hold the same adapter, bit for bit, and report the same metrics ...
        _assert_adapters(mine["adapter"], theirs["adapter"])
        assert _metrics(mine) == _metrics(theirs)
        # ... and what one process computes on the whole batch of 8 prompts (the
        # module docstring explains the tolerances).
        scale = max(float(g.abs().max()) for g in alone["grad"].values())
        _assert_adapters(mine["grad"], alone["grad"], atol=1e-5 * scale)
        _assert_adapters(mine["adapter"], alone["adapter"], atol=1e-4)
        for key, value in _metrics(alone).items():
            assert mine[key] == pytest.approx(value, rel=1e-5, abs=LOSS_ABS[one["name"]]), key
        assert scale > 0  # a real step (the rewards differ)
        assert any(v.abs().max() > 1e-3 for k, v in alone["adapter"].items() if "lora_B" in k)
    # The test split, uneven over the ranks, gives every rank the one-process fitness.
    assert ranks[0]["fitness"] == ranks[1]["fitness"]
    assert [f[0] for f in ranks[0]["fitness"]] == pytest.approx([f[0] for f in one["fitness"]])


@pytest.mark.slow
def test_a_population_of_two_evolves_alike_on_both_ranks(runs):
    """Selection and lr mutation between the generations: every rank holds the whole
    population and decides the same clones and mutations as the 1-process run."""
    one, ranks = runs
    assert len(one["steps"]) == len(ranks[0]["steps"]) == 2 * POP_SIZE
    for mine, theirs in zip(ranks[0]["adapters"], ranks[1]["adapters"], strict=True):
        _assert_adapters(mine, theirs)
    assert ranks[0]["lr"] == ranks[1]["lr"] == one["lr"]
    assert one["lr"][1] != SETTINGS["lr"]  # the mutation took place
    assert ranks[0]["fitness"] == ranks[1]["fitness"]
    assert [s["loss"] for s in ranks[0]["steps"]] == pytest.approx(
        [s["loss"] for s in one["steps"]], rel=1e-5, abs=LOSS_ABS[one["name"]]
    )
    for mine, alone in zip(ranks[0]["adapters"], one["adapters"], strict=True):
        _assert_adapters(mine, alone, atol=ADAPTER_ABS[one["kind"]])  # the module docstring


def test_a_batch_that_does_not_split_over_the_processes_is_refused(tiny_llm, monkeypatch):
    """The environment of rank 1 of 2 refuses a batch of 7 prompts, naming the field."""
    from agilerl.llm.data_parallel import DataParallel

    env, _, _ = _reasoning_env(tiny_llm, batch_size=7)
    monkeypatch.setattr(DataParallel, "current", classmethod(lambda cls: cls(1, 2)))
    with pytest.raises(ValueError, match=r"^batch_size: 7 rows per batch .* over the 2 proc"):
        env.next_batch()


def test_each_rank_s_batches_are_its_blocks_of_the_global_batches(tiny_llm, monkeypatch):
    from agilerl.llm.data_parallel import DataParallel

    env, _, _ = _reasoning_env(tiny_llm)
    state = env.state_dict()
    whole, whole_tests = env.next_batch(), [p.texts for p in env.test_batches()]
    blocks, tests = [], []
    for rank in range(2):
        env.load_state_dict(state)
        monkeypatch.setattr(DataParallel, "current", classmethod(lambda cls, r=rank: cls(r, 2)))
        blocks.append(env.next_batch())
        assert env.state_dict() == {**state, "position": state["position"] + 8}  # global
        tests.append([p.texts for p in env.test_batches()])
    assert [b.texts for b in blocks] == [whole.texts[:4], whole.texts[4:]]
    assert [b.first_row for b in blocks] == [0, 4]
    # Test batches of 8 and 5 rows: rank 0 takes 4 and 3, rank 1 4 and 2, in order.
    assert [len(t) for t in whole_tests] == [8, 5]
    assert [[len(t) for t in mine] for mine in tests] == [[4, 3], [4, 2]]
    for i, batch in enumerate(whole_tests):
        assert tests[0][i] + tests[1][i] == batch


def test_the_trainer_refuses_the_batch_size_before_building_anything(tiny_llm, monkeypatch):
    """The run's own check, from the launcher's WORLD_SIZE, names the manifest field."""
    from types import SimpleNamespace

    from agilerl.families.llm.setup import make_llm_env
    from agilerl.trainer import TrainerError

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


def test_each_rank_draws_its_own_dropout_and_alone_the_stream_is_untouched():
    """Every rank enters a step with the same torch generator state; LoRA dropout on its
    rows must still be its own (rank 1's rows must not drop what rank 0's drop)."""
    from agilerl.llm.data_parallel import DataParallel

    def draws(dp: DataParallel) -> torch.Tensor:
        torch.manual_seed(5)
        with dp.own_stream():
            return torch.rand(4)

    assert not torch.equal(draws(DataParallel(0, 2)), draws(DataParallel(1, 2)))
    assert torch.equal(draws(DataParallel(1, 2)), draws(DataParallel(1, 2)))
    torch.manual_seed(5)
    plain = torch.rand(4)
    assert torch.equal(draws(DataParallel()), plain)


if __name__ == "__main__":
    worker(*sys.argv[1:5])
