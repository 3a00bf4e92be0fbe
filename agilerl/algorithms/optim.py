"""The engine's update primitives: Adam without torch's per-call bookkeeping, gradient
clipping, and the soft update of target networks.

The networks this engine trains are small: an update of a 128-wide MLP on a batch of 128
is about half a millisecond of arithmetic on one CPU core, and torch's ``Adam.step``
spends a third of that again on bookkeeping before its fused kernel runs (profiler
hooks, the per-parameter state walk, grouping tensors by device). :class:`FusedAdam`
keeps torch's Adam -- its state, its ``state_dict``, its kernel -- and calls the kernel
directly once the state exists, so its steps are bit-identical to ``torch.optim.Adam(...,
fused=True)``. :func:`gradient_step` is the backward-clip-step sequence of every update
made of one backward pass (the value-based, actor-critic and PPO families, and the neural
bandits, whose anchor term's gradient a :data:`GradientTerm` adds in closed form); the LLM
agents accumulate gradients over row chunks, so they step their ``FusedAdam`` themselves.

:func:`polyak_update` serves an agent alone (a float ``tau``, its own parameters) and P
agents trained as one (a ``(P,)`` ``tau``, their stacked parameters, agent ``p``'s the
``p``-th slice, and a ``live`` mask): agent ``p`` of P moves to the bit as it would alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import torch

from agilerl.algorithms import foreach

#: ``term(params, grads)``: adds a loss term's gradient, known in closed form, to ``grads``
#: (in place), the gradients of ``params``: an optimiser's parameters that a loss reached,
#: as the step holds them (an agent's own, or P agents' stacked), before clipping and the
#: step. Cheaper than a graph for a term over every parameter (an L2 pull towards anchor
#: weights).
GradientTerm = Callable[[list[torch.Tensor], list[torch.Tensor]], None]


def column(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``values`` (P,) shaped to broadcast over ``like`` (P, ...)."""
    return values.reshape(-1, *([1] * (like.dim() - 1)))


class FusedAdam(torch.optim.Adam):
    """``torch.optim.Adam(params, lr, fused=True)`` whose steady-state step calls the
    fused kernel directly: the optimiser of an agent alone (:class:`StackedAdam` is P
    agents').

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
            foreach.add_(steps, 1)
            foreach.fused_adam_(
                params, grads, exp_avgs, exp_avg_sqs, steps,
                lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                eps=group["eps"], maximize=group["maximize"],
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


def clip_grad_norm(
    grads: Sequence[torch.Tensor], max_norm: float | torch.Tensor, count: int | None = None
) -> torch.Tensor:
    """Scale gradients to a global 2-norm of at most ``max_norm``; returns the norms before
    clipping. One agent (``count`` None): its own ``grads``, one norm. P agents (``count``
    P): stacked ``grads`` (P, ...), each agent's slices scaled to its own norm, with one
    ``max_norm`` for all or ``(P,)`` (0 leaves an agent unclipped).

    The arithmetic is ``torch.nn.utils.clip_grad_norm_``'s for every agent: the norm of the
    per-tensor norms, then ``max_norm / (norm + 1e-6)`` capped at 1. Stacked, each tensor's
    P norms are one ``vector_norm`` over its non-leading dimensions (one kernel per
    tensor, not one per agent and tensor: a cohort of 16 clips about four times faster).
    The dimensions are reduced in place, not reshaped: a gradient of a batched matmul is
    often transposed in memory, and a reshape would copy it into another summation order,
    where reducing it as it lies sums each agent's slice in the order its own tensor gets,
    so the clip stays bit-equal to the agent's own (``tests/algorithms/test_optim.py``)."""
    if count is None:
        norms = torch.stack(foreach.norm(grads)).reshape(1, -1)
    else:
        norms = torch.stack(
            [torch.linalg.vector_norm(g, dim=tuple(range(1, g.dim()))) for g in grads], dim=1
        )
    total = torch.linalg.vector_norm(norms, dim=1)
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    if isinstance(max_norm, torch.Tensor):
        scale = torch.where(max_norm > 0, scale, torch.ones_like(scale))
    if count is None:
        foreach.mul_(grads, scale[0])
    else:
        foreach.mul_(grads, [column(scale, g) for g in grads])
    return total


