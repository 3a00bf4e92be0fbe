"""Stacked networks compute what each agent's own network computes, on its block of rows,
and write their weights back into the agents unchanged in layout."""

from __future__ import annotations

import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.optim import StackedAdam
from agilerl.cohorts.stacking import StackedNetwork, stackable
from agilerl.modules.stacked import StackedModule

LAYOUTS = {
    "layer-norm": {"latent_dim": 8, "encoder_config": {"hidden_size": [8, 10]}, "head_config": {"hidden_size": [8]}},
    "plain-tanh": {
        "latent_dim": 8,
        "encoder_config": {"hidden_size": [8], "layer_norm": False, "activation": "Tanh"},
        "head_config": {"hidden_size": [8, 8], "layer_norm": False, "output_activation": "Sigmoid"},
    },
}  # fmt: skip


def networks(layout, count=3, obs=None):
    torch.manual_seed(1)
    space = obs or spaces.Box(-1.0, 1.0, (5,))
    return [DQN(space, spaces.Discrete(4), net_config=LAYOUTS[layout]).actor for _ in range(count)]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_block_of_rows_goes_through_its_agents_network(layout):
    nets = networks(layout)
    stacked = StackedNetwork(nets)
    x = torch.randn(3 * 7, 5)
    out = stacked.network(x)
    for p, net in enumerate(nets):
        torch.testing.assert_close(out[p * 7 : (p + 1) * 7], net(x[p * 7 : (p + 1) * 7]))
    # the first agent's own network is left as it was (the stacked one is a copy)
    assert stacked.network is not nets[0]
    assert all(not isinstance(m, StackedModule) for m in nets[0].modules())
    assert stacked.parameters()[0].shape[0] == 3


def test_a_discrete_observation_is_preprocessed_per_row_as_alone():
    nets = networks("layer-norm", obs=spaces.Discrete(5))
    stacked = StackedNetwork(nets)
    x = torch.randint(0, 5, (3 * 4,))
    out = stacked.network(x)
    for p, net in enumerate(nets):
        torch.testing.assert_close(out[p * 4 : (p + 1) * 4], net(x[p * 4 : (p + 1) * 4]))


def test_write_back_puts_each_agents_slice_into_its_own_tensors():
    nets = networks("layer-norm")
    own = [list(net.parameters()) for net in nets]
    stacked = StackedNetwork(nets)
    with torch.no_grad():
        for p in stacked.parameters():
            p.add_(torch.arange(3.0).reshape(-1, *([1] * (p.dim() - 1))))
    stacked.write_back(nets)
    for p, net in enumerate(nets):
        # the same objects: the agents' optimisers keep pointing at them
        assert {id(t) for t in net.parameters()} == {id(t) for t in own[p]}
        assert {id(t) for t in stacked.agent_parameters(net)} == {id(t) for t in own[p]}
    fresh = networks("layer-norm")
    for p in range(3):
        for now, then in zip(nets[p].parameters(), fresh[p].parameters(), strict=True):
            torch.testing.assert_close(now, then + p)


def test_only_networks_of_mlp_modules_without_buffers_stack():
    assert stackable(networks("layer-norm", 1)[0])
    image = DQN(
        spaces.Box(0, 255, (3, 16, 16), dtype="uint8"),
        spaces.Discrete(2),
        net_config={
            "encoder_config": {"channel_size": [8], "kernel_size": [3], "stride_size": [1]}
        },
    ).actor
    assert not stackable(image)  # a CNN encoder: no stacked implementation


def test_a_gaussian_policy_stacks_with_its_learnt_spread_unless_it_squashes():
    from agilerl.algorithms.ppo import PPO

    box = spaces.Box(-2.0, 2.0, (2,))
    torch.manual_seed(0)
    actors = [
        PPO(spaces.Box(-1.0, 1.0, (3,)), box, action_std_init=0.1 * (i + 1)).actor for i in range(2)
    ]
    assert stackable(actors[0]) and "distribution" in actors[0].stacking_parts()
    stacked = StackedNetwork(actors)
    obs = torch.rand(8, 3)
    with torch.no_grad():
        joint = stacked.network(obs, True)[0]  # the Gaussian means
        for p, actor in enumerate(actors):
            torch.testing.assert_close(
                joint[4 * p : 4 * p + 4], actor(obs[4 * p : 4 * p + 4], True)[0]
            )
        log_std = stacked.modules["distribution"].log_std
        torch.testing.assert_close(log_std[1].exp(), torch.full((2,), 0.2))
        log_std.add_(1.0)
    stacked.write_back(actors)
    torch.testing.assert_close(
        actors[0].distribution.log_std.exp(), torch.full((2,), 0.1 * torch.e)
    )
    squashing = PPO(spaces.Box(-1.0, 1.0, (3,)), box, net_config={"squash_output": True}).actor
    assert not stackable(squashing)  # its bounds are buffers


def test_stacked_adam_is_torchs_adam_per_agent_with_its_own_learning_rate():
    torch.manual_seed(0)
    weights = [torch.nn.Parameter(torch.randn(4, 3)) for _ in range(3)]
    lrs = [1e-3, 1e-2, 5e-2]
    alone = [
        torch.optim.Adam([w.detach().clone().requires_grad_()], lr=lr)
        for w, lr in zip(weights, lrs, strict=True)
    ]
    opts = [torch.optim.Adam([w], lr=lr) for w, lr in zip(weights, lrs, strict=True)]
    stacked = torch.nn.Parameter(torch.stack([w.detach() for w in weights]))
    adam = StackedAdam([stacked], [[w] for w in weights], opts, lrs)
    for _ in range(4):
        grads = torch.randn(3, 4, 3)
        for p, opt in enumerate(alone):
            opt.param_groups[0]["params"][0].grad = grads[p].clone()
            opt.step()
        adam.step([grads], torch.ones(3, dtype=torch.bool))
    for p, opt in enumerate(alone):
        torch.testing.assert_close(stacked[p].detach(), opt.param_groups[0]["params"][0].detach())
    adam.write_back(opts)
    for p, opt in enumerate(opts):
        theirs = alone[p].state[alone[p].param_groups[0]["params"][0]]
        mine = opt.state[weights[p]]
        assert float(mine["step"]) == 4.0
        torch.testing.assert_close(mine["exp_avg_sq"], theirs["exp_avg_sq"])


def test_buffers_of_a_networks_own_code_stack_but_not_buffers_in_its_modules():
    from agilerl.algorithms.ddpg import DDPG

    agent = DDPG(
        spaces.Box(-1.0, 1.0, (3,)), spaces.Box(-2.0, 2.0, (2,)), net_config=LAYOUTS["layer-norm"]
    )
    assert dict(agent.actor.named_buffers()).keys() == {"action_low", "action_high"}
    assert stackable(agent.actor)  # the action bounds: read from the template for all P
    net = networks("layer-norm", 1)[0]
    net.encoder.register_buffer("running_mean", torch.zeros(5))  # per-agent statistics
    assert not stackable(net)
