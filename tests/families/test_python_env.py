"""Environments given in Python (``LocalTrainer(env=...)``): an environment object or a
factory, for single-agent and multi-agent runs, learnt from as a named one is."""

from __future__ import annotations

import functools
import itertools
import re

import gymnasium as gym
import numpy as np
import pytest

from agilerl.families.python_env import PythonEnv
from agilerl.testing.probe_envs import ActionRewardEnv
from agilerl.trainer import LocalTrainer
from agilerl.training.errors import TrainerError

SMALL = {"max_steps": 1_024, "evo_steps": 512, "pop_size": 1, "seed": 0, "eval_steps": 20}


def test_objects_and_factories_are_told_apart():
    env = ActionRewardEnv()
    given = PythonEnv.of(env)
    assert given.instance is env and given.copies == 1 and given.label == "ActionRewardEnv"
    assert given.factory() is env
    for factory in (ActionRewardEnv, functools.partial(ActionRewardEnv, 3), lambda: env):
        made = PythonEnv.of(factory)
        assert made.instance is None and made.copies is None
    assert PythonEnv.of(ActionRewardEnv).label == "ActionRewardEnv"


def test_an_environment_object_trains_as_one_copy_and_is_left_open():
    env = ActionRewardEnv(n=3, rewarded_action=2)
    trainer = LocalTrainer("DQN", training={**SMALL, "max_steps": 3_000}, env=env)
    assert trainer.environment.num_envs == 1 and trainer.environment.name == "ActionRewardEnv"
    trainer.train(verbose=False)
    agent = trainer.best_agent
    # learnt from the object: the rewarded action is the greedy one
    assert agent.predict(np.zeros(1, np.float32), deterministic=True)[0] == 2
    assert agent.environment is None  # nothing could rebuild it: not recorded
    env.reset(seed=0)  # the user's object still works after the run


def test_a_factory_gives_as_many_copies_as_the_section_asks_and_learns():
    made = []

    def make() -> gym.Env:
        made.append(ActionRewardEnv(n=2, rewarded_action=1))
        return made[-1]

    trainer = LocalTrainer("PPO", {"num_envs": 4}, training=SMALL, env=make)
    trainer.train(verbose=False)
    assert len({id(env) for env in made}) >= 4  # one per copy (and the pre-flight's)
    assert trainer.best_agent.fitness[-1] == pytest.approx(1.0)  # always the rewarded arm


def test_a_factory_takes_the_sections_config_as_keywords():
    trainer = LocalTrainer(
        "DQN", {"num_envs": 1, "config": {"n": 4, "rewarded_action": 3}}, SMALL, env=ActionRewardEnv
    )
    trainer.train(verbose=False)
    assert trainer.best_agent.action_space == gym.spaces.Discrete(4)


def test_what_an_object_cannot_do_is_refused_naming_the_field():
    env = ActionRewardEnv()
    with pytest.raises(TrainerError, match=r"environment\.num_envs: 4 copies of one .*factory"):
        LocalTrainer("DQN", {"num_envs": 4}, SMALL, env=env)
    with pytest.raises(TrainerError, match=r"environment: 'CartPole-v1' names .* env= gives one"):
        LocalTrainer("DQN", "CartPole-v1", SMALL, env=env)
    with pytest.raises(TrainerError, match=r"environment: give a Gymnasium id"):
        LocalTrainer("DQN", training=SMALL)
    with pytest.raises(TrainerError, match=r"env: a offline run takes its environment"):
        LocalTrainer("CQN", training=SMALL, env=env)


def test_a_pettingzoo_factory_trains_a_multi_agent_team():
    pytest.importorskip("pettingzoo", reason="the multiagent extra")
    from agilerl.testing.cooperative import cue_game

    trainer = LocalTrainer(
        "IPPO",
        {"num_envs": 2},
        {"max_steps": 256, "evo_steps": 128, "pop_size": 1, "seed": 0},
        env=cue_game,
    )
    _, fitnesses = trainer.train(verbose=False)
    assert trainer.environment.name == "cue_game" and np.isfinite(fitnesses[0])


