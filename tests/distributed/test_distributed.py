"""A population sharded over processes (issue 15): two CPU ranks on gloo.

Every run here is a real ``agilerl train`` (or a script) on separate processes, started
as torchrun would start them (:mod:`tests.distributed_runs`). One torch thread per
process on both sides of a comparison: matrix products summed in a different order
could differ in the last bit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.distributed_runs import ROOT, finished, launch, start

from agilerl.cli import main
from agilerl.distributed import Group
from agilerl.distributed.liveness import ENV_VAR, EXIT_CODE, peer_timeout

NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
#: HPO on: selection moves agents between ranks and mutation changes them every generation.
EVOLVING = {
    "mutation": {
        "probabilities": {
            "no_mut": 0.2,
            "arch_mut": 0.3,
            "new_layer": 0.5,
            "params_mut": 0.2,
            "act_mut": 0.0,
            "rl_hp_mut": 0.3,
        },
    },
    "selection_strategy": {"tournament_size": 2, "elitism": True},
}
PPO = {
    "algorithm": {
        "name": "PPO",
        "lr": 1e-3,
        "learn_step": 256,
        "batch_size": 64,
        "update_epochs": 2,
    },
    "environment": {"name": "CartPole-v1", "num_envs": 4, "sync": True},
    "network": NET,
    # cohorts off, as the DQN document's (below)
    "training": {
        "max_steps": 3072,
        "evo_steps": 1024,
        "pop_size": 4,
        "eval_steps": 100,
        "seed": 7,
        "cohorts": False,
    },  # fmt: skip
    **EVOLVING,
}
DQN = {
    "algorithm": {"name": "DQN", "lr": 1e-3, "batch_size": 32, "learn_step": 4},
    "environment": {"name": "CartPole-v1", "num_envs": 4, "sync": True},
    "network": NET,
    # cohorts off: a cohort's batched arithmetic rounds with the cohort's size, and a
    # split forms other cohorts (test_a_cohort_run_on_two_processes below)
    "training": {
        "max_steps": 1500,
        "evo_steps": 500,
        "pop_size": 4,
        "eval_steps": 100,
        "seed": 5,
        "cohorts": False,
    },  # fmt: skip
    "replay_buffer": {"max_size": 4000},
    **EVOLVING,
}
#: What may differ between two runs of the same seed: how long things took.
TIMING = ("seconds", "env_steps_per_s")
#: Under pytest-xdist (`--dist loadgroup`) the multi-process runs of this module and of
#: test_llm_distributed.py share one worker: never two runs' ranks at once on the cores,
#: whose timeouts (peer heartbeats, wall-clock limits) would then be tested under load.
pytestmark = pytest.mark.xdist_group("distributed")


def test_the_distributed_group_keeps_to_one_worker(request):
    """pytest-xdist's loadgroup keeps a group on one worker by suffixing its tests' node
    ids with the group's name; under pytest 9.2 the suffix was lost without a word (the
    pin in pyproject.toml). Checked where the suite runs under ``--dist loadgroup``."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith("@distributed"), request.node.nodeid


def manifest(tmp_path: Path, document: dict, name: str = "run.yaml", **training) -> Path:
    doc = {**document, "training": {**document["training"], **training}}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def train_command(path: Path, out: Path, *extra: str) -> list[str]:
    return ["-m", "agilerl", "train", str(path), "--out", str(out), "--quiet", *extra]


def one_process(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return launch(argv, 1, env=env)[0]


def history(out: Path) -> list[dict]:
    """The run's per-generation history without its timings."""

    def strip(record: dict) -> dict:
        kept = {k: v for k, v in record.items() if k not in TIMING}
        kept["agents"] = [{k: v for k, v in a.items() if k not in TIMING} for a in record["agents"]]
        return kept

    return [strip(record) for record in json.loads((out / "history.json").read_text())]


def assert_ok(*runs: subprocess.CompletedProcess) -> None:
    for rank, run in enumerate(runs):
        assert run.returncode == 0, f"rank {rank}:\n{run.stderr[-3000:]}"


# -- the split ----------------------------------------------------------------------------
def test_slots_split_the_population_into_contiguous_blocks_one_per_rank():
    groups = [Group(rank, 3) for rank in range(3)]
    assert [g.slots(7) for g in groups] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [groups[0].owner(slot, 7) for slot in range(7)] == [0, 0, 0, 1, 1, 2, 2]
    assert Group(1, 3).replicated().slots(7) == list(range(7))  # data-parallel: every agent
    assert Group().slots(4) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="training.pop_size: 2 agents cannot be shared among 3"):
        groups[0].slots(2)


