"""The engine's update primitives: Adam without torch's per-call bookkeeping, gradient
clipping, and the soft update of target networks.

The networks this engine trains are small: an update of a 128-wide MLP on a batch of 128
is about half a millisecond of arithmetic on one CPU core, and torch's ``Adam.step``
spends a third of that again on bookkeeping before its fused kernel runs (profiler
hooks, the per-parameter state walk, grouping tensors by device). :class:`FusedAdam`
keeps torch's Adam -- its state, its ``state_dict``, its kernel -- and calls the kernel
directly once the state exists, so its steps are bit-identical to ``torch.optim.Adam(...,
fused=True)``. :func:`gradient_step` is the backward-clip-step sequence of every update
made of one backward pass (the value-based, actor-critic and PPO families); the LLM
agents accumulate gradients over row chunks and the neural bandits add their anchor
term's gradient in closed form, so those two step their ``FusedAdam`` themselves.

:func:`polyak_update` serves an agent alone (a float ``tau``, its own parameters) and P
agents trained as one (a ``(P,)`` ``tau``, their stacked parameters, agent ``p``'s the
``p``-th slice, and a ``live`` mask): agent ``p`` of P moves to the bit as it would alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

#: torch's multi-tensor kernels (``torch._foreach_*``, what its own Adam runs), which its
#: stubs keep private.
multi_tensor: Any = torch


def column(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``values`` (P,) shaped to broadcast over ``like`` (P, ...)."""
    return values.reshape(-1, *([1] * (like.dim() - 1)))


class FusedAdam(torch.optim.Adam):
    """``torch.optim.Adam(params, lr, fused=True)`` whose steady-state step calls the
    fused kernel directly.

    The first step (and any step after ``load_state_dict``, a new parameter list or a
    missing gradient) goes through ``torch.optim.Adam.step``, which creates the state;
    later steps reuse the lists of the state's tensors. Settings the direct call does not
    cover (amsgrad, a tensor learning rate, several parameter groups, a closure) always
    take torch's path.
    """

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float) -> None:
        super().__init__(params, lr=lr, fused=True)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        lists = None if closure is not None else self._direct_lists()
        if lists is None:
            return super().step(closure)
        params, exp_avgs, exp_avg_sqs, steps = lists
        grads = [p.grad for p in params]
        if any(g is None for g in grads):
            return super().step()
        group = self.param_groups[0]
        beta1, beta2 = group["betas"]
        with torch.no_grad():
            multi_tensor._foreach_add_(steps, 1)
            multi_tensor._fused_adam_(
                params, grads, exp_avgs, exp_avg_sqs, [], steps,
                amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                weight_decay=group["weight_decay"], eps=group["eps"],
                maximize=group["maximize"], grad_scale=None, found_inf=None,
            )  # fmt: skip
        return None

    def _direct_lists(self) -> tuple[list[Any], list[Any], list[Any], list[Any]] | None:
        """The parameters and their state tensors when the direct call applies, else None.
        Cached against the objects that ``load_state_dict`` or a rebuild replace (the
        state mapping, the parameter list); torch's ``__getstate__`` leaves the cache out
        of copies and pickles, so a copy builds its own."""
        if len(self.param_groups) != 1:
            return None
        group = self.param_groups[0]
        params = group["params"]
        cache = getattr(self, "_direct", None)
        if cache is not None and cache[0] is self.state and cache[1] is params:
            return cache[2]
        usable = (
            not group["amsgrad"]
            and not group["capturable"]
            and not group["differentiable"]
            and not group.get("decoupled_weight_decay", False)
            and isinstance(group["lr"], float)
            and all(len(self.state.get(p, ())) > 0 for p in params)
            and len({(p.device, p.dtype) for p in params}) == 1
        )
        if not usable:
            return None
        states = [self.state[p] for p in params]
        lists = (
            list(params),
            [s["exp_avg"] for s in states],
            [s["exp_avg_sq"] for s in states],
            [s["step"] for s in states],
        )
        self._direct = (self.state, params, lists)
        return lists


def clip_grad_norm(params: list[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """Scale the gradients to a global 2-norm of at most ``max_norm``; returns the norm
    before clipping. The arithmetic of ``torch.nn.utils.clip_grad_norm_`` (per-tensor
    norms, their norm, ``max_norm / (norm + 1e-6)`` capped at 1), in three calls."""
    grads = [p.grad for p in params if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0))
    return total


def polyak_update(
    targets: Sequence[torch.Tensor],
    online: Sequence[torch.Tensor],
    tau: float | torch.Tensor,
    live: torch.Tensor | None = None,
) -> None:
    """``target <- tau * online + (1 - tau) * target``, position by position (one lerp).
    One agent: ``tau`` a float and its own tensors. P agents: ``tau`` (P,), the stacked
    tensors, and ``live`` (P, bool; None: all) the agents whose targets move; the others
    are lerped by 0, which leaves them bit-equal. Agent ``p``'s weight is ``tau[p]`` in the
    tensors' dtype, the float an agent alone passes: the same lerp, to the bit."""
    weights: float | torch.Tensor | list[torch.Tensor] = tau
    if isinstance(tau, torch.Tensor):
        rows = tau if live is None else tau * live.to(tau.dtype)
        weights = [column(rows, t).to(t.dtype) for t in targets]
    with torch.no_grad():
        multi_tensor._foreach_lerp_(list(targets), list(online), weights)


def gradient_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    max_grad_norm: float | None = None,
) -> None:
    """``loss.backward()`` into fresh gradients, clip them to ``max_grad_norm`` (none when
    None or 0) and step ``optimizer``."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for p in params:
        p.grad = None
    loss.backward()
    if max_grad_norm:
        with torch.no_grad():
            clip_grad_norm(params, max_grad_norm)
    optimizer.step()
