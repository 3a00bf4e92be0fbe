"""Natively vectorised CartPole (``environment.vectorize: native``): same-step autoreset
over gymnasium's CartPoleVectorEnv, its dynamics against SyncVectorEnv's, seeding, and a
run that trains on it end to end."""

import copy

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.families.single_agent.native import SameStepAutoreset
from agilerl.models.env import GymEnvSpec
from agilerl.trainer import LocalTrainer

#: CartPole's failure thresholds (the cart's position, the pole's angle in radians).
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * np.pi / 360


def native(n=4, **fields):
    return make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=n, vectorize="native", **fields))


def random_actions(seed, n, steps):
    return np.random.default_rng(seed).integers(0, 2, size=(steps, n))


def test_each_vectorize_value_builds_its_kind():
    built = {
        kind: make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2, vectorize=kind))
        for kind in ("native", "sync", "async")
    }
    try:
        assert isinstance(built["native"], SameStepAutoreset)
        assert isinstance(built["native"].env, CartPoleVectorEnv)
        assert isinstance(built["sync"], SyncVectorEnv)
        assert isinstance(built["async"], AsyncVectorEnv)
        for env in built.values():
            assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
            assert env.num_envs == 2 and env.reset(seed=0)[0].shape == (2, 4)
    finally:
        for env in built.values():
            env.close()
    # unset: native where CartPole has it, whatever environment.sync says
    for sync in (True, False):
        env = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2, sync=sync))
        assert isinstance(env, SameStepAutoreset)


def test_a_refusal_is_an_environment_spec_error_before_anything_is_built():
    with pytest.raises(EnvironmentSpecError) as err:
        make_vector_env(GymEnvSpec(name="Pendulum-v1", vectorize="native"))
    assert str(err.value) == (
        "environment.vectorize: 'native' is not available: 'Pendulum-v1' has no native "
        "vector environment here (those that do: CartPole-v0, CartPole-v1); use 'sync' or 'async'"
    )


def test_config_goes_to_the_native_constructor_and_a_bad_key_names_the_field():
    env = native(2, config={"max_episode_steps": 5})
    env.reset(seed=0)
    truncated = [env.step(np.zeros(2, dtype=np.int64))[3] for _ in range(5)][-1]
    assert truncated.all()  # the config's time limit of 5 applied
    with pytest.raises(
        EnvironmentSpecError, match=r"^environment.config: CartPole-v1 \(native\): "
    ):
        native(2, config={"bogus": 1})


def test_same_step_autoreset_final_obs_exactly_where_an_episode_ended():
    env = native(4, config={"max_episode_steps": 25})  # time-limit cuts too
    obs, info = env.reset(seed=0)
    assert info == {} and obs.dtype == np.float32
    kinds = set()
    for action in random_actions(0, 4, 400):
        obs, reward, terminated, truncated, info = env.step(action)
        ended = terminated | truncated
        assert reward.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
        # every step is a real step of every copy: no step spent on a reset (next-step
        # autoreset would give the restarted copy a reward of 0)
        assert np.all(reward == 1.0)
        if not ended.any():
            assert info == {}
            continue
        assert set(info) == {"final_obs", "_final_obs", "final_info", "_final_info"}
        assert np.array_equal(info["_final_obs"], ended)
        assert np.array_equal(info["_final_info"], ended)
        assert info["final_info"] == {}
        for i in range(4):
            final = info["final_obs"][i]
            if not ended[i]:
                assert final is None
                continue
            assert final.dtype == np.float32 and final.shape == (4,)
            if terminated[i]:  # the last observation is the failed one
                assert abs(final[0]) > X_LIMIT or abs(final[2]) > THETA_LIMIT
                kinds.add("terminated")
            else:
                kinds.add("truncated")
            # the observation returned is a fresh start (CartPole starts within 0.05)
            assert np.all(np.abs(obs[i]) <= 0.05)
            assert not np.array_equal(obs[i], final)
    assert kinds == {"terminated", "truncated"}


def test_the_same_info_keys_and_types_as_sync_vector_env():
    def ending_info(env):
        env.reset(seed=0)
        for _ in range(100):  # pushing right ends every episode within ~10 steps
            *_, info = env.step(np.ones(2, dtype=np.int64))
            if info:
                return info
        raise AssertionError("no episode ended")

    ours = ending_info(native(2))
    sync = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2, vectorize="sync"))
    theirs = ending_info(sync)
    assert set(ours) == set(theirs)
    for key in ("final_obs", "_final_obs", "_final_info"):
        assert ours[key].dtype == theirs[key].dtype and ours[key].shape == theirs[key].shape
    assert ours["final_info"] == theirs["final_info"] == {}


