"""Every command that runs torch takes its thread count by the rule ``agilerl train``
follows (:mod:`agilerl.training.threads`): one thread for small networks on the CPU,
``--threads`` / ``AGILERL_NUM_THREADS`` when given, torch's own count under
``OMP_NUM_THREADS``; the count before is back when the command returns.

Each command runs in-process up to its work (the training loop, the evaluation, the
collection, the tiny model), which is replaced by a probe that records torch's count.
The rule itself (``choose_threads``: the agent's size, the cores the environment workers
leave, the user's settings) is tested last.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from support import ROOT

from agilerl.algorithms import DQN, PPO
from agilerl.cli import main
from agilerl.training import threads as thread_rule

#: torch's count before each command: distinct from every count a command may choose.
BEFORE = 3
NET = {"encoder_config": {"hidden_size": [16]}, "head_config": {"hidden_size": [16]}}
SMALL_RUN = [
    "--set", "training.max_steps=100",
    "--set", "training.evo_steps=100",
    "--set", "training.pop_size=1",
    "--set", "environment.num_envs=1",
    "--set", "environment.sync=true",
]  # fmt: skip


class Probed(Exception):
    """Ends a command where its work would start."""


@pytest.fixture
def probe(monkeypatch):
    """``probe(owner, name)``: the count torch has when ``owner.name`` is called (after
    the call for the trainer's own setter), recorded in the returned list."""
    seen: list[int] = []

    def install(owner, name, after=False):
        real = getattr(owner, name)

        def probed(*args, **kwargs):
            if after:
                real(*args, **kwargs)
            seen.append(torch.get_num_threads())
            raise Probed

        monkeypatch.setattr(owner, name, probed)
        return seen

    return install


@pytest.fixture
def threads_before(monkeypatch):
    monkeypatch.delenv(thread_rule.ENV_VAR, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(thread_rule, "cores", lambda: 4)
    torch.set_num_threads(BEFORE)  # the autouse fixture of conftest puts 1 back after


def _agent_file(tmp_path):
    env = gym.make("CartPole-v1")
    agent = PPO(env.observation_space, env.action_space, net_config=NET, seed=0)
    agent.environment = {"name": "CartPole-v1"}
    path = tmp_path / "agent.pt"
    agent.save_checkpoint(path)
    return str(path)


def _train(tmp_path, probe):
    from agilerl.trainer import LocalTrainer

    seen = probe(LocalTrainer, "_set_threads", after=True)
    argv = ["train", str(ROOT / "configs/ppo.yaml"), "--out", str(tmp_path / "run"), "--quiet"]
    return [*argv, *SMALL_RUN], seen


def _evaluate(tmp_path, probe):
    from agilerl.families.single_agent.evaluation import GymEvaluation

    return ["evaluate", _agent_file(tmp_path)], probe(GymEvaluation, "evaluate_saved")


def _collect_random(tmp_path, probe):
    from agilerl.families.offline import collect

    argv = ["dataset", "collect", "CartPole-v1", "-o", str(tmp_path / "d.h5"), "--steps", "5"]
    return argv, probe(collect, "collect_transitions")


def _collect_agent(tmp_path, probe):
    argv, seen = _collect_random(tmp_path, probe)
    return [*argv, "--policy", _agent_file(tmp_path)], seen


def _llm_tiny(tmp_path, probe):
    from agilerl.llm import tiny

    return ["llm", "tiny", str(tmp_path / "assets")], probe(tiny, "build_tiny_assets")


COMMANDS = {
    "train": _train,
    "evaluate": _evaluate,
    "dataset collect (random)": _collect_random,
    "dataset collect (agent)": _collect_agent,
    "llm tiny": _llm_tiny,
}
#: Commands with a --threads option (llm tiny builds one tiny model: the rule alone).
WITH_OPTION = [name for name in COMMANDS if name != "llm tiny"]


def _run(argv):
    with pytest.raises(Probed):
        main(argv)
    assert torch.get_num_threads() == BEFORE  # the command's count ended with it


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_small_networks_run_on_one_thread(command, tmp_path, probe, threads_before):
    argv, seen = COMMANDS[command](tmp_path, probe)
    _run(argv)
    assert seen == [1]


@pytest.mark.parametrize("command", sorted(WITH_OPTION))
def test_threads_option_sets_the_count(command, tmp_path, probe, threads_before):
    argv, seen = COMMANDS[command](tmp_path, probe)
    _run([*argv, "--threads", "2"])
    assert seen == [2]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_environment_variables_win(command, tmp_path, probe, threads_before, monkeypatch):
    argv, seen = COMMANDS[command](tmp_path, probe)
    monkeypatch.setenv(thread_rule.ENV_VAR, "2")
    _run(argv)
    monkeypatch.delenv(thread_rule.ENV_VAR)
    monkeypatch.setenv("OMP_NUM_THREADS", str(BEFORE))  # torch's own setting stands
    _run(argv)
    assert seen == [2, BEFORE]


@pytest.mark.parametrize("command", ["evaluate", "dataset collect (random)"])
def test_more_threads_than_cores_is_one_line(command, tmp_path, probe, threads_before, capsys):
    argv, seen = COMMANDS[command](tmp_path, probe)
    assert main([*argv, "--threads", "5"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "agilerl: num_threads: 5 threads is more than the 4 CPU cores this process may "
        "run on (its affinity); give at most 4"
    )
    assert seen == []  # refused before the work


# --- the rule -----------------------------------------------------------------------------


@pytest.fixture
def no_thread_settings(monkeypatch):
    monkeypatch.delenv(thread_rule.ENV_VAR, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


def small_agent():
    env = gym.make("CartPole-v1")
    return DQN(env.observation_space, env.action_space)


def test_small_agents_on_the_cpu_run_on_one_thread(no_thread_settings, monkeypatch):
    monkeypatch.setattr(thread_rule, "cores", lambda: 4)
    cpu = torch.device("cpu")
    assert thread_rule.choose_threads(None, small_agent(), cpu, env_workers=0) == 1
    assert thread_rule.choose_threads(3, small_agent(), cpu, env_workers=0) == 3  # asked for


def test_large_agents_get_the_cores_the_env_workers_leave(no_thread_settings, monkeypatch):
    monkeypatch.setattr(thread_rule, "agent_parameters", lambda agent: 10**7)
    monkeypatch.setattr(thread_rule, "cores", lambda: 8)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
    cpu = torch.device("cpu")
    assert thread_rule.choose_threads(None, small_agent(), cpu, env_workers=3) == 5
    assert thread_rule.choose_threads(None, small_agent(), cpu, env_workers=16) == 1
    assert thread_rule.choose_threads(None, small_agent(), torch.device("cuda"), 0) is None


def test_thread_settings_of_the_user_win(no_thread_settings, monkeypatch):
    monkeypatch.setattr(thread_rule, "cores", lambda: 4)
    cpu = torch.device("cpu")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert thread_rule.choose_threads(None, small_agent(), cpu, env_workers=0) is None
    monkeypatch.setenv(thread_rule.ENV_VAR, "4")
    assert thread_rule.choose_threads(None, small_agent(), cpu, env_workers=0) == 4
    monkeypatch.setenv(thread_rule.ENV_VAR, "many")
    with pytest.raises(ValueError, match="AGILERL_NUM_THREADS='many': expected a positive"):
        thread_rule.choose_threads(None, small_agent(), cpu, env_workers=0)
