"""An evaluation episode that never ends is cut at the evaluation cap, once warned of, when
``training.eval_steps`` is unset (issue 47); the pre-flight counts an episode as the most
it can run."""

from __future__ import annotations

import inspect
import shutil
import warnings

import pytest
from support.endless import Endless

from agilerl.cli import main
from agilerl.families.multi_agent.loops import team_evaluation
from agilerl.families.multi_agent.vector import ParallelVecEnv
from agilerl.trainer import LocalTrainer
from agilerl.training import evaluation_cap
from agilerl.training.evaluation_cap import EvaluationCutWarning
from agilerl.training.preflight import PreflightError
from agilerl.training.state import RunState
from agilerl.training.work import evaluation_episode

#: A cap a test reaches in moments (the real one is 100,000 steps).
CAP = 50
TINY = {"max_steps": 64, "evo_steps": 32, "pop_size": 2, "seed": 0}
NET = {"latent_dim": 8, "encoder_config": {"hidden_size": [8]}, "head_config": {"hidden_size": [8]}}


@pytest.fixture
def small_cap(monkeypatch):
    monkeypatch.setattr(evaluation_cap, "EVAL_EPISODE_CAP", CAP)


def cut_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if w.category is EvaluationCutWarning]


MESSAGE = (
    f"training.eval_steps: an evaluation episode ran {CAP} steps without ending and was cut "
    "there, its return so far taken as its score (eval_steps is unset, and this "
    "environment's episodes do not end by themselves); set training.eval_steps to the "
    "steps an evaluation episode should run"
)


def test_a_never_ending_env_given_in_python_trains_to_the_end_warned_once(small_cap):
    trainer = LocalTrainer("DQN", {"num_envs": 2}, TINY, network=NET, env=Endless)
    with pytest.warns(EvaluationCutWarning) as caught:
        _, fitnesses = trainer.train(verbose=False)
    assert cut_warnings(caught) == [MESSAGE]  # 2 generations x 2 agents: one warning
    assert fitnesses == [CAP, CAP]  # reward 1 a step, cut at the cap
    history = trainer.state.history
    assert len(history) == 2 and trainer.state.finished == "max_steps"
    # every evaluation step is counted: 2 copies x the cap, beside 32 training steps
    assert all(r["env_steps"] == 32 + 2 * CAP for g in history for r in g["agents"])


