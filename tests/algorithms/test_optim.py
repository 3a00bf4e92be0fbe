"""``agilerl.algorithms.optim``: the direct fused-Adam step and the clipping are the same
arithmetic as torch's, to the bit, through the paths a run takes (first step, learning-rate
changes, ``load_state_dict``, copies)."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from agilerl.algorithms.optim import FusedAdam, clip_grad_norm, gradient_step, polyak_update


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 32), torch.nn.LayerNorm(32), torch.nn.ReLU(), torch.nn.Linear(32, 2)
    )


def batches(n: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(16, 4, generator=gen) * 3 for _ in range(n)]


def train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, xs, clip) -> None:
    for x in xs:
        optimizer.zero_grad(set_to_none=True)
        (model(x) ** 2).mean().backward()
        clip(list(model.parameters()))
        optimizer.step()


def twins() -> tuple[torch.nn.Module, FusedAdam, torch.nn.Module, torch.optim.Adam]:
    """Two equal networks, one with a FusedAdam, the other with torch's fused Adam."""
    ours, theirs = net(), net()
    mine = FusedAdam(ours.parameters(), lr=1e-2)
    return ours, mine, theirs, torch.optim.Adam(theirs.parameters(), lr=1e-2, fused=True)


def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def torch_clip(params):
    torch.nn.utils.clip_grad_norm_(params, 0.5)


def our_clip(params):
    clip_grad_norm([p.grad for p in params if p.grad is not None], 0.5)


def test_steps_equal_torch_fused_adam_to_the_bit_and_follow_lr_changes():
    ours, mine, theirs, reference = twins()
    xs = batches(12)
    train(ours, mine, xs[:6], our_clip)
    train(theirs, reference, xs[:6], torch_clip)
    assert mine._direct is not None  # the direct path is the one being compared
    for group in (*mine.param_groups, *reference.param_groups):
        group["lr"] = 3e-3  # what an lr mutation does
    train(ours, mine, xs[6:], our_clip)
    train(theirs, reference, xs[6:], torch_clip)
    assert same(ours, theirs)
    a, b = mine.state_dict()["state"], reference.state_dict()["state"]
    assert all(torch.equal(a[k][f], b[k][f]) for k in b for f in b[k])
    assert not same(ours, net())  # it did train


@pytest.mark.parametrize("how", ["load_state_dict", "deepcopy", "pickle"])
def test_a_restored_or_copied_optimiser_keeps_stepping_exactly(how):
    ours, mine, theirs, reference = twins()
    xs = batches(8)
    train(ours, mine, xs[:4], our_clip)
    train(theirs, reference, xs[:4], torch_clip)
    if how == "load_state_dict":
        restored_net = copy.deepcopy(ours)
        restored = FusedAdam(restored_net.parameters(), lr=1e-2)
        restored.load_state_dict(mine.state_dict())
    else:
        pair = (ours, mine)
        restored_net, restored = (
            copy.deepcopy(pair) if how == "deepcopy" else pickle.loads(pickle.dumps(pair))
        )
    train(restored_net, restored, xs[4:], our_clip)
    train(theirs, reference, xs[4:], torch_clip)
    assert same(restored_net, theirs)
    # The copy's steps moved its own parameters, never the original's.
    assert not same(restored_net, ours)


def test_a_parameter_without_a_gradient_is_left_alone_as_torch_does():
    model = net()
    optimizer = FusedAdam(model.parameters(), lr=1e-2)
    x = batches(1)[0]
    train(model, optimizer, [x, x], our_clip)
    frozen = model[3].bias.detach().clone()
    optimizer.zero_grad(set_to_none=True)
    (model(x) ** 2).mean().backward()
    model[3].bias.grad = None
    optimizer.step()
    assert torch.equal(model[3].bias, frozen)


