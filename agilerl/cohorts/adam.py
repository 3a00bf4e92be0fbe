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


def _column(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``values`` (P,) shaped to broadcast over ``like`` (P, ...)."""
    return values.reshape(-1, *([1] * (like.dim() - 1)))


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
        """One Adam step of the agents where ``mask`` (P, bool) holds."""
        live = mask.to(torch.float64)
        self.steps += live
        t = torch.clamp(self.steps, min=1.0)  # an agent that never stepped: no 0/0
        step_size = live * self.lr / (1.0 - self.beta1**t)
        root = torch.sqrt(1.0 - self.beta2**t)
        w1 = live * (1.0 - self.beta1)
        keep2 = 1.0 - live * (1.0 - self.beta2)
        w2 = live * (1.0 - self.beta2)
        for p, g, m, v in zip(self.params, grads, self.exp_avg, self.exp_avg_sq, strict=True):
            dtype = p.dtype
            m.lerp_(g, _column(w1, m).to(dtype))
            v.mul_(_column(keep2, v).to(dtype)).addcmul_(g * _column(w2, v).to(dtype), g)
            denom = v.sqrt().div_(_column(root, v).to(dtype)).add_(self.eps)
            p.addcdiv_(m * _column(step_size, p).to(dtype), denom, value=-1.0)

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