class _NoInfo(ActionRewardEnv):
    """reset returns the observation alone: Gymnasium's API wants (obs, info)."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed, options=options)[0]


def test_gymnasiums_checker_refuses_a_broken_environment_object_before_training():
    from agilerl.families.environments import EnvironmentSpecError

    trainer = LocalTrainer("DQN", training=SMALL, env=_NoInfo)
    with pytest.raises(
        EnvironmentSpecError, match=r"^env _NoInfo: fails Gymnasium's environment checker"
    ):
        trainer.train(verbose=False)


def _two_class_table(rows: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """A table whose class is the sign of the first two features' sum: a bandit that
    learns it pulls the right arm nearly always."""
    features = np.random.default_rng(0).normal(size=(rows, 4)).astype(np.float32)
    return features, np.where(features[:, 0] + features[:, 1] > 0, "yes", "no")


BANDIT_BUDGET = {"max_steps": 1_500, "evo_steps": 500, "eval_steps": 200, "pop_size": 2, "seed": 0}


def test_a_bandit_given_in_python_learns_its_tables_held_in_memory():
    from agilerl import train_agent
    from agilerl.families.bandits import BanditEnv

    features, targets = _two_class_table()
    trainer = LocalTrainer("NeuralUCB", training=BANDIT_BUDGET, env=BanditEnv(features, targets))
    _, fitnesses = trainer.train(verbose=False)
    assert trainer.environment.name == "BanditEnv" and trainer.environment.features is None
    assert max(fitnesses) >= 0.95  # the reward rate of its last evaluation
    # a factory, named by its bandit's own name, through the one-agent path
    agent = train_agent(
        "NeuralTS", lambda: BanditEnv(features, targets, name="signs"), steps=1_000, verbose=False
    )
    assert agent.fitness[-1] >= 0.9
    assert agent.environment is None  # nothing on disk could rebuild it


def test_a_bandit_in_python_refuses_tables_beside_it_and_objects_that_are_not_bandits():
    from agilerl.families.bandits import BanditEnv
    from agilerl.training.preflight import PreflightError

    bandit = BanditEnv(*_two_class_table())
    tables = {"features": "a.csv", "targets": "b.csv"}
    with pytest.raises(TrainerError, match=r"environment\.features: env= gives the bandit"):
        LocalTrainer("NeuralUCB", tables, BANDIT_BUDGET, env=bandit)
    with pytest.raises(TrainerError, match=r"environment\.num_envs: Extra inputs"):
        LocalTrainer("NeuralUCB", {"num_envs": 2}, BANDIT_BUDGET, env=bandit)
    trainer = LocalTrainer("NeuralUCB", training=BANDIT_BUDGET, env=ActionRewardEnv)
    with pytest.raises(PreflightError, match=r"env: ActionRewardEnv gave a ActionRewardEnv; .*"):
        trainer.train(verbose=False)


def test_a_bandit_manifest_without_its_tables_is_refused_by_validate_and_by_train(tmp_path, capsys):
    """The schema lets the tables be null for a bandit given in Python; a manifest has
    none, so both commands refuse it, naming the field, before any step."""
    from support import ROOT

    from agilerl.cli import main

    text = (ROOT / "configs" / "neural_ucb.yaml").read_text()
    manifest = tmp_path / "half.yaml"
    manifest.write_text(text.replace("  targets: data/iris_targets.csv\n", ""))
    assert main(["validate", str(manifest)]) == 1
    message = "environment.targets: a contextual bandit manifest names both tables"
    assert message in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["train", str(manifest), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (out / "best_agent.pt").exists()


def test_a_bandit_takes_a_dataframe_and_a_series_as_numpy_arrays():
    pd = pytest.importorskip("pandas")
    from agilerl.families.bandits import BanditEnv

    features, targets = _two_class_table(20)
    frame = BanditEnv(pd.DataFrame(features, columns=list("abcd")), pd.Series(targets))
    arrays = BanditEnv(features, targets)
    assert np.array_equal(frame.features, arrays.features)
    assert list(frame.arms) == list(arrays.arms) == ["no", "yes"]
    assert np.array_equal(frame.labels, arrays.labels)


#: The copies of a factory's environment, in this process or in worker processes.
VECTORISED = {
    "sync": {"num_envs": 2},
    "async": {"num_envs": 2, "vectorize": "async", "sync": False},
}


@pytest.mark.parametrize("vectorize", VECTORISED)
def test_a_factory_whose_spaces_change_between_calls_is_refused_naming_env(vectorize):
    """Gymnasium's vector env refused it with a bare RuntimeError from deep inside."""
    from agilerl.families.environments import EnvironmentSpecError

    sizes = itertools.count(2)

    def make() -> gym.Env:
        return ActionRewardEnv(n=next(sizes))  # another action space each call

    trainer = LocalTrainer("DQN", VECTORISED[vectorize], SMALL, env=make)
    with pytest.raises(EnvironmentSpecError) as info:
        trainer.train(verbose=False)
    assert re.fullmatch(
        r"env make: the environments it made differ in their action space \(Discrete\(\d+\), "
        r"then Discrete\(\d+\)\); the environment.num_envs copies are batched into one vector "
        r"env, so every call must make an environment with the same spaces",
        str(info.value),
    )
    assert trainer.population is None  # nothing trained


def test_a_factory_whose_observations_change_is_refused_naming_that_space():
    from agilerl.families.environments import EnvironmentSpecError

    names = itertools.cycle(["CartPole-v1", "CartPole-v1", "MountainCar-v0"])  # 4, then 2

    def shifting() -> gym.Env:
        return gym.make(next(names))

    trainer = LocalTrainer("DQN", {"num_envs": 2}, SMALL, env=shifting)
    with pytest.raises(EnvironmentSpecError, match=r"^env shifting: .* differ in their obs"):
        trainer.train(verbose=False)


@pytest.mark.parametrize("sync", [True, False], ids=["in this process", "in worker processes"])
def test_a_pettingzoo_factory_whose_spaces_change_between_calls_is_refused_naming_env(sync):
    """The batching's ``ValueError: could not broadcast input array from shape (4,) into
    shape (3,)`` from deep inside before."""
    pytest.importorskip("pettingzoo", reason="the multiagent extra")
    from agilerl.families.environments import EnvironmentSpecError
    from agilerl.testing.cooperative import cue_game

    sizes = itertools.count(2)

    def make():
        return cue_game(num_actions=next(sizes))  # other spaces each call

    trainer = LocalTrainer(
        "IPPO",
        {"num_envs": 2, "sync": sync},
        {"max_steps": 256, "evo_steps": 128, "pop_size": 1, "seed": 0},
        env=make,
    )
    with pytest.raises(EnvironmentSpecError) as info:
        trainer.train(verbose=False)
    assert re.fullmatch(
        r"env make: the environments it made differ in their observation space of agent "
        r"'seer_0' \(Box\(0.0, 1.0, \((\d+),\), float32\), then Box\(0.0, 1.0, "
        r"\((?!\1)\d+,\), float32\)\); the environment.num_envs copies are batched into one "
        r"vector env, so every call must make an environment with the same spaces",
        str(info.value),
    )
    assert trainer.population is None  # nothing trained