def test_a_bad_peer_timeout_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "soon")
    with pytest.raises(ValueError, match=f"{ENV_VAR}='soon': expected a positive number"):
        peer_timeout()
    monkeypatch.setenv(ENV_VAR, "7.5")
    assert peer_timeout() == 7.5


@pytest.mark.parametrize("text", ["abc", "inf", "0"])
def test_agilerl_train_refuses_a_bad_peer_timeout_in_one_line(monkeypatch, capsys, text):
    """Before the manifest is read or any rank started."""
    monkeypatch.setenv(ENV_VAR, text)
    assert main(["train", "no-such-manifest.yaml", "--processes", "2"]) == 1
    assert capsys.readouterr().err == (
        f"agilerl: {ENV_VAR}={text!r}: expected a positive number of seconds\n"
    )


# -- a run does not depend on how it was split ----------------------------------------------
@pytest.mark.parametrize(
    ("document", "launcher"),
    [(PPO, "agilerl train --processes 2"), (DQN, "a launcher's environment")],
    ids=["PPO", "DQN"],
)
@pytest.mark.slow
def test_two_processes_give_the_history_of_one(tmp_path, document, launcher):
    path = manifest(tmp_path, document)
    one = one_process(train_command(path, tmp_path / "one"))
    if launcher.startswith("agilerl"):  # torchrun, started by the command itself
        two = [one_process(train_command(path, tmp_path / "two", "--processes", "2"))]
        assert "starting 2 processes (torchrun)" in two[0].stderr
    else:  # the ranks' environment as torchrun would set it
        two = launch(train_command(path, tmp_path / "two"), 2)
        assert two[1].stdout == "" and "training" not in two[1].stderr  # rank 1 is silent
    assert_ok(one, *two)
    expected = history(tmp_path / "one")
    assert len(expected) == 3
    assert history(tmp_path / "two") == expected
    # Selection and mutation acted: agents were replaced and changed between generations.
    indices = [[a["index"] for a in record["agents"]] for record in expected]
    assert indices[0] != indices[-1]
    assert any(a["mutation"] != "None" for r in expected[1:] for a in r["agents"])
    # Only rank 0 speaks and writes its outputs.
    assert two[0].stdout.count("outputs in") == 1


@pytest.mark.slow
def test_a_checkpoint_of_two_processes_resumes_on_one(tmp_path):
    """Two generations on two processes, the third resumed on one: the history of a run
    on one process throughout."""
    whole = one_process(train_command(manifest(tmp_path, PPO), tmp_path / "whole"))
    short = manifest(tmp_path, PPO, "short.yaml", max_steps=2048)
    first = launch(train_command(short, tmp_path / "split"), 2)
    assert_ok(whole, *first)
    resumed = manifest(tmp_path, PPO, "short.yaml")  # the budget raised to the whole run's
    rest = one_process(train_command(resumed, tmp_path / "split", "--resume"))
    assert_ok(rest)
    assert history(tmp_path / "split") == history(tmp_path / "whole")


@pytest.mark.slow
def test_too_few_agents_for_the_processes_is_refused_before_the_first_step(tmp_path):
    path = manifest(tmp_path, PPO, pop_size=1)
    runs = launch(train_command(path, tmp_path / "out"), 2)
    for run in runs:
        assert run.returncode == 1
    assert "training.pop_size: 1 agents cannot be shared among 2 processes" in runs[0].stderr
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


# -- cross-rank cloning ---------------------------------------------------------------------
CLONING = """
import copy, torch
from agilerl.algorithms.dqn import DQN
from agilerl.distributed import join
from agilerl.hpo import Mutations, TournamentSelection
from agilerl.training.evolution import next_generation
import gymnasium as gym

group = join("cpu")
space = gym.spaces.Box(-1, 1, (3,))
actions = gym.spaces.Discrete(2)
# Slot r lives on rank r; rank 1's agent is the fitter one, so the elite slot 0 (rank 0)
# is a clone of an agent on another rank.
agent = DQN(space, actions, index=group.rank, lr=1e-3 * (group.rank + 1), seed=10 + group.rank)
agent.fitness.append(float(group.rank))
batch = {"obs": torch.randn(8, 3), "action": torch.randint(0, 2, (8,)),
         "reward": torch.randn(8), "next_obs": torch.randn(8, 3), "done": torch.zeros(8)}
agent.learn(batch)  # the optimiser now has state worth moving
selection = TournamentSelection(2, elitism=True, population_size=2, rand_seed=1)
mutation = Mutations(no_mutation=1, architecture=0, parameters=0, activation=0, rl_hp=0,
                     rand_seed=1)
# What rank 1 must send: the clone a copy of its agent makes (cloning draws from the
# parent's generator, so the copy is taken before next_generation clones the agent).
expected = copy.deepcopy(agent).clone(index=1) if group.rank == 1 else None
roster = [(0, 0.0), (1, 1.0)]
children = next_generation({group.rank: agent}, selection, mutation, group, roster)
if group.rank == 1:
    expected.mut = "None (elite)"  # what mutation records on the elite it leaves alone
    group.send(expected.state_dict(), 0)
else:
    want = group.recv(1)
    got = children[0].state_dict()
    def same(a, b, where):
        if torch.is_tensor(a):
            assert torch.equal(a, b), where
        elif isinstance(a, dict):
            assert a.keys() == b.keys(), where
            for k in a: same(a[k], b[k], f"{where}.{k}")
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b)): same(x, y, f"{where}[{i}]")
        else:
            assert a == b, (where, a, b)
    same(got, want, "agent")
    assert children[0].index == 1 and children[0].lr == 2e-3
    assert got["optimizers"], "the optimiser state came along"
    print("IDENTICAL")
"""


