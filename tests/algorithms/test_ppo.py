"""PPO: action spaces, masks, rollouts (truncation bootstrapping, episode returns), learning
(early stop on KL), shared encoder invariants, checkpoints, clones and mutations."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from torch.distributions import Categorical

from agilerl.algorithms import PPO, RLAlgorithm
from agilerl.algorithms.core.evolvable import unique_parameters
from agilerl.algorithms.core.population import Population
from agilerl.models import PPOSpec
from agilerl.networks.distributions import Categoricals

NET = {
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
    "latent_dim": 8,
}
ACTION_SPACES = {
    "discrete": spaces.Discrete(3),
    "multidiscrete": spaces.MultiDiscrete([3, 2], start=[1, -1]),
    "multibinary": spaces.MultiBinary(3),
    "box": spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 2.0], np.float32)),
}


class ToyEnv(gym.Env):
    """Observation ``[step / 10, env id]``; reward 1 per step; the episode terminates after
    ``term_at`` steps or is truncated after ``trunc_at``. With ``allowed`` it publishes an
    action mask and fails on any other action."""

    def __init__(self, action_space, env_id=0, term_at=None, trunc_at=None, allowed=None):
        self.observation_space = spaces.Box(-10.0, 10.0, (2,))
        self.action_space = action_space
        self.env_id, self.term_at, self.trunc_at, self.allowed = env_id, term_at, trunc_at, allowed

    def _obs(self):
        return np.array([self.t / 10, self.env_id], dtype=np.float32)

    def _info(self):
        if self.allowed is None:
            return {}
        mask = np.zeros(self.action_space.n, dtype=np.int8)
        mask[self.allowed] = 1
        return {"action_mask": mask}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), self._info()

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, self.action_space.dtype)), action
        if self.allowed is not None:
            assert int(action) in self.allowed, action
        self.t += 1
        terminated = self.term_at is not None and self.t >= self.term_at
        truncated = self.trunc_at is not None and self.t >= self.trunc_at and not terminated
        return self._obs(), 1.0, terminated, truncated, self._info()


def vec_env(action_space, n=2, **kwargs):
    fns = [lambda i=i: ToyEnv(action_space, env_id=i, **kwargs) for i in range(n)]
    return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)


def make_agent(action_space, **kwargs):
    options = {"learn_step": 16, "batch_size": 8, "update_epochs": 2, "net_config": NET}
    return PPO(spaces.Box(-10.0, 10.0, (2,)), action_space, **{**options, **kwargs})


def params_equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


def assert_shared(agent):
    assert agent.critic.encoder is agent.actor.encoder
    assert agent.critic.spec.encoder_config == agent.actor.spec.encoder_config
    assert agent.critic.spec.latent_dim == agent.actor.spec.latent_dim


def assert_optimizer_holds_current_parameters(agent):
    held = [p for g in agent.optimizer.param_groups for p in g["params"]]
    current = unique_parameters([agent.actor, agent.critic])
    assert len(held) == len({id(p) for p in held})  # each once
    assert {id(p) for p in held} == {id(p) for p in current}


# -- acting -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ACTION_SPACES)
def test_get_action_and_learn_on_every_action_space(name):
    torch.manual_seed(0)
    space = ACTION_SPACES[name]
    agent = make_agent(space)
    obs = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    action, log_prob, entropy, value = agent.get_action(obs)
    assert isinstance(action, np.ndarray) and action.shape == (5, *space.shape)
    assert all(space.contains(a.astype(space.dtype)) for a in action)
    assert log_prob.shape == entropy.shape == value.shape == (5,)
    assert torch.isfinite(log_prob).all() and torch.isfinite(value).all()
    greedy = agent.eval_action(obs)
    assert np.array_equal(greedy, agent.eval_action(obs)) and greedy.shape == action.shape

    env = vec_env(space, term_at=5)
    obs, info = env.reset(seed=0)
    obs, info, returns = agent.collect_rollouts(env, obs, info)
    assert returns and all(r == 5.0 for r in returns)
    metrics = agent.learn()
    assert set(metrics) >= {"loss", "policy_loss", "value_loss", "entropy", "approx_kl"}
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["updates"] == 2 * 2  # two epochs of two minibatches of 8
    assert agent.test(env) == 5.0


def test_categorical_sampling_matches_the_distribution():
    # The sampler is hand-written (Gumbel-max), so check it against the probabilities and
    # its log-probabilities and entropies against torch.distributions.
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.5, -1.0]]).repeat(50_000, 1)
    cats = Categoricals(logits, [3, 2])
    index = cats.sample(deterministic=False)
    parts = logits[:1].split([3, 2], dim=-1)
    for i, part in enumerate(parts):
        freq = torch.bincount(index[:, i], minlength=part.shape[-1]).float() / len(index)
        torch.testing.assert_close(freq, part[0].softmax(-1), atol=0.01, rtol=0)
    reference = [Categorical(logits=p.expand(len(index), -1)) for p in parts]
    expected = sum(d.log_prob(index[:, i]) for i, d in enumerate(reference))
    torch.testing.assert_close(cats.log_prob(index), expected)
    torch.testing.assert_close(cats.entropy(), sum(d.entropy() for d in reference))
    assert cats.sample(deterministic=True)[0].tolist() == [2, 0]


def test_box_log_std_starts_at_action_std_init():
    agent = make_agent(ACTION_SPACES["box"], action_std_init=0.3)
    assert torch.allclose(agent.actor.distribution.log_std, torch.full((2,), math.log(0.3)))


def test_squashed_box_actions_stay_in_bounds_and_learn():
    space = spaces.Box(-2.0, -1.0, (2,))
    agent = make_agent(space, net_config={**NET, "squash_output": True})
    action, log_prob, _, _ = agent.get_action(np.zeros((64, 2), np.float32))
    assert (action >= -2.0).all() and (action <= -1.0).all() and torch.isfinite(log_prob).all()
    env = vec_env(space, term_at=4)
    obs, info = env.reset(seed=0)
    agent.collect_rollouts(env, obs, info)
    assert all(math.isfinite(v) for v in agent.learn().values())


def test_rollout_log_probs_match_a_fresh_evaluation():
    # With no update in between, the PPO ratio of every stored sample must be exactly 1.
    for space in ACTION_SPACES.values():
        agent = make_agent(space)
        env = vec_env(space, term_at=3)
        obs, info = env.reset(seed=1)
        agent.collect_rollouts(env, obs, info)
        (batch,) = list(agent.rollout_buffer.minibatches(16))
        with torch.no_grad():
            dist, value = agent._forward(batch.obs)
            torch.testing.assert_close(dist.log_prob(batch.actions), batch.log_probs)
            torch.testing.assert_close(value, batch.values)


# -- action masks -------------------------------------------------------------------------
def test_masked_actions_are_never_chosen():
    agent = make_agent(spaces.Discrete(5))
    mask = np.zeros((200, 5), dtype=bool)
    mask[:, [1, 3]] = True
    mask[::2] = [False, False, False, False, True]
    obs = np.random.default_rng(0).normal(size=(200, 2)).astype(np.float32)
    action, log_prob, entropy, _ = agent.get_action(obs, mask)
    assert mask[np.arange(200), action].all()
    assert set(action[1::2].tolist()) == {1, 3}
    assert torch.allclose(log_prob[::2], torch.zeros(100), atol=1e-6)  # one choice left
    assert torch.isfinite(entropy).all() and (entropy[::2].abs() < 1e-6).all()
    assert mask[np.arange(200), agent.eval_action(obs, mask)].all()


def test_multidiscrete_masks_apply_per_sub_action():
    space = spaces.MultiDiscrete([3, 2], start=[1, -1])
    agent = make_agent(space)
    mask = np.tile([0, 0, 1, 1, 0], (100, 1))  # sub-action 0 -> 3, sub-action 1 -> -1
    action, *_ = agent.get_action(np.zeros((100, 2), np.float32), mask)
    assert (action == [3, -1]).all()


def test_rollouts_respect_masks_from_the_environment():
    space = spaces.Discrete(4)
    agent = make_agent(space, learn_step=64, batch_size=16)
    env = vec_env(space, term_at=3, allowed=[0, 2])  # the env asserts every action
    obs, info = env.reset(seed=0)
    for _ in range(2):
        obs, info, _ = agent.collect_rollouts(env, obs, info)
        assert set(agent.rollout_buffer.actions.unique().tolist()) <= {0, 2}
        assert agent.rollout_buffer.action_masks is not None
        agent.learn()
    assert agent.eval_action(obs, info["action_mask"]).tolist() in ([0, 0], [0, 2], [2, 0], [2, 2])


def test_masks_on_non_categorical_actions_are_refused():
    agent = make_agent(ACTION_SPACES["box"])
    with pytest.raises(ValueError, match="action masks"):
        agent.get_action(np.zeros((1, 2), np.float32), np.ones((1, 2)))


# -- rollouts -----------------------------------------------------------------------------
def test_truncation_bootstraps_with_the_value_of_the_final_observation():
    space = spaces.Discrete(2)
    agent = make_agent(space, learn_step=8, gamma=0.9)
    env = SyncVectorEnv(
        [
            lambda: ToyEnv(space, env_id=0, trunc_at=3),
            lambda: ToyEnv(space, env_id=1, term_at=3),
        ],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    obs, info = env.reset(seed=0)
    _, _, returns = agent.collect_rollouts(env, obs, info)
    buf = agent.rollout_buffer
    assert agent.num_envs == 2 and buf.capacity == 4
    with torch.no_grad():
        final_value = agent.critic(np.array([[0.3, 0.0]], np.float32)).item()
    assert buf.rewards[2, 0].item() == pytest.approx(1.0 + 0.9 * final_value, abs=1e-6)
    assert buf.rewards[2, 1].item() == 1.0  # terminated: nothing to bootstrap
    assert buf.rewards[[0, 1, 3]].eq(1.0).all()
    assert buf.dones[:, 0].tolist() == [0, 0, 1, 0] and buf.dones[:, 1].tolist() == [0, 0, 1, 0]
    assert returns == [3.0, 3.0]  # episode returns count the raw rewards
    # the observation after the cut is the next episode's first one
    assert buf.obs[3, :, 0].tolist() == [0.0, 0.0]


def test_episodes_spanning_rollouts_count_once_with_their_whole_return():
    space = spaces.Discrete(2)
    agent = make_agent(space, learn_step=6)  # 3 vector steps; episodes last 5
    env = vec_env(space, term_at=5)
    obs, info = env.reset(seed=0)
    obs, info, first = agent.collect_rollouts(env, obs, info)
    obs, info, second = agent.collect_rollouts(env, obs, info)
    assert first == [] and second == [5.0, 5.0]
    # a fresh reset starts the running returns again
    obs, info = env.reset(seed=0)
    _, _, third = agent.collect_rollouts(env, obs, info)
    assert third == []
    _, _, fourth = agent.collect_rollouts(env, *env.reset(seed=0))
    assert fourth == []


def test_reset_rollouts_forgets_the_episodes_in_flight():
    space = spaces.Discrete(2)
    agent = make_agent(space, learn_step=6)
    env = vec_env(space, term_at=5)
    obs, info = env.reset(seed=0)
    obs, info, _ = agent.collect_rollouts(env, obs, info)  # 3 steps into every episode
    agent.reset_rollouts()
    _, _, returns = agent.collect_rollouts(env, obs, info)
    assert returns == [2.0, 2.0]  # only the steps after the reset count


def test_rollout_length_follows_learn_step_and_num_envs():
    space = spaces.Discrete(2)
    agent = make_agent(space, learn_step=10)
    env = vec_env(space, n=3, term_at=4)
    agent.collect_rollouts(env, *env.reset(seed=0))
    assert agent.num_envs == 3 and agent.rollout_buffer.capacity == 4  # ceil(10 / 3)
    assert agent.rollout_length == 4 and agent.rollout_steps == 12
    agent.learn_step = 20  # e.g. a hyperparameter mutation
    agent.collect_rollouts(env, *env.reset(seed=0))
    assert agent.rollout_buffer.capacity == 7 and len(agent.rollout_buffer) == 21
    assert agent.rollout_steps == 21


def test_use_gae_false_from_a_plain_dict():
    agent = make_agent(spaces.Discrete(2), rollout_buffer_config={"use_gae": False}, gamma=0.5)
    env = vec_env(spaces.Discrete(2), term_at=2)
    agent.collect_rollouts(env, *env.reset(seed=0))
    buf = agent.rollout_buffer
    assert not buf.use_gae
    # episodes of two rewards of 1: returns 1.5 then 1
    assert buf.returns[0::2].eq(1.5).all() and buf.returns[1::2].eq(1.0).all()


def test_learn_needs_a_rollout():
    with pytest.raises(RuntimeError, match="collect_rollouts"):
        make_agent(spaces.Discrete(2)).learn()


# -- learning -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ACTION_SPACES)
def test_loss_matches_the_formula_through_the_networks_own_distributions(name):
    space = ACTION_SPACES[name]
    agent = _trained(space, clip_coef=0.1, ent_coef=0.05, vf_coef=0.7)
    env = vec_env(space, term_at=4)
    agent.collect_rollouts(env, *env.reset(seed=2))
    agent.learn()  # move the policy away from the one that collected the rollout
    (batch,) = list(agent.rollout_buffer.minibatches(16))
    loss, stats = agent._minibatch_loss(Population.of(agent), batch)
    with torch.no_grad():
        log_prob, entropy = agent.actor.evaluate_actions(batch.obs, batch.actions)
        value = agent.critic(batch.obs).squeeze(-1).numpy()
    ratio = np.exp(log_prob.numpy() - batch.log_probs.numpy())
    adv = batch.advantages.numpy()
    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    policy = -np.minimum(adv * ratio, adv * np.clip(ratio, 0.9, 1.1)).mean()
    old, ret = batch.values.numpy(), batch.returns.numpy()
    v_clip = old + np.clip(value - old, -0.1, 0.1)
    value_loss = 0.5 * np.maximum((value - ret) ** 2, (v_clip - ret) ** 2).mean()
    expected = policy - 0.05 * entropy.mean().item() + 0.7 * value_loss
    assert not np.allclose(ratio, 1.0)
    assert loss.item() == pytest.approx(expected, rel=1e-4, abs=1e-5)
    assert stats[1].item() == pytest.approx(policy, rel=1e-4, abs=1e-5)
    assert stats[2].item() == pytest.approx(value_loss, rel=1e-4, abs=1e-5)


def test_target_kl_stops_the_epochs_early():
    space = spaces.Discrete(3)
    counts = {}
    for target_kl in (None, 1e-9):
        torch.manual_seed(0)
        agent = make_agent(space, learn_step=64, batch_size=8, update_epochs=4, lr=1e-2)
        agent.target_kl = target_kl
        env = vec_env(space, term_at=4)
        agent.collect_rollouts(env, *env.reset(seed=0))
        metrics = agent.learn()
        counts[target_kl] = metrics["updates"]
        assert metrics["early_stop"] == float(target_kl is not None)
    assert counts[None] == 4 * 8
    assert 1 <= counts[1e-9] < 8


def test_learning_improves_the_objective_on_a_bandit():
    # Action 1 pays 1, action 0 pays 0: the policy must come to prefer action 1.
    class Bandit(ToyEnv):
        def step(self, action):
            obs, _, term, trunc, info = super().step(action)
            return obs, float(action == 1), term, trunc, info

    space = spaces.Discrete(2)
    torch.manual_seed(0)
    agent = make_agent(space, learn_step=64, batch_size=32, lr=1e-2, update_epochs=4)
    env = SyncVectorEnv(
        [lambda: Bandit(space, term_at=1)] * 4, autoreset_mode=AutoresetMode.SAME_STEP
    )
    obs, info = env.reset(seed=0)
    preferred = []
    for _ in range(12):
        obs, info, _ = agent.collect_rollouts(env, obs, info)
        agent.learn()
        with torch.no_grad():
            logits = agent.actor.head(agent.actor.extract_features(obs[:1]))
        preferred.append(torch.softmax(logits, -1)[0, 1].item())
    # The clipped objective bounds each rollout's step, so the climb is steady, not a jump.
    assert all(b > a for a, b in zip(preferred, preferred[1:], strict=False)), preferred
    assert preferred[-1] > 0.85, preferred


# -- shared encoder, checkpoints, clones, mutations --------------------------------------
def test_shared_encoder_is_one_module_trained_once():
    agent = make_agent(spaces.Discrete(2))
    assert_shared(agent)
    assert_optimizer_holds_current_parameters(agent)
    separate = make_agent(spaces.Discrete(2), share_encoders=False)
    assert separate.critic.encoder is not separate.actor.encoder
    assert_optimizer_holds_current_parameters(separate)


def _trained(space=None, **kwargs):
    torch.manual_seed(0)
    space = space or spaces.Discrete(3)
    agent = make_agent(space, **kwargs)
    env = vec_env(space, term_at=4)
    agent.collect_rollouts(env, *env.reset(seed=0))
    agent.learn()
    return agent


def test_checkpoint_round_trip_restores_outputs_and_optimizer(tmp_path):
    agent = _trained(ACTION_SPACES["box"], lr=3e-3)
    agent.steps, agent.scores = 123, [1.0, 2.0]
    path = tmp_path / "ppo.ckpt"
    agent.save_checkpoint(path)
    for loaded in (PPO.load(path), RLAlgorithm.load(path)):
        assert isinstance(loaded, PPO)
        assert_shared(loaded)
        assert_optimizer_holds_current_parameters(loaded)
        obs = np.random.default_rng(1).normal(size=(4, 2)).astype(np.float32)
        assert np.array_equal(loaded.eval_action(obs), agent.eval_action(obs))
        with torch.no_grad():
            assert torch.equal(loaded.critic(obs), agent.critic(obs))
        saved, restored = agent.optimizer.state_dict(), loaded.optimizer.state_dict()
        assert saved["param_groups"] == restored["param_groups"]
        for key, state in saved["state"].items():
            for name, value in state.items():
                assert torch.equal(value, restored["state"][key][name])
        assert loaded.hyperparameters() == agent.hyperparameters()
        assert (loaded.steps, loaded.scores, loaded.lr) == (123, [1.0, 2.0], 3e-3)
    # load into an existing agent: same, and the encoder stays shared
    other = make_agent(ACTION_SPACES["box"])
    other.load_checkpoint(path)
    assert_shared(other)
    assert params_equal(other.actor, agent.actor)


def test_hyperparameters_are_json_friendly():
    agent = make_agent(spaces.Discrete(2), rollout_buffer_config={"use_gae": False})
    hyper = agent.hyperparameters()
    assert hyper["rollout_buffer_config"] == {"use_gae": False}
    json.dumps(hyper)


def test_clone_is_independent():
    agent = _trained()
    twin = agent.clone(index=7)
    assert twin.index == 7 and params_equal(twin.actor, agent.actor)
    assert_shared(twin)
    assert_optimizer_holds_current_parameters(twin)
    before = [p.detach().clone() for p in agent.actor.parameters()]
    env = vec_env(spaces.Discrete(3), term_at=4)
    twin.collect_rollouts(env, *env.reset(seed=1))
    twin.learn()
    assert not params_equal(twin.actor, agent.actor)
    assert all(torch.equal(a, b) for a, b in zip(before, agent.actor.parameters(), strict=True))


@pytest.mark.parametrize("share", [True, False])
def test_architecture_mutations_keep_the_encoder_shared_and_learn(share):
    agent = _trained(share_encoders=share)
    names = agent.architecture_mutations()
    assert "grow_latent" in names and any(n.startswith("encoder.") for n in names)
    env = vec_env(spaces.Discrete(3), term_at=4)
    obs, info = env.reset(seed=0)
    for i, name in enumerate(names):
        agent.mutate_architecture(name, seed=i)
        if share:
            assert_shared(agent)
        else:
            assert agent.critic.spec.encoder_config == agent.actor.spec.encoder_config
        assert_optimizer_holds_current_parameters(agent)
        obs, info, _ = agent.collect_rollouts(env, obs, info)
        assert all(math.isfinite(v) for v in agent.learn().values())
    agent.mutate_activation(np.random.default_rng(0))
    assert_optimizer_holds_current_parameters(agent)
    if share:
        assert_shared(agent)
    twin = agent.clone()  # a mutated architecture survives a checkpoint round trip
    assert twin.actor.spec == agent.actor.spec and params_equal(twin.actor, agent.actor)


def test_parameter_noise_and_lr_mutation_reach_the_shared_encoder_and_optimizer():
    agent = make_agent(spaces.Discrete(2))
    before = {k: v.clone() for k, v in agent.critic.encoder.state_dict().items()}
    agent.mutate_parameters(np.random.default_rng(0), 0.1)
    changed = any(
        not torch.equal(before[k], v) for k, v in agent.actor.encoder.state_dict().items()
    )
    assert changed and agent.critic.encoder is agent.actor.encoder
    rng = np.random.default_rng(0)
    while (mutated := agent.mutate_hyperparameter(rng))[0] != "lr":
        pass
    assert agent.optimizer.param_groups[0]["lr"] == mutated[2] == agent.lr


# -- construction -------------------------------------------------------------------------
def test_spec_builds_ppo():
    assert PPOSpec.algo_class() is PPO
    agent = PPOSpec(learn_step=64).build_algorithm(
        spaces.Box(-1.0, 1.0, (4,)), spaces.Discrete(2), index=3
    )
    assert isinstance(agent, PPO) and agent.index == 3 and agent.learn_step == 64
    assert agent.rollout_buffer_config.use_gae is True
    assert set(agent.hp_config) == {"lr", "batch_size", "learn_step"}


def test_recurrent_without_an_lstm_encoder_is_refused_clearly():
    # an MLP encoder: nothing would carry a memory (tests/algorithms/test_recurrent_ppo.py)
    mlp = {**NET, "encoder_config": {"arch": "mlp", "hidden_size": [16]}}
    with pytest.raises(ValueError, match=r"recurrent: true needs an LSTM encoder \(network\."):
        make_agent(spaces.Discrete(2), recurrent=True, net_config=mlp)


@pytest.mark.parametrize(
    ("field", "value"), [("batch_size", 0), ("learn_step", 0), ("update_epochs", 1.5)]
)
def test_invalid_hyperparameters(field, value):
    with pytest.raises(ValueError, match=field):
        make_agent(spaces.Discrete(2), **{field: value})