def test_a_seed_reproduces_every_episode_and_another_seed_does_not():
    def trajectory(seed):
        env = native(3)
        rows = [env.reset(seed=seed)[0]]
        for action in random_actions(1, 3, 200):
            obs, reward, terminated, truncated, info = env.step(action)
            rows += [obs, reward, terminated, truncated]
            rows += [info["final_obs"][i] for i in np.flatnonzero(info.get("_final_obs", []))]
        return rows

    first, again, other = trajectory(7), trajectory(7), trajectory(8)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not np.array_equal(first[0], other[0])


def test_the_dynamics_are_sync_vector_envs_from_equal_states():
    """From equal states, every step gives the same rewards, terminations, truncations
    and observations as SyncVectorEnv of CartPole-v1 (only the starts differ: one
    generator draws them here, so each step copies the native state into Sync's copies)."""
    n, config = 4, {"max_episode_steps": 40}
    ours = native(n, config=config)
    sync = make_vector_env(
        GymEnvSpec(name="CartPole-v1", num_envs=n, vectorize="sync", config=config)
    )
    ours.reset(seed=0)
    sync.reset(seed=0)
    inner = ours.unwrapped

    def copy_state():
        for i, copy_env in enumerate(sync.envs):
            copy_env.unwrapped.state = inner.state[:, i].copy()

    copy_state()
    ended_count = 0
    for action in random_actions(2, n, 600):
        got = ours.step(action)
        want = sync.step(action)
        for a, b in zip(got[1:4], want[1:4], strict=True):  # reward, terminated, truncated
            assert np.array_equal(a, b)
        ended = got[2] | got[3]
        live = ~ended
        assert np.allclose(got[0][live], want[0][live], rtol=1e-6, atol=1e-6)
        for i in np.flatnonzero(ended):
            assert np.allclose(got[4]["final_obs"][i], want[4]["final_obs"][i], atol=1e-6)
        ended_count += int(ended.sum())
        copy_state()
    assert ended_count > 20  # the comparison went through many episode ends
    ours.close()
    sync.close()


TINY = {
    "network": {
        "arch": "mlp",
        "latent_dim": 16,
        "encoder_config": {"hidden_size": [16]},
        "head_config": {"hidden_size": [16]},
    },
    "environment": {"name": "CartPole-v1", "num_envs": 4, "vectorize": "native"},
}
TINY_DQN = {
    **TINY,
    "algorithm": {"name": "DQN", "batch_size": 32, "learn_step": 4},
    "training": {"max_steps": 400, "evo_steps": 200, "pop_size": 2, "eval_steps": 50, "seed": 1},
    "replay_buffer": {"max_size": 1_000},
}
TINY_PPO = {
    **TINY,
    "algorithm": {"name": "PPO", "learn_step": 64, "batch_size": 32, "num_envs": 4},
    "training": {"max_steps": 256, "evo_steps": 128, "pop_size": 1, "eval_steps": 50, "seed": 1},
}


@pytest.mark.parametrize("document", [TINY_DQN, TINY_PPO], ids=["DQN", "PPO"])
def test_a_manifest_trains_on_native_cartpole_end_to_end(document):
    trainer = LocalTrainer.from_manifest(copy.deepcopy(document))
    assert isinstance(trainer.family.make_env(trainer.context), SameStepAutoreset)
    population, fitnesses = trainer.train(verbose=False)
    state = trainer.state
    assert state.finished == "max_steps" and state.steps >= document["training"]["max_steps"]
    assert len(population) == len(fitnesses) == document["training"]["pop_size"]
    assert all(np.isfinite(fitnesses))
    # the copies stepped: every generation took its budget's env steps on 4 copies
    assert state.history[-1]["env_steps"] >= document["training"]["max_steps"]


def test_a_seeded_run_on_native_cartpole_repeats_exactly():
    def fitnesses():
        trainer = LocalTrainer.from_manifest(copy.deepcopy(TINY_DQN))
        return trainer.train(verbose=False)[1], trainer.state.history[-1]["env_steps"]

    first = fitnesses()
    assert fitnesses() == first
