"""The typed seam over torch's multi-tensor kernels: each wrapper is the kernel, so its
results are bit-equal to the same operation applied tensor by tensor."""

from __future__ import annotations

import torch

from agilerl.algorithms import foreach


def tensors(seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for shape in ((3, 4), (5,), (2, 2, 2))]


def test_the_returning_kernels_equal_their_per_tensor_operations():
    a, b = tensors(0), tensors(1)
    pairs = [
        (foreach.norm(a), [torch.linalg.vector_norm(t) for t in a]),
        (foreach.sqrt([t.abs() for t in a]), [t.abs().sqrt() for t in a]),
        (foreach.sub(a, b), [x - y for x, y in zip(a, b, strict=True)]),
        (foreach.mul(a, 0.5), [t * 0.5 for t in a]),
        (foreach.mul(a, b), [x * y for x, y in zip(a, b, strict=True)]),
    ]
    for got, expected in pairs:
        assert len(got) == len(expected)
        assert all(torch.equal(g, e) for g, e in zip(got, expected, strict=True))


def test_the_in_place_kernels_change_their_tensors_as_the_per_tensor_operations_do():
    a, b, c = tensors(0), tensors(1), [t.abs() + 1 for t in tensors(2)]
    cases = [
        (lambda x: foreach.add_(x, 2.0), lambda t, i: t + 2.0),
        (lambda x: foreach.add_(x, b, alpha=0.3), lambda t, i: torch.add(t, b[i], alpha=0.3)),
        (lambda x: foreach.mul_(x, b), lambda t, i: t * b[i]),
        (lambda x: foreach.div_(x, c), lambda t, i: t / c[i]),
        (lambda x: foreach.lerp_(x, b, 0.25), lambda t, i: torch.lerp(t, b[i], 0.25)),
        (lambda x: foreach.addcmul_(x, b, c), lambda t, i: torch.addcmul(t, b[i], c[i])),
        (
            lambda x: foreach.addcdiv_(x, b, c, value=-0.5),
            lambda t, i: torch.addcdiv(t, b[i], c[i], value=-0.5),
        ),
    ]
    for apply, per_tensor in cases:
        mine = [t.clone() for t in a]
        assert apply(mine) is None  # in place
        for i, (got, start) in enumerate(zip(mine, a, strict=True)):
            assert torch.equal(got, per_tensor(start, i))


def test_the_fused_adam_step_is_torchs_adam_step():
    params = [t.clone().requires_grad_() for t in tensors(0)]
    reference = [t.clone().requires_grad_() for t in tensors(0)]
    grads = tensors(1)
    adam = torch.optim.Adam(reference, lr=1e-2, fused=True)
    for p, g in zip(reference, grads, strict=True):
        p.grad = g.clone()
    adam.step()
    exp_avgs = [torch.zeros_like(p) for p in params]
    exp_avg_sqs = [torch.zeros_like(p) for p in params]
    steps = [torch.zeros(()) for _ in params]
    with torch.no_grad():
        foreach.add_(steps, 1)
        foreach.fused_adam_(
            [p.detach() for p in params], grads, exp_avgs, exp_avg_sqs, steps,
            lr=1e-2, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, maximize=False,
        )  # fmt: skip
    for mine, theirs in zip(params, reference, strict=True):
        assert torch.equal(mine.detach(), theirs.detach())
