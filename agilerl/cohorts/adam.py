"""Adam over a cohort's stacked parameters: each agent its own learning rate, step count
and moments, and agents not due to learn left exactly as they were.

The arithmetic is torch's Adam (no weight decay, no amsgrad: what every agent's
:class:`~agilerl.algorithms.optim.FusedAdam` runs): ``m <- beta1 m + (1 - beta1) g``,
``v <- beta2 v + (1 - beta2) g^2``, ``p <- p - lr / (1 - beta1^t) * m / (sqrt(v) /
sqrt(1 - beta2^t) + eps)``, per agent along the leading dimension. An agent outside the
step's mask gets coefficients that change nothing (a lerp by 0, a product by 1, a step of
0), so its weights and moments stay bit-equal. The state is read from the agents'
optimisers when the cohort forms and written back into them (in place where it exists)
when it ends, in torch's own layout: a saved agent never shows it trained in a cohort.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from agilerl.algorithms.optim import column, multi_tensor


def clip_per_agent(grads: Sequence[torch.Tensor], max_norm: float | torch.Tensor) -> None:
    """Each agent's gradients (the ``p``-th slice of every stacked gradient) scaled to a
    global 2-norm of at most its ``max_norm`` (one for all, or ``(P,)``; 0 leaves an
    agent's unclipped): the arithmetic of
    :func:`~agilerl.algorithms.optim.clip_grad_norm`, per agent."""
    squares = torch.stack([g.reshape(g.shape[0], -1).pow(2).sum(1) for g in grads]).sum(0)
    scale = torch.clamp(max_norm / (squares.sqrt() + 1e-6), max=1.0)
    if isinstance(max_norm, torch.Tensor):
        scale = torch.where(max_norm > 0, scale, torch.ones_like(scale))
    for g in grads:
        g.mul_(column(scale, g))


class StackedAdam:
    """Adam for the stacked ``params`` (each ``(P, ...)``); ``own[p]`` are agent ``p``'s
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
        # of its parameters together, so they agree).
        first = [
            optimizer.state.get(agent_params[0], {})
            for optimizer, agent_params in zip(optimizers, own, strict=True)
        ]
        self.steps = torch.tensor(
            [float(state["step"]) if "step" in state else 0.0 for state in first],
            dtype=torch.float64,
            device=device,
        )

    @staticmethod
    def _stack(states: list[dict], key: str, like: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            [
                state[key].detach().to(like.dtype) if key in state else torch.zeros_like(like[0])
                for state in states
            ]
        )

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor], mask: torch.Tensor) -> None:
        """One Adam step of the agents where ``mask`` (P, bool) holds (``torch._foreach``
        calls over every parameter at once, as torch's own multi-tensor Adam)."""
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
        for p in self.params:
            key = (p.dim(), p.dtype)
            if key not in shaped:
                shaped[key] = {k: column(v, p).to(p.dtype) for k, v in coefficients.items()}
        columns = {k: [shaped[(p.dim(), p.dtype)][k] for p in self.params] for k in coefficients}
        grads = list(grads)
        multi_tensor._foreach_lerp_(self.exp_avg, grads, columns["w1"])
        multi_tensor._foreach_mul_(self.exp_avg_sq, columns["keep2"])
        multi_tensor._foreach_addcmul_(
            self.exp_avg_sq, multi_tensor._foreach_mul(grads, columns["w2"]), grads
        )
        denom = multi_tensor._foreach_sqrt(self.exp_avg_sq)
        multi_tensor._foreach_div_(denom, columns["root"])
        multi_tensor._foreach_add_(denom, self.eps)
        multi_tensor._foreach_addcdiv_(
            self.params, multi_tensor._foreach_mul(self.exp_avg, columns["step"]), denom, value=-1.0
        )

    def minimise(
        self,
        loss: torch.Tensor,
        mask: torch.Tensor,
        max_grad_norm: float | torch.Tensor | None = None,
    ) -> None:
        """One step on ``loss`` (the sum of the agents' own losses: an agent's stacked
        parameters meet only its rows, so its gradient is its own loss's) for the agents
        in ``mask``, each agent's gradients clipped to ``max_grad_norm`` on their own (one
        for all or ``(P,)``; none when None or 0)."""
        grads = [
            torch.zeros_like(p) if g is None else g
            for p, g in zip(
                self.params,
                torch.autograd.grad(loss, self.params, allow_unused=True),
                strict=True,
            )
        ]
        if isinstance(max_grad_norm, torch.Tensor) or max_grad_norm:
            clip_per_agent(grads, max_grad_norm)
        self.step(grads, mask)

    def write_back(self, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        """Agent ``p``'s moments and step count into its own optimiser's state."""
        for p, optimizer in enumerate(optimizers):
            if self.steps[p] == 0:
                continue  # never stepped: its optimiser has no state, as before
            for i, param in enumerate(self.own[p]):
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
