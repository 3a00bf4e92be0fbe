"""torch's multi-tensor kernels behind one typed seam.

``torch._foreach_*`` and ``torch._fused_adam_`` are what torch's own optimisers run: one
call over a list of tensors instead of a call per tensor. torch's stubs keep them private,
so to a type checker they are ``Any``. Every use in the engine goes through the wrappers
here, which state what goes in and what comes out, so the callers are checked, and a torch
release that renames a kernel breaks this module alone. The wrappers add nothing to the
arithmetic: each is the kernel's call, so results are bit-equal to calling it directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

#: torch itself, looked up for its private kernel names (untyped in its stubs) here only.
_kernels: Any = torch

#: What a kernel combines a list of tensors with: one number or tensor for all, or one
#: per tensor.
Operand = float | Tensor | Sequence[Tensor] | Sequence[float]


def norm(tensors: Sequence[Tensor]) -> list[Tensor]:
    """The 2-norm of each tensor (0-dim tensors)."""
    return list(_kernels._foreach_norm(list(tensors)))


def sqrt(tensors: Sequence[Tensor]) -> list[Tensor]:
    """Each tensor's elementwise square root, as new tensors."""
    return list(_kernels._foreach_sqrt(list(tensors)))


def sub(tensors: Sequence[Tensor], other: Operand) -> list[Tensor]:
    """``tensors - other``, as new tensors."""
    return list(_kernels._foreach_sub(list(tensors), other))


def mul(tensors: Sequence[Tensor], other: Operand) -> list[Tensor]:
    """``tensors * other``, as new tensors."""
    return list(_kernels._foreach_mul(list(tensors), other))


def add_(tensors: Sequence[Tensor], other: Operand, *, alpha: float | None = None) -> None:
    """``tensors += alpha * other`` in place (``alpha`` only with tensors as ``other``:
    the scalar overloads take none)."""
    if alpha is None:
        _kernels._foreach_add_(list(tensors), other)
    else:
        _kernels._foreach_add_(list(tensors), other, alpha=alpha)


def mul_(tensors: Sequence[Tensor], other: Operand) -> None:
    """``tensors *= other`` in place."""
    _kernels._foreach_mul_(list(tensors), other)


def div_(tensors: Sequence[Tensor], other: Operand) -> None:
    """``tensors /= other`` in place."""
    _kernels._foreach_div_(list(tensors), other)


def lerp_(tensors: Sequence[Tensor], ends: Sequence[Tensor], weight: Operand) -> None:
    """``tensors += weight * (ends - tensors)`` in place."""
    _kernels._foreach_lerp_(list(tensors), list(ends), weight)


def addcmul_(tensors: Sequence[Tensor], first: Sequence[Tensor], second: Sequence[Tensor]) -> None:
    """``tensors += first * second`` in place."""
    _kernels._foreach_addcmul_(list(tensors), list(first), list(second))


def addcdiv_(
    tensors: Sequence[Tensor], first: Sequence[Tensor], second: Sequence[Tensor], value: float
) -> None:
    """``tensors += value * first / second`` in place."""
    _kernels._foreach_addcdiv_(list(tensors), list(first), list(second), value=value)


def fused_adam_(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    steps: list[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """torch's fused Adam kernel (no amsgrad, no gradient scaling): one step of every
    parameter in place, ``steps`` already counted."""
    _kernels._fused_adam_(
        params, grads, exp_avgs, exp_avg_sqs, [], steps,
        amsgrad=False, lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay,
        eps=eps, maximize=maximize, grad_scale=None, found_inf=None,
    )  # fmt: skip
