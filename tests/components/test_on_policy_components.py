"""The on-policy pieces every on-policy algorithm shares (agilerl.components.on_policy):
GAE with an active mask against hand-computed values (an inactive step, a time-limit cut),
discounted returns, the time-limit bootstrap, the collection loop's order, and that PPO,
recurrent PPO and IPPO go through them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from agilerl.components import on_policy

GAMMA, LAM = 0.9, 0.8


# -- GAE ----------------------------------------------------------------------------------
def _example():
    """Two environments, four steps (columns: env 0, env 1).

    env 0: every step active; step 1 was cut by a time limit (V(final obs) = 3), so it is
    done and its reward 2 is learnt as 2 + 0.9 * 3.
    env 1: absent at step 2, whose reward, value and done flag are garbage to be ignored.
    """
    learnt = on_policy.bootstrap_time_limits(
        np.array([2.0, 1.0], np.float32),
        np.array([False, False]),
        np.array([True, False]),
        GAMMA,
        lambda cut: np.array([3.0, -50.0], np.float32),
    )
    rewards = torch.tensor([[1.0, 1.0], [learnt[0], learnt[1]], [0.5, 9.0], [1.0, 1.0]])
    values = torch.tensor([[0.5, 1.0], [1.0, 0.5], [0.25, 7.0], [2.0, 0.5]])
    dones = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    active = torch.tensor([[True, True], [True, True], [True, False], [True, True]])
    last = torch.tensor([1.5, 2.0])
    return rewards, values, dones, active, last


def _hand_computed():
    gl = GAMMA * LAM
    # env 0: the cut at step 1 ends the recursion; its reward carries the bootstrap.
    a3 = 1.0 + GAMMA * 1.5 - 2.0
    a2 = 0.5 + GAMMA * 2.0 - 0.25 + gl * a3
    a1 = (2.0 + GAMMA * 3.0) - 1.0  # done: no V(next), no A(next)
    a0 = 1.0 + GAMMA * 1.0 - 0.5 + gl * a1
    # env 1: step 2 is passed over, so step 1 continues from step 3.
    b3 = 1.0 + GAMMA * 2.0 - 0.5
    b1 = 1.0 + GAMMA * 0.5 - 0.5 + gl * b3
    b0 = 1.0 + GAMMA * 0.5 - 1.0 + gl * b1
    return torch.tensor([[a0, b0], [a1, b1], [a2, 0.0], [a3, b3]])


def test_gae_matches_a_hand_computed_rollout_with_an_inactive_step_and_a_time_limit_cut():
    rewards, values, dones, active, last = _example()
    expected = _hand_computed()
    adv = on_policy.gae(rewards, values, dones, last, GAMMA, LAM, active)
    torch.testing.assert_close(adv, expected)
    adv2, ret = on_policy.advantages_and_returns(
        rewards, values, dones, last, GAMMA, LAM, active=active
    )
    assert torch.equal(adv2, adv)
    torch.testing.assert_close(ret, torch.where(active, expected + values, torch.zeros(4, 2)))


def test_an_inactive_steps_reward_value_and_done_are_never_read():
    rewards, values, dones, active, last = _example()
    adv = on_policy.gae(rewards, values, dones, last, GAMMA, LAM, active)
    for field in (rewards, values, dones):
        field[2, 1] = 123.0 if field is not dones else 0.0
        assert torch.equal(on_policy.gae(rewards, values, dones, last, GAMMA, LAM, active), adv)


def test_gae_without_a_mask_is_gae_with_every_step_active_and_bool_dones_are_accepted():
    rewards, values, dones, _, last = _example()
    every = torch.ones(4, 2, dtype=torch.bool)
    plain = on_policy.gae(rewards, values, dones, last, GAMMA, LAM)
    assert torch.equal(plain, on_policy.gae(rewards, values, dones, last, GAMMA, LAM, every))
    assert torch.equal(plain, on_policy.gae(rewards, values, dones.bool(), last, GAMMA, LAM))
    # with lambda 1 and no episode end, GAE is the discounted return minus the value
    ones = torch.zeros(4, 2)
    torch.testing.assert_close(
        on_policy.gae(rewards, values, ones, last, GAMMA, 1.0),
        on_policy.discounted_returns(rewards, ones, last, GAMMA) - values,
    )


def test_discounted_returns_pass_over_inactive_steps_and_stop_at_episode_ends():
    rewards, values, dones, active, last = _example()
    returns = on_policy.discounted_returns(rewards, dones, last, GAMMA, active)
    r1 = 2.0 + GAMMA * 3.0
    e0 = [1.0 + GAMMA * r1, r1, 0.5 + GAMMA * (1.0 + GAMMA * 1.5), 1.0 + GAMMA * 1.5]
    b3 = 1.0 + GAMMA * 2.0
    e1 = [1.0 + GAMMA * (1.0 + GAMMA * b3), 1.0 + GAMMA * b3, 0.0, b3]
    torch.testing.assert_close(returns, torch.tensor([e0, e1]).T)
    adv, ret = on_policy.advantages_and_returns(
        rewards, values, dones, last, GAMMA, LAM, use_gae=False, active=active
    )
    assert torch.equal(ret, returns)
    torch.testing.assert_close(adv, torch.where(active, returns - values, torch.zeros(4, 2)))


# -- the time-limit bootstrap ---------------------------------------------------------------
def test_bootstrap_adds_gamma_v_only_where_truncated_and_not_terminated():
    seen = []

    def final_values(cut):
        seen.append(cut)
        return np.array([10.0, 20.0, 30.0, 40.0], np.float32)

    rewards = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    terminated = np.array([False, False, True, True])
    truncated = np.array([False, True, True, False])
    out = on_policy.bootstrap_time_limits(rewards, terminated, truncated, GAMMA, final_values)
    np.testing.assert_array_equal(seen[0], [False, True, False, False])
    np.testing.assert_allclose(out, [1.0, 2.0 + GAMMA * 20.0, 3.0, 4.0])
    assert out.dtype == np.float32 and rewards[1] == 2.0  # a new array: the env's is kept
    # no cut: the rewards come back as given, and no value is computed
    same = on_policy.bootstrap_time_limits(rewards, terminated, truncated & terminated,
                                           GAMMA, final_values)  # fmt: skip
    assert same is rewards and len(seen) == 1


def test_bootstrap_walks_per_agent_trees():
    rewards = {"a": np.array([1.0, 1.0]), "b": np.array([0.5, 0.5])}
    terminated = {"a": np.array([False, False]), "b": np.array([True, False])}
    truncated = {"a": np.array([True, False]), "b": np.array([True, False])}
    values = {"a": np.array([2.0, 99.0]), "b": np.array([99.0, 99.0])}
    out = on_policy.bootstrap_time_limits(rewards, terminated, truncated, GAMMA,
                                          lambda cut: values)  # fmt: skip
    np.testing.assert_allclose(out["a"], [1.0 + GAMMA * 2.0, 1.0])
    np.testing.assert_allclose(out["b"], [0.5, 0.5])  # terminated: nothing to bootstrap


# -- the collection loop -------------------------------------------------------------------
class _ScriptedEnv:
    """Steps returning ``(obs, reward, terminated, truncated, info)`` from a script."""

    def __init__(self, script):
        self.script, self.actions = list(script), []

    def step(self, action):
        self.actions.append(action)
        return self.script.pop(0)


class _Recorder(on_policy.RolloutCollector):
    gamma = GAMMA

    def __init__(self):
        self.calls = []

    def act(self, obs, info):
        self.calls.append(("act", obs, info))
        return f"action@{obs}"

    def outcome(self, reward, terminated, truncated):
        self.calls.append(("outcome",))
        return np.asarray(reward, np.float32), np.asarray(terminated), np.asarray(truncated)

    def final_values(self, next_info, cut):
        self.calls.append(("final_values", next_info, cut.tolist()))
        return np.array([5.0, 6.0], np.float32)

    def store(self, step):
        self.calls.append(("store", step))


def test_collect_rollout_acts_steps_bootstraps_and_stores_in_order():
    f, t = False, True
    env = _ScriptedEnv([
        (1, [1.0, 1.0], [f, f], [f, f], "i1"),
        (2, [1.0, 2.0], [t, f], [f, t], "i2"),  # env 0 terminated, env 1 cut
    ])  # fmt: skip
    collector = _Recorder()
    obs, info = on_policy.collect_rollout(env, collector, 0, "i0", 2)
    assert (obs, info) == (2, "i2") and env.actions == ["action@0", "action@1"]
    kinds = [c[0] for c in collector.calls]
    assert kinds == ["act", "outcome", "store", "act", "outcome", "final_values", "store"]
    assert collector.calls[5][1:] == ("i2", [False, True])  # the step's own info
    first, second = collector.calls[2][1], collector.calls[6][1]
    assert (first.obs, first.info, first.next_obs, first.next_info) == (0, "i0", 1, "i1")
    assert first.action == "action@0" and first.reward is first.env_reward
    np.testing.assert_array_equal(second.done, [True, True])
    np.testing.assert_allclose(second.env_reward, [1.0, 2.0])
    np.testing.assert_allclose(second.reward, [1.0, 2.0 + GAMMA * 6.0])


# -- PPO, recurrent PPO and IPPO use them --------------------------------------------------
class _Spy:
    def __init__(self, monkeypatch, name):
        self.calls = []
        self.inner = getattr(on_policy, name)
        monkeypatch.setattr(on_policy, name, self)

    def __call__(self, *args, **kwargs):
        result = self.inner(*args, **kwargs)
        self.calls.append((args, kwargs, result))
        return result


def _spies(monkeypatch):
    return {
        name: _Spy(monkeypatch, name)
        for name in ("collect_rollout", "bootstrap_time_limits", "gae", "discounted_returns")
    }


class _CountEnv(gym.Env):
    """Observation ``[t / 10]``, reward 1; truncated after 3 steps."""

    observation_space = spaces.Box(-10.0, 10.0, (1,))
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t / 10], np.float32), 1.0, False, self.t >= 3, {}


@pytest.mark.parametrize("recurrent", [False, True])
@pytest.mark.parametrize("use_gae", [True, False])
def test_ppo_collects_bootstraps_and_computes_advantages_with_the_shared_functions(
    monkeypatch, recurrent, use_gae
):
    from agilerl.algorithms import PPO

    spies = _spies(monkeypatch)
    torch.manual_seed(0)
    net = {"head_config": {"hidden_size": [8]}, "latent_dim": 8}
    net["encoder_config"] = {"arch": "lstm", "hidden_state_size": 8} if recurrent else {
        "hidden_size": [8]}  # fmt: skip
    agent = PPO(
        _CountEnv.observation_space, _CountEnv.action_space, learn_step=10, batch_size=4,
        update_epochs=1, recurrent=recurrent, max_seq_len=2, net_config=net,
        rollout_buffer_config={"use_gae": use_gae},
    )  # fmt: skip
    env = SyncVectorEnv([_CountEnv] * 2, autoreset_mode=AutoresetMode.SAME_STEP)
    agent.collect_rollouts(env, *env.reset(seed=0))
    buffer = agent.rollout_buffer
    (args, _, _), = spies["collect_rollout"].calls  # fmt: skip
    assert args[0] is env and args[4] == buffer.capacity == 5
    # every step's stored reward is what the bootstrap gave: 1 + gamma V(final) at the cuts
    boots = spies["bootstrap_time_limits"].calls
    assert len(boots) == 5
    for t, (_, _, learnt) in enumerate(boots):
        np.testing.assert_array_equal(buffer.rewards[t].numpy(), learnt)
    cut = buffer.rewards[2] != 1.0
    assert cut.all() and buffer.dones[2].all()  # step 3 of each episode was cut
    name = "gae" if use_gae else "discounted_returns"
    (args, _, result), = spies[name].calls  # fmt: skip
    assert torch.equal(args[0], buffer.rewards[:5])
    stored = buffer.advantages if use_gae else buffer.returns
    assert torch.equal(stored[:5], result)
    agent.learn()


def test_ippo_collects_bootstraps_and_computes_masked_gae_with_the_shared_functions(monkeypatch):
    from agilerl.algorithms.ippo import IPPO
    from agilerl.families.multi_agent.buffers import TeamRolloutCollector
    from agilerl.families.multi_agent.loops import multi_agent_on_policy_turns
    from agilerl.families.multi_agent.vector import ParallelVecEnv
    from agilerl.testing.cooperative import awkward_cue_game
    from agilerl.training.state import RunState

    spies = _spies(monkeypatch)
    env = ParallelVecEnv([awkward_cue_game] * 2)  # the scout leaves mid-episode
    torch.manual_seed(0)
    agent = IPPO(env.observation_spaces, env.action_spaces, seed=0, batch_size=8,
                 learn_step=8, update_epochs=1)  # fmt: skip
    rollouts = []
    update = agent.update  # what a team's turn learns through (on the view of the team)
    monkeypatch.setattr(
        agent, "update", lambda v, r, o, *a: rollouts.append(r) or update(v, r, o, *a)
    )
    turns = multi_agent_on_policy_turns(env, [agent])
    ((taken, _, _),) = turns.train([agent], [0], 8, RunState())
    assert taken == 8
    (args, _, _), = spies["collect_rollout"].calls  # fmt: skip
    assert args[0] is env and isinstance(args[1], TeamRolloutCollector) and args[4] == 4
    (rollout,) = rollouts
    boots = spies["bootstrap_time_limits"].calls
    assert len(boots) == 4
    for t, (_, _, learnt) in enumerate(boots):
        for a in env.agent_ids:
            np.testing.assert_array_equal(rollout.reward[a][t].numpy(), learnt[a])
    # the horizon (4) cut every episode at the last step: the seer's reward there is the
    # env's plus gamma V(final obs)
    assert rollout.done["seer_0"][3].all() and not rollout.done["seer_0"][:3].any()
    (env_reward, *_), _, learnt = boots[3]
    assert not np.array_equal(learnt["seer_0"], env_reward["seer_0"])
    # GAE once per agent, with the rollout's active mask (the scout was absent)
    calls = spies["gae"].calls
    assert len(calls) == len(env.agent_ids)
    masks = [args[6] for args, _, _ in calls]
    assert all(m is not None for m in masks) and any(not m.all() for m in masks)