@pytest.mark.slow
def test_an_agent_cloned_from_another_rank_arrives_identical(tmp_path):
    script = tmp_path / "cloning.py"
    script.write_text(CLONING)
    runs = launch([str(script)], 2)
    assert_ok(*runs)
    assert "IDENTICAL" in runs[0].stdout


# -- a dead rank ----------------------------------------------------------------------------
LONG = {**PPO, "training": {**PPO["training"], "max_steps": 10_000_000, "evo_steps": 512}}


@pytest.mark.parametrize("victim", [1, 0], ids=["worker", "rank-0"])
@pytest.mark.slow
def test_killing_one_rank_stops_the_other_naming_it_and_the_run_resumes(tmp_path, victim):
    path = manifest(tmp_path, LONG)
    out = tmp_path / "out"
    checkpoint = out / "checkpoint.pt"
    procs = start(train_command(path, out), 2, env={ENV_VAR: "4"})
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert checkpoint.exists(), finished(procs[0]).stderr[-2000:]
    procs[victim].kill()
    killed = time.monotonic()
    survivor = procs[1 - victim]
    try:
        survivor.wait(timeout=60)
    except subprocess.TimeoutExpired:
        survivor.kill()
        pytest.fail("the surviving rank kept waiting for the killed one")
    waited = time.monotonic() - killed
    procs[victim].wait()
    lines = finished(survivor).stderr
    assert survivor.returncode == EXIT_CODE, lines[-2000:]
    assert f"rank {victim}" in lines.splitlines()[-1] and "resume the run" in lines
    assert waited < 4 * 4 + 10  # a few heartbeat timeouts at most, never the collectives' hours
    assert not (out / "history.json").exists()  # the killed run wrote no final outputs
    # The run resumes from its last checkpoint, here on one process, for a few steps more.
    resumed = one_process(train_command(path, out, "--resume", "--set", "training.max_steps=2048"))
    assert_ok(resumed)
    assert "outputs in" in resumed.stdout