def test_a_never_ending_entry_point_trains_to_the_end_warned_once(small_cap, tmp_path):
    """From a manifest's entry point: a population of two, evaluated together (a cohort)."""
    shutil.copy(inspect.getfile(Endless), tmp_path / "endless.py")
    manifest = tmp_path / "endless.yaml"
    manifest.write_text(
        "version: 1\n"
        "algorithm: {name: DQN, batch_size: 16, learn_step: 4}\n"
        "environment: {name: endless, entrypoint: endless.py:Endless, num_envs: 2}\n"
        f"network: {NET}\n"
        f"training: {TINY}\n"
    )
    with pytest.warns(EvaluationCutWarning) as caught:
        assert main(["train", str(manifest), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert cut_warnings(caught) == [MESSAGE]
    # as the command prints it (pytest holds warnings back from stderr): one line
    shown = warnings.formatwarning(MESSAGE, EvaluationCutWarning, "evolution.py", 1)
    assert shown == f"agilerl: warning: {MESSAGE}\n"


def test_an_eval_steps_the_run_sets_cuts_episodes_without_a_warning(small_cap):
    trainer = LocalTrainer(
        "DQN", {"num_envs": 2}, {**TINY, "eval_steps": 20}, network=NET, env=Endless
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, fitnesses = trainer.train(verbose=False)
    assert cut_warnings(caught) == [] and fitnesses == [20, 20]
    # set above the cap, eval_steps replaces it: the user's way to raise it
    trainer = LocalTrainer(
        "DQN", {"num_envs": 1}, {**TINY, "pop_size": 1, "eval_steps": 3 * CAP}, env=Endless
    )
    assert trainer.train(verbose=False)[1] == [3 * CAP]


def test_a_team_evaluation_is_cut_at_the_cap_and_warned_of_once(monkeypatch):
    pytest.importorskip("pettingzoo", reason="the multiagent extra")
    from agilerl.algorithms.maddpg import MADDPG
    from agilerl.testing.cooperative import cue_game

    monkeypatch.setattr(evaluation_cap, "EVAL_EPISODE_CAP", 2)  # cue games end at step 4
    env = ParallelVecEnv([cue_game] * 2)
    agent = MADDPG(env.observation_spaces, env.action_spaces, seed=0)
    state = RunState(seed=0)
    with pytest.warns(EvaluationCutWarning) as caught:
        for _ in range(2):
            _, steps, _ = team_evaluation(env, None, 1, True)(agent, 0, state)
            assert steps == 2 * 2 and agent.eval_cut
    assert len(cut_warnings(caught)) == 1
    _, steps, _ = team_evaluation(env, 4, 1, True)(agent, 0, RunState(seed=0))
    assert steps == 4 * 2 and not agent.eval_cut  # the episodes end: nothing is cut


# --- the pre-flight counts an evaluation episode as the most it can run -----------------


def episode_counted(trainer: LocalTrainer) -> tuple[str, int]:
    factor = evaluation_episode(trainer.context)
    return factor.path, factor.value


def test_an_episode_counts_its_time_limit_its_eval_steps_or_the_cap():
    cartpole = {"name": "CartPole-v1", "num_envs": 2}
    assert episode_counted(LocalTrainer("DQN", cartpole, TINY)) == (
        "training.eval_steps (unset: CartPole-v1's time limit)",
        500,
    )
    limited = {**cartpole, "config": {"max_episode_steps": 40}}  # as gymnasium.make takes it
    assert episode_counted(LocalTrainer("DQN", limited, TINY))[1] == 40
    assert episode_counted(LocalTrainer("DQN", cartpole, {**TINY, "eval_steps": 7})) == (
        "training.eval_steps",
        7,
    )
    # user code decides when its episodes end, if ever: the cap
    endless = LocalTrainer("DQN", {"num_envs": 2}, TINY, env=Endless)
    assert episode_counted(endless) == ("training.eval_steps (unset: the evaluation cap)", 100_000)


def test_a_never_ending_env_is_counted_at_the_cap_and_refused_above_the_ceiling(monkeypatch):
    """Counted as 10 steps an episode, this run passed the pre-flight and never ended."""
    monkeypatch.setenv("AGILERL_MAX_WORK", str(10**6))
    section = {"num_envs": 16}
    one = {**TINY, "pop_size": 1, "max_steps": 1000, "evo_steps": 1000}
    trainer = LocalTrainer("DQN", section, one, env=Endless)
    with pytest.raises(PreflightError) as info:
        trainer.preflight(available=2**30)
    assert str(info.value).startswith(
        "training.eval_steps (unset: the evaluation cap): 100,000 makes the evaluations "
        "1,600,000 steps (training.pop_size 1 x generations 1 x training.eval_loop 1 x "
        "environment.num_envs 16 x training.eval_steps (unset: the evaluation cap) 100,000); "
    )
    bounded = LocalTrainer("DQN", section, {**one, "eval_steps": 20}, env=Endless)
    assert bounded.preflight(available=2**30) is not None


def test_a_bandit_evaluation_counts_its_pulls():
    from support import ROOT

    from agilerl.models.manifest import load_manifest

    trainer = LocalTrainer.from_manifest(load_manifest(ROOT / "configs" / "neural_ucb.yaml"))
    evaluations = next(
        w for w in trainer.family.work(trainer.context) if w.what == "the evaluations"
    )
    pulls = evaluations.factors[-1]  # the manifest leaves eval_steps to the bandit: 500
    assert (pulls.path, pulls.value) == ("training.eval_steps", 500)


# --- a saved agent's evaluation (agilerl evaluate, evaluate_agent) is bounded too --------

SAVED_MESSAGE = (
    f"max_episode_steps: an evaluation episode ran {CAP} steps without ending and was cut "
    "there, its return so far taken as its score (max_episode_steps is unset, and this "
    "environment's episodes do not end by themselves); set max_episode_steps (agilerl "
    "evaluate --max-episode-steps) to the steps an evaluation episode should run"
)


def _endless_agent(tmp_path):
    from agilerl.algorithms import DQN

    env = Endless()
    agent = DQN(env.observation_space, env.action_space, net_config=NET, seed=0)
    shutil.copy(inspect.getfile(Endless), tmp_path / "endless.py")
    agent.environment = {
        "name": "endless",
        "entrypoint": "endless.py:Endless",
        "path": str(tmp_path),
    }
    agent.save_checkpoint(tmp_path / "a.pt")
    return agent


def test_evaluating_a_saved_agent_on_a_never_ending_env_stops_at_the_cap_warned_once(
    small_cap, tmp_path
):
    from agilerl import evaluate_agent

    agent = _endless_agent(tmp_path)
    with pytest.warns(EvaluationCutWarning) as caught:
        result = evaluate_agent(agent, Endless(), episodes=3)
    assert cut_warnings(caught) == [SAVED_MESSAGE]  # three cut episodes, one warning
    assert result.lengths == [CAP] * 3 and result.returns == [float(CAP)] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvaluationCutWarning)  # the user's length: no word
        assert evaluate_agent(agent, Endless(), episodes=1, max_episode_steps=7).lengths == [7]


def test_agilerl_evaluate_ends_on_a_never_ending_env_with_one_warning(small_cap, tmp_path):
    _endless_agent(tmp_path)
    args = ["evaluate", str(tmp_path / "a.pt"), "--episodes", "2", "--trust-agent-code"]
    with pytest.warns(EvaluationCutWarning) as caught:
        assert main(args) == 0
    assert cut_warnings(caught) == [SAVED_MESSAGE]
    # as the command prints it (pytest holds warnings back from stderr): one line
    shown = warnings.formatwarning(SAVED_MESSAGE, EvaluationCutWarning, "evaluation.py", 1)
    assert shown == f"agilerl: warning: {SAVED_MESSAGE}\n"


def test_a_saved_team_on_a_never_ending_env_stops_at_the_cap(monkeypatch, tmp_path):
    pytest.importorskip("pettingzoo", reason="the multiagent extra")
    from agilerl.algorithms.maddpg import MADDPG
    from agilerl.families.multi_agent.family import MultiAgentFamily
    from agilerl.testing.cooperative import cue_game

    monkeypatch.setattr(evaluation_cap, "EVAL_EPISODE_CAP", 2)  # cue games end at step 4
    env = ParallelVecEnv([cue_game])
    agent = MADDPG(env.observation_spaces, env.action_spaces, seed=0)
    env.close()
    cue = {"name": "cue", "entrypoint": "agilerl.testing.cooperative:cue_game"}
    family = MultiAgentFamily()
    with pytest.warns(EvaluationCutWarning) as caught:
        result = family.evaluate_saved(agent, cue, episodes=2, seed=0, deterministic=True)
    assert result.lengths == [2, 2] and len(cut_warnings(caught)) == 1
    result = family.evaluate_saved(
        agent, cue, episodes=1, seed=0, deterministic=True, max_episode_steps=9
    )
    assert result.lengths == [4]  # the episode ends by itself: nothing cut