class StackedAdam:
    """Adam over P agents' stacked parameters: each agent its own learning rate, step count
    and moments, and agents not due to learn left exactly as they were (the optimiser of a
    stacked :class:`~agilerl.algorithms.core.population.Population`; :class:`FusedAdam`
    is the one of an agent alone).

    The arithmetic is torch's Adam (no weight decay, no amsgrad: what every agent's
    :class:`FusedAdam` runs): ``m <- beta1 m + (1 - beta1) g``, ``v <- beta2 v + (1 -
    beta2) g^2``, ``p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) +
    eps)``, per agent along the leading dimension, in ``torch._foreach`` calls over every
    parameter at once. It is not the fused kernel's instruction sequence, so an agent's
    weights after a stacked step agree with its own step to float rounding, not to the
    bit. An agent outside the step's mask gets coefficients that change nothing (a lerp by
    0, a product by 1, a step of 0), so its weights and moments stay bit-equal. The state
    is read from the agents' optimisers when the stack forms and written back into them
    (in place where it exists) when it ends, in torch's own layout: a saved agent never
    shows it trained stacked.

    ``params`` are the stacked tensors (each ``(P, ...)``); ``own[p]`` are agent ``p``'s
    parameters in the same order, which its optimiser ``optimizers[p]`` updates alone."""

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        own: Sequence[Sequence[torch.Tensor]],
        optimizers: Sequence[torch.optim.Optimizer],
        lrs: Sequence[float],
    ) -> None:
        group = optimizers[0].param_groups[0]
        self.beta1, self.beta2 = group["betas"]
        self.eps = float(group["eps"])
        for optimizer in optimizers:
            settings = optimizer.param_groups[0]
            if (settings["betas"], settings["eps"], settings["weight_decay"], settings["amsgrad"]) != (
                group["betas"], group["eps"], 0, False,
            ):  # fmt: skip
                raise ValueError(
                    "a cohort's optimisers differ in betas, eps, weight decay or amsgrad"
                )
        self.params = list(params)
        device = self.params[0].device
        self.lr = torch.tensor([float(lr) for lr in lrs], dtype=torch.float64, device=device)
        self.own = [list(agent) for agent in own]
        self.exp_avg, self.exp_avg_sq = [], []
        for i, stacked in enumerate(self.params):
            states = [
                optimizer.state.get(agent_params[i], {})
                for optimizer, agent_params in zip(optimizers, own, strict=True)
            ]
            self.exp_avg.append(self._stack(states, "exp_avg", stacked))
            self.exp_avg_sq.append(self._stack(states, "exp_avg_sq", stacked))
        # One step count per agent (torch keeps one per parameter; an optimiser steps all
        # of the parameters a loss reaches together, so they agree): read from the first
        # parameter that has state.
        self.steps = torch.tensor(
            [
                _step_count(optimizer, agent_params)
                for optimizer, agent_params in zip(optimizers, own, strict=True)
            ],
            dtype=torch.float64,
            device=device,
        )
        #: Which parameters have Adam state: as torch's, a parameter no loss has reached
        #: yet (an encoder only another optimiser's loss trains) has none and is skipped.
        self.has_state = ["step" in optimizers[0].state.get(param, {}) for param in self.own[0]]

    @staticmethod
    def _stack(states: list[dict], key: str, like: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            [
                state[key].detach().to(like.dtype) if key in state else torch.zeros_like(like[0])
                for state in states
            ]
        )

    @torch.no_grad()
    def step(
        self,
        grads: Sequence[torch.Tensor],
        mask: torch.Tensor,
        used: Sequence[int] | None = None,
    ) -> None:
        """One Adam step of the agents where ``mask`` (P, bool) holds (``torch._foreach``
        calls over every parameter at once, as torch's own multi-tensor Adam), of the
        parameters ``used`` names (None: all; ``grads`` are theirs, in that order)."""
        index = range(len(self.params)) if used is None else used
        params = [self.params[i] for i in index]
        exp_avg = [self.exp_avg[i] for i in index]
        exp_avg_sq = [self.exp_avg_sq[i] for i in index]
        for i in index:
            self.has_state[i] = True
        live = mask.to(torch.float64)
        self.steps += live
        t = torch.clamp(self.steps, min=1.0)  # an agent that never stepped: no 0/0
        coefficients = {
            "w1": live * (1.0 - self.beta1),
            "keep2": 1.0 - live * (1.0 - self.beta2),
            "w2": live * (1.0 - self.beta2),
            "root": torch.sqrt(1.0 - self.beta2**t),
            "step": live * self.lr / (1.0 - self.beta1**t),
        }
        # Each coefficient as a column that broadcasts over every parameter's shape.
        shaped: dict[tuple[int, torch.dtype], dict[str, torch.Tensor]] = {}
        for p in params:
            key = (p.dim(), p.dtype)
            if key not in shaped:
                shaped[key] = {k: column(v, p).to(p.dtype) for k, v in coefficients.items()}
        columns = {k: [shaped[(p.dim(), p.dtype)][k] for p in params] for k in coefficients}
        grads = list(grads)
        foreach.lerp_(exp_avg, grads, columns["w1"])
        foreach.mul_(exp_avg_sq, columns["keep2"])
        foreach.addcmul_(exp_avg_sq, foreach.mul(grads, columns["w2"]), grads)
        denom = foreach.sqrt(exp_avg_sq)
        foreach.div_(denom, columns["root"])
        foreach.add_(denom, self.eps)
        foreach.addcdiv_(params, foreach.mul(exp_avg, columns["step"]), denom, value=-1.0)

    def minimise(
        self,
        loss: torch.Tensor,
        live: torch.Tensor | None,
        max_grad_norm: float | torch.Tensor | None = None,
        gradient: GradientTerm | None = None,
    ) -> None:
        """One step on ``loss`` (the sum of the agents' own losses: an agent's stacked
        parameters meet only its rows, so its gradient is its own loss's) for the agents
        in ``live`` (None: all), each agent's gradients clipped to ``max_grad_norm`` on
        their own (:func:`clip_grad_norm`; one for all or ``(P,)``; none when None or 0).
        ``gradient`` (None: nothing) adds a closed-form term to the stacked gradients of
        the parameters the loss reached before the clip (:data:`GradientTerm`)."""
        found = torch.autograd.grad(loss, self.params, allow_unused=True)
        # As torch's optimisers: a parameter the loss does not reach gets no step.
        used = [i for i, g in enumerate(found) if g is not None]
        if not used:
            return  # nothing reached (every agent masked out of the loss)
        grads = [found[i] for i in used]
        if gradient is not None:
            with torch.no_grad():
                gradient([self.params[i] for i in used], grads)
        if isinstance(max_grad_norm, torch.Tensor) or max_grad_norm:
            clip_grad_norm(grads, max_grad_norm, count=len(self.steps))
        mask = torch.ones_like(self.steps, dtype=torch.bool) if live is None else live
        self.step(grads, mask, None if len(used) == len(self.params) else used)

    def write_back(self, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        """Agent ``p``'s moments and step count into its own optimiser's state."""
        for p, optimizer in enumerate(optimizers):
            if self.steps[p] == 0:
                continue  # never stepped: its optimiser has no state, as before
            for i, param in enumerate(self.own[p]):
                if not self.has_state[i]:
                    continue  # never reached by a loss: no state, as torch leaves it
                state = optimizer.state[param]
                if "exp_avg" in state:
                    state["exp_avg"].copy_(self.exp_avg[i][p])
                    state["exp_avg_sq"].copy_(self.exp_avg_sq[i][p])
                    state["step"].fill_(float(self.steps[p]))
                else:  # torch's layout for a fused Adam's first step
                    state["step"] = torch.tensor(
                        float(self.steps[p]), dtype=torch.float32, device=param.device
                    )
                    state["exp_avg"] = self.exp_avg[i][p].clone()
                    state["exp_avg_sq"] = self.exp_avg_sq[i][p].clone()


def _step_count(optimizer: torch.optim.Optimizer, params: Sequence[torch.Tensor]) -> float:
    """The step count of ``optimizer`` for ``params``: that of the first with state (0
    when none has any yet)."""
    for param in params:
        state = optimizer.state.get(param, {})
        if "step" in state:
            return float(state["step"])
    return 0.0


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
        foreach.lerp_(targets, online, weights)


def gradient_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    max_grad_norm: float | None = None,
    gradient: GradientTerm | None = None,
) -> None:
    """``loss.backward()`` into fresh gradients, add ``gradient``'s closed-form term to
    those of the parameters it reached (None: nothing; :data:`GradientTerm`), clip them to
    ``max_grad_norm`` (none when None or 0) and step ``optimizer``."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for p in params:
        p.grad = None
    loss.backward()
    if gradient is not None:
        reached = [p for p in params if p.grad is not None]
        with torch.no_grad():
            gradient(reached, [cast(torch.Tensor, p.grad) for p in reached])
    if max_grad_norm:
        with torch.no_grad():
            clip_grad_norm([p.grad for p in params if p.grad is not None], max_grad_norm)
    optimizer.step()
