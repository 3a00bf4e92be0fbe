"""Multi-frequency PBT (agilerl/hpo/multi_frequency.py): the brackets and their defaults,
the frequencies, the plan's defining behaviours (a slow sub-population keeps an agent a
fast one replaces; migration moves the best across, with or without its
hyperparameters), and the whole step on real agents through ``next_generation``."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium import spaces
from support import ROOT

from agilerl.algorithms import DQN
from agilerl.cli import main
from agilerl.hpo import MultiFrequencySelection, Mutations
from agilerl.hpo.multi_frequency import Brackets, resolve_brackets
from agilerl.models.hpo import MultiFrequencySelectionSpec
from agilerl.trainer import LocalTrainer
from agilerl.training.evolution import next_generation
from agilerl.training.run_checkpoint import load_run


def selection(pop_size: int, seed: int = 0, **fields) -> MultiFrequencySelection:
    return MultiFrequencySelection.from_spec(
        MultiFrequencySelectionSpec(**fields), pop_size, rand_seed=seed
    )


@pytest.mark.parametrize(
    ("pop_size", "n", "expected"),
    [
        # AgileRL's worked defaults: winners round(s/4) (half to even), survivors 0,
        # open round(s/4), losers the rest.
        (6, 2, Brackets(1, 0, 1, 1)),
        (8, 2, Brackets(1, 0, 1, 2)),
        (12, 2, Brackets(2, 0, 2, 2)),
        (16, 2, Brackets(2, 0, 2, 4)),
        (20, 2, Brackets(2, 0, 2, 6)),
        (12, 3, Brackets(1, 0, 1, 2)),
    ],
)
def test_bracket_defaults_follow_the_subpopulation_size(pop_size, n, expected):
    brackets, problems = resolve_brackets(MultiFrequencySelectionSpec(n_subpopulations=n), pop_size)
    assert (brackets, problems) == (expected, [])


@pytest.mark.parametrize(
    ("pop_size", "fields", "message"),
    [
        (4, {}, "training.pop_size: 4 agents are too few"),
        (9, {}, "selection_strategy.n_subpopulations: 2 does not divide training.pop_size (9)"),
        (8, {"n_subpopulations": 4}, "hold 2 agents each; each needs at least 3"),
        (8, {"n_winners": 3, "n_open_for_migration": 1}, "must be at least 1/0/1/1 and add up"),
        (8, {"n_losers": 3}, "(1/0/1/3) must be at least 1/0/1/1 and add up to the"),
    ],
)
def test_a_population_the_brackets_do_not_fit_is_refused_naming_the_field(
    pop_size, fields, message
):
    brackets, problems = resolve_brackets(MultiFrequencySelectionSpec(**fields), pop_size)
    assert brackets is None and len(problems) == 1 and message in problems[0], problems


def test_the_spec_refuses_ratios_of_another_length_or_not_increasing():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="length of evolution_frequency_ratios"):
        MultiFrequencySelectionSpec(evolution_frequency_ratios=[1, 5, 10])
    with pytest.raises(ValidationError, match="must strictly increase, got 5 then 5"):
        MultiFrequencySelectionSpec(evolution_frequency_ratios=[5, 5])
    assert selection(6).ratios == [1, 5]  # the default: 1, then multiples of 5
    assert selection(9, n_subpopulations=3).ratios == [1, 5, 10]


TOURNAMENT = "selection_strategy:\n  tournament_size: 2\n  elitism: true\n"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("strategy: multi_frequency\n  evolution_frequency_ratios: [5, 1]",
         "evolution_frequency_ratios must strictly increase, got 5 then 1 (items 0 and 1)"),
        ("strategy: multi_frequency\n  evolution_frequency_ratios: [1, 1]",
         "evolution_frequency_ratios must strictly increase, got 1 then 1 (items 0 and 1)"),
        ("strategy: multi_frequency\n  evolution_frequency_ratios: [1, 5, 10]",
         "length of evolution_frequency_ratios must be <= n_subpopulations (2), got 3"),
        ("strategy: multi_frequency\n  n_subpopulations: 3\n  evolution_frequency_ratios: [1, 5]",
         "length of evolution_frequency_ratios must be >= n_subpopulations (3), got 2"),
        # without its tag the section is still MF-PBT (its keys say so), as for the schema
        ("n_subpopulations: 2\n  evolution_frequency_ratios: [5, 1]",
         "evolution_frequency_ratios must strictly increase, got 5 then 1 (items 0 and 1)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["validate", "train"])
def test_a_manifest_with_bad_ratios_is_refused_before_anything_runs(
    command, section, message, tmp_path, capsys
):
    text = (ROOT / "configs/dqn.yaml").read_text(encoding="utf-8")
    assert TOURNAMENT in text
    text = text.replace(TOURNAMENT, f"selection_strategy:\n  {section}\n")
    manifest = tmp_path / "mf.yaml"
    manifest.write_text(text.replace("pop_size: 4", "pop_size: 6"), encoding="utf-8")
    line = next(
        number
        for number, row in enumerate(text.splitlines(), 1)
        if row.startswith("  evolution_frequency_ratios:")
    )
    out = tmp_path / "run"
    # a run kept short, should the refusal ever fail
    run = ["--out", str(out), "--set", "training.max_steps=60", "--set", "training.evo_steps=30"]
    assert main([command, str(manifest), *(run if command == "train" else [])]) == 1
    captured = capsys.readouterr()
    said = captured.out + captured.err
    where = f"{manifest}:{line}:3: selection_strategy.evolution_frequency_ratios: {message}"
    assert where in said and "Traceback" not in said
    assert not out.exists()


def test_each_subpopulation_evolves_on_every_ratio_th_selection():
    mf = selection(6, evolution_frequency_ratios=[1, 3])
    fitness, indices = [5.0, 3.0, 1.0, 5.0, 3.0, 1.0], list(range(6))
    evolved = []
    for _ in range(6):
        plan = mf.plan(fitness, indices)
        evolved.append([any(p.unchanged != "kept" for p in plan[s : s + 3]) for s in (0, 3)])
        indices = [p.index for p in plan]
    assert [fast for fast, _ in evolved] == [True] * 6
    assert [slow for _, slow in evolved] == [False, False, True, False, False, True]
    assert mf.state_dict()["counters"] == [0, 0]


def test_a_slow_subpopulation_keeps_an_agent_that_a_fast_one_replaces():
    """The same ranking in both: the fast sub-population (ratio 1) replaces its worst
    agent at once; the slow one (ratio 5) keeps its own, unchanged, until it evolves."""
    mf = selection(6, evolution_frequency_ratios=[1, 5])
    fitness = [9.0, 5.0, 1.0, 9.0, 5.0, 1.0]
    plan = mf.plan(fitness, list(range(6)))
    assert plan[2].parent == 0 and plan[2].index == 6 and plan[2].unchanged is None  # cloned
    assert [p.parent for p in plan[3:]] == [3, 4, 5]
    assert all(p.unchanged == "kept" and p.index == slot + 3 for slot, p in enumerate(plan[3:]))


def test_migration_brings_the_best_of_the_other_subpopulations_into_the_open_slots():
    """pop 16 (2/0/2/4 per sub-population): the fast sub-population's two open agents are
    compared, best first, with the slow one's best agents; each fitter one migrates."""
    mf = selection(16, evolution_frequency_ratios=[1, 5])
    fast = [10.0, 9.0, 8.0, 1.0, 0.5, 0.4, 0.3, 0.2]
    slow = [20.0, 15.0, 3.0, 2.0, 1.5, 1.2, 1.1, 1.0]
    plan = mf.plan(fast + slow, list(range(16)))
    # open: slots 2 (8.0) and 3 (1.0): 20 (slot 8) beats 8.0, then 15 (slot 9) beats 1.0
    assert (plan[2].parent, plan[3].parent) == (8, 9)
    assert plan[2].unchanged == plan[3].unchanged == "migrant"
    # from a slower sub-population a migrant brings its hyperparameters too
    assert plan[2].hyperparameters_from is None and plan[3].hyperparameters_from is None
    assert {p.parent for p in plan[4:8]} <= {0, 1}  # losers: clones of the winners
    assert all(p.unchanged is None for p in plan[4:8])