def test_clipping_scales_to_the_norm_and_leaves_small_gradients_alone():
    params = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2, 2))]
    params[0].grad = torch.tensor([3.0, 0.0, 0.0])
    params[1].grad = torch.tensor([[0.0, 4.0], [0.0, 0.0]])
    total = clip_grad_norm([p.grad for p in params], 1.0)
    assert total.item() == pytest.approx(5.0)
    clipped = torch.cat([p.grad.reshape(-1) for p in params])
    assert torch.linalg.vector_norm(clipped).item() == pytest.approx(1.0, rel=1e-5)
    before = [p.grad.clone() for p in params]
    clip_grad_norm([p.grad for p in params], 10.0)
    assert all(torch.equal(p.grad, g) for p, g in zip(params, before, strict=True))


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("max_norm", ["one for all", "per agent"])
def test_stacked_clipping_is_each_agents_own_clip_to_the_bit(max_norm, layout):
    generator = torch.Generator().manual_seed(3)
    shapes = [(32, 8), (32,), (32, 32), (32,), (2, 32), (2,)]
    agents = 4
    stacked = [torch.randn(agents, *shape, generator=generator) * 3 for shape in shapes]
    if layout == "transposed":  # as a batched matmul's weight gradients lie in memory
        stacked = [g.transpose(1, 2) if g.dim() == 3 else g for g in stacked]
    for g in stacked:
        g[2] *= 1e-3  # agent 2 is under the norm: left exactly as it is
    limits = torch.tensor([0.5, 1.0, 0.7, 0.0]) if max_norm == "per agent" else 0.5
    alone = [[g[p].clone() for g in stacked] for p in range(agents)]
    norms = clip_grad_norm(stacked, limits, count=agents)
    for p in range(agents):
        limit = float(limits[p]) if isinstance(limits, torch.Tensor) else limits
        if limit:  # 0: the agent is not clipped at all
            assert torch.equal(clip_grad_norm(alone[p], limit)[0], norms[p])
        for mine, theirs in zip(alone[p], [g[p] for g in stacked], strict=True):
            assert torch.equal(mine, theirs)
    assert norms[2] < 0.5 < norms[0]  # clipped and unclipped agents both occur


@pytest.mark.parametrize("max_grad_norm", [None, 0.0, 0.05])
def test_gradient_step_clips_only_when_asked(max_grad_norm):
    ours, mine, theirs, reference = twins()
    for x in batches(5):
        ours[0].weight.grad = torch.ones_like(ours[0].weight)  # stale: must be discarded
        gradient_step(mine, (ours(x) ** 2).mean(), max_grad_norm)
        reference.zero_grad(set_to_none=True)
        (theirs(x) ** 2).mean().backward()
        if max_grad_norm:
            torch.nn.utils.clip_grad_norm_(list(theirs.parameters()), max_grad_norm)
        reference.step()
    assert same(ours, theirs)


# -- one agent and P agents: the same primitives ------------------------------------------
SHAPES = [(33, 7), (33,), (64, 33), (64,), (2, 64), (2,)]  # vector-width tails included


def stacked(count: int, seed: int, scale: float = 1.0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(count, *shape, generator=gen) * scale for shape in SHAPES]


def agent_slices(tensors: list[torch.Tensor], p: int) -> list[torch.Tensor]:
    return [t[p].clone() for t in tensors]


def test_polyak_update_moves_each_live_agent_of_p_as_alone_and_leaves_the_rest_bit_equal():
    taus = [0.005, 0.5, 1.0]  # a lerp's two branches (weight below and at 0.5) and a copy
    live = torch.tensor([True, False, True])
    targets, online = stacked(3, seed=0), stacked(3, seed=1)
    before = [t.clone() for t in targets]
    polyak_update(targets, online, torch.tensor(taus, dtype=torch.float64), live)
    for p, tau in enumerate(taus):
        own_target = agent_slices(before, p)
        if live[p]:
            polyak_update(own_target, agent_slices(online, p), tau)  # the agent alone
        for got, expected in zip(targets, own_target, strict=True):
            assert torch.equal(got[p], expected), p
    assert not torch.equal(targets[0][0], before[0][0])  # a live agent did move
    # One agent alone is torch's lerp by its float tau, to the bit.
    target, source = agent_slices(before, 0), agent_slices(online, 0)
    polyak_update(target, source, 0.25)
    for got, t, o in zip(target, agent_slices(before, 0), source, strict=True):
        assert torch.equal(got, torch.lerp(t, o, 0.25))