def test_a_launcher_less_rank_with_world_size_set_gets_a_clear_error(tmp_path):
    path = manifest(tmp_path, PPO)
    unset = ("RANK", "MASTER_ADDR", "MASTER_PORT")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    run = subprocess.run(
        [sys.executable, *train_command(path, tmp_path / "out")],
        env={**env, "WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == EXIT_CODE
    assert "RANK / MASTER_ADDR / MASTER_PORT are missing" in run.stderr


# -- every RL family shards alike ---------------------------------------------------------
FAMILIES = {
    "MADDPG": ("maddpg", 128, []),  # multi-agent, off-policy: a shared multi-agent buffer
    "NeuralUCB": ("neural_ucb", 50, []),  # bandits: a shared memory of pulls
    "CQN": ("cqn", 100, ["environment.dataset_path={dataset}"]),  # offline: a dataset
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.slow
def test_the_other_rl_families_give_the_history_of_one_process_on_two(tmp_path, family):
    config, steps, sets = FAMILIES[family]
    dataset = tmp_path / "data.h5"
    if "CQN" == family:
        collect = ["-m", "agilerl", "dataset", "collect", "CartPole-v1", "-o", str(dataset)]
        assert_ok(one_process([*collect, "--steps", "500"]))
    overrides = [
        f"training.evo_steps={steps}",
        f"training.max_steps={3 * steps}",
        "training.seed=3",
        "training.eval_steps=50",
        "training.pop_size=2",  # one agent per rank: selection still crosses ranks
        "training.cohorts=false",  # bit-equal histories (see the DQN document)
        *(item.format(dataset=dataset) for item in sets),
    ]
    extra = [arg for item in overrides for arg in ("--set", item)]
    path = ROOT / "configs" / f"{config}.yaml"
    one = one_process(train_command(path, tmp_path / "one", *extra))
    two = launch(train_command(path, tmp_path / "two", *extra), 2)
    assert_ok(one, *two)
    expected = history(tmp_path / "one")
    assert len(expected) == 3
    assert history(tmp_path / "two") == expected


@pytest.mark.slow
@pytest.mark.parametrize("base", [DQN, PPO], ids=["DQN", "PPO"])
def test_a_cohort_run_on_two_processes_trains_every_slot(tmp_path, base):
    """With cohorts on, each rank forms the cohorts of its own agents: the run trains and
    selects across ranks as always, every slot recorded every generation; its numbers
    equal the one-process run's only up to rounding (other cohorts), so not compared."""
    # weights mutate, shapes and batch sizes do not: each rank's two agents stay a cohort
    probabilities = {"no_mut": 0.5, "arch_mut": 0.0, "new_layer": 0.0, "params_mut": 0.5,
                     "act_mut": 0.0, "rl_hp_mut": 0.0}  # fmt: skip
    mutation = {**base["mutation"], "probabilities": probabilities}
    document = {**base, "training": {**base["training"], "cohorts": True}, "mutation": mutation}
    path = manifest(tmp_path, document)
    two = launch(train_command(path, tmp_path / "two"), 2)
    assert_ok(*two)
    records = history(tmp_path / "two")
    assert len(records) == 3
    assert all(len(record["agents"]) == 4 for record in records)
    assert all(np.isfinite(a["fitness"]) for record in records for a in record["agents"])


@pytest.mark.slow
def test_a_wall_clock_limit_stops_every_rank_at_the_same_generation(tmp_path):
    """Each rank measures its own clock; the run stops on the slowest rank's, which every
    rank was told, so no rank waits for a generation the others never start."""
    path = manifest(tmp_path, LONG, max_wall_seconds=3.0)
    runs = launch(train_command(path, tmp_path / "out"), 2, timeout=120)
    assert_ok(*runs)
    records = json.loads((tmp_path / "out" / "history.json").read_text())
    assert 1 <= len(records) and records[-1]["steps"] < LONG["training"]["max_steps"]


@pytest.mark.slow
def test_a_run_that_draws_its_seed_draws_one_for_every_rank(tmp_path):
    """A manifest without a seed: rank 0's draw is the run's, so both ranks build the same
    population and plan the same selection (two seeds would split the run apart)."""
    document = {**PPO, "training": {k: v for k, v in PPO["training"].items() if k != "seed"}}
    path = manifest(tmp_path, document, max_steps=2048)
    runs = launch(train_command(path, tmp_path / "out"), 2, env={ENV_VAR: "10"}, timeout=180)
    assert_ok(*runs)
    seed = yaml.safe_load((tmp_path / "out" / "manifest.yaml").read_text())["training"]["seed"]
    again = manifest(tmp_path, PPO, "again.yaml", max_steps=2048, seed=seed)
    assert_ok(one_process(train_command(again, tmp_path / "again")))
    assert history(tmp_path / "out") == history(tmp_path / "again")


def _rank_pid(parent: int, rank: int, deadline: float) -> int:
    """The pid of ``rank`` among the processes ``parent`` (the launcher) started."""
    while time.monotonic() < deadline:
        for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
            try:
                environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"RANK={rank}".encode() in environ:
                return int(child)
        time.sleep(0.1)
    raise AssertionError(f"no rank {rank} under pid {parent}")


@pytest.mark.slow
def test_agilerl_train_processes_2_reports_a_killed_rank_in_one_line(tmp_path):
    """`--processes 2` (the launcher in the agilerl process): a rank killed is the
    documented line and exit status 75, not torchrun's ChildFailedError traceback."""
    path = manifest(tmp_path, LONG)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, *train_command(path, out, "--processes", "2")],
        cwd=ROOT,
        env={**os.environ, ENV_VAR: "4", "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    try:
        while not (out / "checkpoint.pt").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(_rank_pid(proc.pid, 1, deadline), signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_CODE, stderr[-3000:]
    assert "Traceback" not in stderr and "ChildFailedError" not in stderr, stderr[-3000:]
    assert stderr.splitlines()[-1] == (
        "agilerl: rank 1 ended (killed by SIGKILL) and the run stopped on every rank; "
        f"resume the run with: agilerl train {path} --out {out} --processes 2 --quiet --resume"
    )