def test_an_open_agent_as_good_as_the_candidate_stays_and_the_pointer_waits():
    mf = selection(16, evolution_frequency_ratios=[1, 5])
    fast = [10.0, 9.0, 8.0, 7.0, 0.5, 0.4, 0.3, 0.2]
    slow = [8.0, 7.5, 3.0, 2.0, 1.5, 1.2, 1.1, 1.0]
    plan = mf.plan(fast + slow, list(range(16)))
    # slot 2 (8.0) is not worse than 8.0: kept; slot 3 (7.0) then meets that same 8.0
    assert plan[2].unchanged == "kept" and plan[2].parent == 2
    assert plan[3].parent == 8 and plan[3].unchanged == "migrant"


def test_a_migrant_into_a_slower_subpopulation_takes_on_its_best_agents_hyperparameters():
    # both sub-populations evolve on the 5th selection: the slow one then receives from
    # the fast one, weights only, hyperparameters from its own best (slot 3 + winner)
    mf = selection(6, evolution_frequency_ratios=[1, 5])
    fitness = [9.0, 8.0, 7.0, 3.0, 2.0, 1.0]
    for _ in range(4):
        mf.plan(fitness, list(range(6)))
    plan = mf.plan(fitness, list(range(6)))
    slow_open = plan[4]  # the slow sub-population ranks 3, 4, 5: open is slot 4
    assert slow_open.parent == 0 and slow_open.hyperparameters_from == 3


