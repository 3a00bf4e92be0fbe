"""The multi-agent buffers (agilerl/families/multi_agent/buffers.py): the replay buffer
of teams (every field per agent, inactive agents flagged, exact state round trip) and the
rollout of on-policy teams (T x N per agent), filled from the cue game's vector env."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.cue_vectors import COOP, cue_actions, vec

from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer, MultiAgentRollout
from agilerl.families.multi_agent.vector import FINAL


def collect(env, steps, memory=None, rollout=None):
    obs, infos = env.reset(seed=0)
    for _ in range(steps):
        act = cue_actions(env, obs, infos, rule="first")
        nobs, rewards, terminated, truncated, infos = env.step(act)
        active = {a: infos[a]["active"] for a in env.agent_ids}
        if memory is not None:
            masks = {a: infos[a]["action_mask"] for a in env.agent_ids if "action_mask" in infos[a]}
            final = infos[FINAL]
            memory.add(obs, act, rewards, final["obs"], terminated, active, masks,
                       final["action_mask"])  # fmt: skip
        if rollout is not None:
            zeros = {a: np.zeros(env.num_envs, np.float32) for a in env.agent_ids}
            done = {a: terminated[a] | truncated[a] for a in env.agent_ids}
            rollout.add(obs, act, zeros, zeros, rewards, done, active)
        obs = nobs


def test_replay_buffer_samples_every_field_per_agent_and_keeps_inactive_flags():
    torch.manual_seed(0)
    env = vec(2, entrypoint=f"{COOP}:awkward_cue_game", config={"horizon": 4})
    memory = MultiAgentReplayBuffer(64)
    with env:
        collect(env, 8, memory=memory)
    assert len(memory) == 16
    batch = memory.sample(32)
    masks = {"action_mask", "next_action_mask"}
    assert set(batch) == {"obs", "action", "reward", "next_obs", "done", "active", *masks}
    for name, field in batch.items():
        assert set(field) == ({"blind_0"} if name in masks else {"seer_0", "blind_0", "scout_0"})
    assert batch["next_action_mask"]["blind_0"].shape == (32, 3)
    assert batch["obs"]["blind_0"]["action_mask"].shape == (32, 3)
    assert batch["obs"]["scout_0"].shape == (32, 1, 6, 6)
    assert batch["active"]["scout_0"].dtype == torch.bool
    # the scout is present in half the steps: both kinds were drawn, absent ones zero
    active = batch["active"]["scout_0"]
    assert active.any() and (~active).any()
    assert not batch["obs"]["scout_0"][~active].any()


def test_replay_buffer_round_trips_its_state():
    env = vec(2)
    memory = MultiAgentReplayBuffer(10)
    with env:
        collect(env, 7, memory=memory)  # wraps around
    other = MultiAgentReplayBuffer(10)
    other.load_state_dict(memory.state_dict())
    torch.manual_seed(3)
    a = memory.sample(6)
    torch.manual_seed(3)
    b = other.sample(6)
    torch.testing.assert_close(a["next_obs"]["blind_0"], b["next_obs"]["blind_0"])
    assert other.position == memory.position == 4


def test_replay_buffer_refuses_mismatched_agents():
    memory = MultiAgentReplayBuffer(4)
    row = {"a": np.zeros((1, 2))}
    with pytest.raises(ValueError, match="same agent ids"):
        memory.add(row, row, row, row, row, {"b": np.ones(1, bool)})


def test_rollout_stores_t_by_n_per_agent():
    env = vec(3)
    rollout = MultiAgentRollout(5, 3)
    with env:
        collect(env, 5, rollout=rollout)
        assert rollout.full and len(rollout) == 5
        assert rollout.obs["blind_0"].shape == (5, 3, 3)
        assert rollout.action["seer_0"].shape == (5, 3)
        assert rollout.done["seer_0"].dtype == torch.bool
        # horizon 4: the episode ended with step 4 (index 3) in every copy
        assert rollout.done["seer_0"][3].all() and not rollout.done["seer_0"][:3].any()
        with pytest.raises(ValueError, match="full"):
            collect(env, 1, rollout=rollout)
    rollout.reset()
    assert len(rollout) == 0
    with pytest.raises(ValueError, match="leading dimension of 3"):
        row = {"a": np.zeros(2)}
        rollout.add(row, row, row, row, row, row, row)