def test_plans_are_seeded_and_indices_never_repeat():
    fitness = list(np.random.default_rng(3).normal(size=16))
    first = [selection(16, seed=7).plan(fitness, list(range(16))) for _ in range(2)]
    assert first[0] == first[1]
    mf = selection(16, seed=7)
    indices, seen = list(range(16)), set(range(16))
    for _ in range(6):
        plan = mf.plan(fitness, indices)
        fresh = [p.index for p in plan if p.index not in indices]
        assert not seen & set(fresh) and len(set(fresh)) == len(fresh)
        seen |= set(fresh)
        indices = [p.index for p in plan]


def test_the_counters_and_generator_resume_exactly():
    fitness = list(np.random.default_rng(4).normal(size=12))
    mf = selection(12, seed=2, evolution_frequency_ratios=[1, 3])
    mf.plan(fitness, list(range(12)))
    state = mf.state_dict()
    resumed = selection(12, seed=99, evolution_frequency_ratios=[1, 3])
    resumed.load_state_dict(state)
    assert mf.plan(fitness, list(range(12))) == resumed.plan(fitness, list(range(12)))


OBS, ACT = spaces.Box(-1.0, 1.0, (4,), np.float32), spaces.Discrete(2)
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}


def test_next_generation_keeps_winners_clones_losers_and_migrates_weights_only():
    torch.manual_seed(0)
    pop = [DQN(OBS, ACT, i, net_config=NET, seed=i, lr=1e-3 * (i + 1)) for i in range(6)]
    for agent, fit in zip(pop, [9.0, 8.0, 7.0, 3.0, 2.0, 1.0], strict=True):
        agent.fitness.append(fit)
    mf = selection(6, evolution_frequency_ratios=[1, 5])
    for _ in range(4):  # bring the slow sub-population to its evolution
        mf.plan([a.fitness[-1] for a in pop], [a.index for a in pop])
    mutation = Mutations(no_mutation=0.0, parameters=1.0, architecture=0.0, rl_hp=0.0, rand_seed=0)
    new = next_generation(pop, mf, mutation)
    x = torch.zeros(2, 4)
    # winners (slots 0 and 3) carried forward unmutated, same index, same weights
    for slot in (0, 3):
        assert new[slot].index == pop[slot].index and new[slot].mut == "None (kept)"
        assert torch.equal(new[slot].actor(x), pop[slot].actor(x))
    # the fast sub-population's open slot 1 (8.0) sees no fitter outsider (3.0): kept
    assert new[1].mut == "None (kept)" and new[1].index == 1
    # losers: mutated clones of their winner
    assert new[2].index == 6 and new[2].mut.startswith("params")
    # slot 4 (slow, open): agent 0's weights, the slow winner's (slot 3's) learning rate,
    # in its optimiser too, and no mutation
    assert new[4].mut == "None (migrant)"
    assert torch.equal(new[4].actor(x), pop[0].actor(x))
    assert new[4].lr == pop[3].lr == pytest.approx(4e-3)
    assert all(group["lr"] == pytest.approx(4e-3) for group in new[4].optimizer.param_groups)


MF_RUN = {
    "algorithm": {"name": "DQN", "batch_size": 32, "lr": 1e-3, "learn_step": 2},
    "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
    "network": NET,
    "training": {"max_steps": 400, "evo_steps": 100, "pop_size": 6, "eval_steps": 40, "seed": 3},
    "replay_buffer": {"max_size": 1_000},
    "mutation": {"rand_seed": 1},
    "selection_strategy": {"strategy": "multi_frequency", "evolution_frequency_ratios": [1, 2]},
}


def _run(document, **kwargs):
    trainer = LocalTrainer.from_manifest(copy.deepcopy(document))
    trainer.train(verbose=False, **kwargs)
    return trainer


def _figures(trainer):
    return [
        [(a["index"], a["fitness"], a["mutation"]) for a in record["agents"]]
        for record in trainer.state.history
    ]


@pytest.mark.slow
def test_a_multi_frequency_run_is_seeded_and_resumes_exactly(tmp_path):
    """A DQN population of 6 under MF-PBT through the trainer: the same seed gives the
    same run; the slow sub-population's agents are carried forward on the selections it
    skips; a run resumed from its checkpoint after one generation (the counters with it)
    ends as the whole run did."""
    full = _run(MF_RUN, checkpoint_path=tmp_path / "run.pt", checkpoint_steps=100,
                overwrite_checkpoints=False)  # fmt: skip
    assert _figures(_run(MF_RUN)) == _figures(full)
    history = full.state.history
    # the first selection (after generation 0) evolves the fast sub-population only
    slow = [a["mutation"] for a in history[1]["agents"][3:]]
    assert slow == ["None (kept)"] * 3
    assert any(a["mutation"] not in ("None (kept)", "None (migrant)")
               for a in history[1]["agents"][:3])  # fmt: skip
    after_one = tmp_path / "run_100.pt"
    assert load_run(after_one)["selection"]["counters"] == [0, 1]
    resumed = LocalTrainer.from_manifest(copy.deepcopy(MF_RUN), resume_from_checkpoint=after_one)
    resumed.train(verbose=False)
    assert _figures(resumed) == _figures(full)
