"""A view of P agents of one algorithm: what an algorithm's update is written against.

An algorithm writes its learning step once, as ``update(view, batch)``, for a
:class:`Population` of P agents; ``learn(batch)`` is that update on :meth:`Population.of`
one agent. What the view hides is how P agents are held:

* **networks** (:meth:`Population.net`): the agent's own modules in the view of one; in a stacked view,
  one stacked network per attribute (:class:`~agilerl.cohorts.stacking.StackedNetwork`:
  parameters stacked along a leading population dimension, agent ``p``'s rows the
  ``p``-th block of every input and output);
* **per-agent hyperparameters** (:meth:`Population.value`, :meth:`Population.per_row`):
  the agent's own float in the view of one, a ``(P,)`` column (or one value per row)
  when stacked;
* **optimisers** (:meth:`Population.minimise`): the agent's own
  :class:`~agilerl.algorithms.optim.FusedAdam` in the view of one, a
  :class:`~agilerl.algorithms.optim.StackedAdam` per optimiser of ``optimizer_specs``
  when stacked, which leaves agents outside the ``live`` mask bit-equal; a loss term whose
  gradient is known in closed form (an L2 pull towards anchor weights) is added to the
  gradients before the step (``gradient``), each agent's from its part (:meth:`slices`);
* **targets** (:meth:`Population.polyak`): one soft update of every target network the
  algorithm's ``target_networks`` names, each agent by its own ``tau``;
* **rows** (:meth:`Population.blocks`): which agents learn and which rows of the batch
  are each one's own (agents of a cohort may have different batch sizes: a block is
  padded to the largest, and an agent's loss reads only its own first ``batch_size``
  rows).

Per-agent results are each agent's own: an agent's stacked parameters meet only its rows,
so the gradient of the summed losses (:meth:`Population.total`) is, for each agent, its
own loss's. The stacked view is built by :mod:`agilerl.cohorts` (its networks and
optimisers stacked from the agents' and written back when the cohort ends); this module
only states the contract and the view of one.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import numpy as np
import torch

from agilerl.algorithms.optim import GradientTerm, gradient_step, polyak_update
from agilerl.components.observations import split_tree
from agilerl.networks.base import Observation

Agent = TypeVar("Agent")

#: ``own_action(agent, obs, mask, output)``: one agent's actions from its block of the
#: view's observations, action masks and forward output.
OwnAction = Callable[[Any, Any, Any, Any], np.ndarray]


class Minimiser(Protocol):
    """One optimiser of a view: a step on a loss for the agents in ``live``, each agent's
    gradients clipped to ``max_grad_norm`` on their own (none when None or 0; one for
    all, or each agent's ``(P,)`` as :meth:`Population.value` gives it), after
    ``gradient`` (None: nothing) added its closed-form term to them."""

    def minimise(
        self,
        loss: torch.Tensor,
        live: torch.Tensor | None,
        max_grad_norm: float | torch.Tensor | None,
        gradient: GradientTerm | None = None,
    ) -> None: ...


class OwnOptimizer:
    """An agent's own optimiser as a :class:`Minimiser` (the view of one)."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer

    def minimise(
        self,
        loss: torch.Tensor,
        live: torch.Tensor | None,
        max_grad_norm: float | torch.Tensor | None,
        gradient: GradientTerm | None = None,
    ) -> None:
        assert not isinstance(max_grad_norm, torch.Tensor)  # the view of one: its own float
        gradient_step(self.optimizer, loss, max_grad_norm, gradient)


class Population(Generic[Agent]):
    """P agents of one algorithm as the update sees them (see the module docstring).

    ``networks`` maps each network attribute to what runs for the P agents, ``optimizers``
    each optimiser attribute to its :class:`Minimiser`, ``targets`` is the position-by-
    position pairs of target and online tensors (None: each agent's own ``soft_update``),
    and ``values`` the per-agent hyperparameters as ``(P,)`` tensors (None: read from the
    agent, P = 1)."""

    def __init__(
        self,
        agents: Sequence[Agent],
        networks: dict[str, Any],
        optimizers: dict[str, Minimiser],
        targets: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None,
        device: torch.device | None = None,
    ) -> None:
        self.agents = list(agents)
        self.count = len(self.agents)
        #: The agent whose structure (spaces, code-path flags) every agent of the view
        #: shares: a cohort is formed only of agents equal in it.
        self.template = self.agents[0]
        self.networks = networks
        self.optimizers = optimizers
        self.targets = targets
        self.device = device
        self._columns: dict[tuple[str, torch.dtype], torch.Tensor] = {}

    @classmethod
    def of(cls, agent: Agent) -> Population[Agent]:
        """The view of one agent: its own networks and optimisers, its own floats."""
        specs: dict[str, Any] = getattr(agent, "optimizer_specs", {})
        networks = {name: getattr(agent, name) for name in _network_names(agent)}
        optimizers: dict[str, Minimiser] = {
            name: OwnOptimizer(getattr(agent, name)) for name in specs
        }
        return cls([agent], networks, optimizers)

    #: Whether the agents' networks run stacked (a view of P agents on one forward;
    #: :class:`~agilerl.cohorts.views.StackedPopulation`) rather than as one agent's own.
    stacked: ClassVar[bool] = False

    # -- networks and hyperparameters ---------------------------------------------------
    def net(self, name: str) -> Any:
        """The network attribute ``name`` of the P agents, ready to call on their rows."""
        return self.networks[name]

    def value(self, name: str, dtype: torch.dtype = torch.float32) -> float | torch.Tensor:
        """Hyperparameter ``name``: the agent's own float (P = 1) or each agent's, ``(P,)``
        of ``dtype`` (built once per view)."""
        if not self.stacked:
            return getattr(self.template, name)
        key = (name, dtype)
        if key not in self._columns:
            self._columns[key] = torch.tensor(
                [float(getattr(agent, name)) for agent in self.agents],
                dtype=dtype,
                device=self.device,
            )
        return self._columns[key]

    def per_row(
        self, name: str, rows: int, dtype: torch.dtype = torch.float32, column: bool = False
    ) -> float | torch.Tensor:
        """Hyperparameter ``name`` for every row of a batch of ``rows`` per agent: the
        agent's float (P = 1) or ``(P * rows,)``, agent ``p``'s value over its block
        (``(P * rows, 1)`` with ``column``, to broadcast over a row's values)."""
        values = self.value(name, dtype)
        if not isinstance(values, torch.Tensor):
            return values
        per_row = values.repeat_interleave(rows)
        return per_row.unsqueeze(1) if column else per_row

    # -- rows ---------------------------------------------------------------------------
    def rows(self, batch_rows: int) -> int:
        """Rows per agent of a batch of ``batch_rows`` (the blocks are equal)."""
        return batch_rows // self.count

    def blocks(self, batch_rows: int, live: np.ndarray | None = None) -> list[tuple[int, Any]]:
        """``(p, rows)`` for every agent ``p`` that learns (``live``; None: all), with the
        index of its own rows in a batch of ``batch_rows``: the whole batch at P = 1, else
        its block's first ``batch_size`` rows (the rest is padding)."""
        if not self.stacked:
            return [(0, slice(None))] if live is None or live[0] else []
        rows = self.rows(batch_rows)
        return [
            (p, slice(p * rows, p * rows + own_size(agent, rows)))
            for p, agent in enumerate(self.agents)
            if live is None or live[p]
        ]

    @staticmethod
    def own(tensor: torch.Tensor, rows: Any) -> torch.Tensor:
        """``tensor``'s rows ``rows`` (the whole tensor for the whole batch)."""
        if isinstance(rows, slice) and rows == slice(None):
            return tensor
        return tensor[rows]

    def live_mask(self, live: np.ndarray | None) -> torch.Tensor | None:
        """``live`` as a ``(P,)`` bool tensor on the view's device (None stays None)."""
        if live is None:
            return None
        return torch.as_tensor(np.asarray(live, dtype=bool), device=self.device)

    def mask_of(self, learning: Sequence[int]) -> torch.Tensor | None:
        """The ``(P,)`` mask of the agents ``learning`` names (None when P = 1: its one
        agent, or nothing to step)."""
        if not self.stacked:
            return None
        live = np.zeros(self.count, dtype=bool)
        live[list(learning)] = True
        return self.live_mask(live)

    def drawn(
        self,
        draw: Callable[[Any, tuple[int, ...]], np.ndarray],
        shape: tuple[int, ...],
        live: np.ndarray | None,
    ) -> np.ndarray:
        """Random draws for a batch of ``shape``, each agent's from its own generator:
        ``draw(agent, shape)`` alone; stacked (:class:`~agilerl.cohorts.views.
        StackedPopulation`), each learning agent's for its own rows, so what an agent
        draws does not depend on the others."""
        return draw(self.template, shape)

    def slices(self, tensors: Sequence[torch.Tensor], p: int) -> list[torch.Tensor]:
        """Agent ``p``'s part of tensors shaped as the view's parameters (parameters,
        their gradients, differences of them): the tensors themselves in the view of one,
        their ``p``-th slices (views: writing into them writes the stack) when stacked."""
        if not self.stacked:
            return list(tensors)
        return [tensor[p] for tensor in tensors]

    # -- stepping -----------------------------------------------------------------------
    @staticmethod
    def total(losses: Iterable[torch.Tensor]) -> torch.Tensor:
        """The sum of the agents' losses (one agent's loss itself)."""
        return functools.reduce(operator.add, losses)

    def minimise(
        self,
        optimizer: str,
        loss: torch.Tensor,
        live: torch.Tensor | None = None,
        max_grad_norm: float | torch.Tensor | None = None,
        gradient: GradientTerm | None = None,
    ) -> None:
        """One step of optimiser attribute ``optimizer`` on ``loss`` for the agents in
        ``live`` (None: all). ``gradient`` (None: nothing) adds a term known in closed
        form to the gradients of the optimiser's parameters the loss reached, before the
        clip and the step: ``gradient(params, grads)`` on the view's tensors (the agent's
        own, or stacked: take agent ``p``'s with :meth:`slices`)."""
        self.optimizers[optimizer].minimise(loss, live, max_grad_norm, gradient)

    def polyak(self, live: torch.Tensor | None = None) -> None:
        """Every target network towards its online one by each agent's ``tau``, for the
        agents in ``live`` (None: all); the others' targets stay bit-equal."""
        if self.targets is None:
            cast(Any, self.template).soft_update()  # the agent's own (cached) soft update
            return
        tau = self.value("tau", torch.float64)
        assert isinstance(tau, torch.Tensor)  # a stacked view holds targets
        polyak_update(self.targets[0], self.targets[1], tau, live)

    def reset_noise(self, name: str, p: int, generator: torch.Generator | None) -> None:
        """Agent ``p``'s new noise sample in network ``name`` (noisy layers): alone, its
        network's own ``reset_noise`` (torch's generator, which its turn seeds as the
        agent's); stacked, drawn from ``generator``, the agent's own, in the same order."""
        cast(Any, self.networks[name]).reset_noise()

    # -- acting -------------------------------------------------------------------------
    def act(
        self,
        obs: Observation,
        mask: Any,
        uniform: np.ndarray,
        forward: Callable[[Any], Any],
        own_action: OwnAction,
    ) -> np.ndarray:
        """The actions of the P agents for ``obs`` (agent ``p``'s the ``p``-th block of
        rows; ``mask`` its action masks' rows alike, or None): one ``forward`` for all,
        then ``own_action(agent, obs, mask, output)`` on each agent's block of it (its own
        exploration, its own generator), or the agent's ``uniform_actions`` where
        ``uniform[p]`` holds (no forward at all when every agent's does). The view of one
        calls ``own_action`` with output None: the agent's own acting, unchanged."""
        count = self.count
        blocks = split_tree(obs, count)
        masks = [None] * count if mask is None else split_tree(mask, count)
        # One agent acts on its own (no output computed for it: its own explore runs its
        # networks, in the modes it chooses); P agents on one forward's blocks.
        shared = self.stacked and not uniform.all()
        outputs = split_tree(forward(obs), count) if shared else [None] * count
        return np.concatenate(
            [
                agent.uniform_actions(own, own_mask)  # type: ignore[attr-defined]
                if warming
                else own_action(agent, own, own_mask, output)
                for agent, own, own_mask, output, warming in zip(
                    self.agents, blocks, masks, outputs, uniform, strict=True
                )
            ]
        )

    # -- teams (multi-agent algorithms) -------------------------------------------------
    # A team batches an agent group member by member (``[members * n]``); a view of P
    # teams holds team ``p``'s rows as the ``p``-th block of every agent's, so a group's
    # batch is ``member, team, row`` (:mod:`agilerl.cohorts.team_rows`). The view of one
    # team is its own batch: each of these is the identity (or its one team's).
    def team_major(self, tree: Any, members: int) -> Any:
        """A group batch of ``members`` members in the row order the view's networks
        take (each team's rows one block); ``tree`` itself for one team."""
        return tree

    def member_major(self, tree: Any, members: int) -> Any:
        """The inverse of :meth:`team_major` (a network's output back in the group
        batch's order); ``tree`` itself for one team."""
        return tree

    def team_blocks(
        self, batch_rows: int, members: int, live: np.ndarray | None = None
    ) -> list[tuple[int, Any]]:
        """``(p, rows)`` for every team ``p`` that learns (``live``; None: all), with the
        index of its own rows (its first ``batch_size`` of each member's, in its own
        member-major order) in a group batch of ``batch_rows`` rows of ``members``
        members: the whole batch for one team."""
        return [(0, slice(None))] if live is None or live[0] else []

    def team_drawn(
        self,
        draw: Callable[[Any, int], np.ndarray],
        total: int,
        members: int,
        live: np.ndarray | None = None,
        whole: bool = False,
    ) -> np.ndarray:
        """Random rows for a group batch of ``total`` rows of ``members`` members, each
        team's ``draw(team, n)`` for its own rows from its own generator (its
        ``batch_size`` of each member's, or every row with ``whole``: acting); one
        team's draw of ``total``."""
        return draw(self.template, total)

    def team_rollout(self, rollout: Any, p: int) -> Any:
        """Team ``p``'s block of the columns (environment copies) of a rollout: the
        rollout itself for one team."""
        return rollout

    def team_copies(self, values: dict[str, Any], p: int) -> dict[str, Any]:
        """Team ``p``'s block of every agent's per-copy ``values``: themselves for one
        team."""
        return values

    @contextmanager
    def own_networks(self) -> Iterator[None]:
        """The agents' own networks and optimisers up to date for the length of the
        block (an agent learning on its own), the view's taken from them after: nothing
        to do for the view of one, whose networks are the agent's."""
        yield

    def write_back(self) -> None:
        """Every agent's weights, target weights and optimiser states back into it, when
        the view's turn ends: nothing to do for the view of one, whose networks and
        optimisers are the agent's own."""

    # -- results ------------------------------------------------------------------------
    def reported(
        self, figures: dict[int, dict[str, torch.Tensor]]
    ) -> list[dict[str, float] | None]:
        """Agent ``p``'s figures ``figures[p]`` as floats (one device sync for every figure
        of every agent), None for an agent that reported none."""
        return reported(figures, self.count)


def own_size(agent: Any, rows: int) -> int:
    """How many of a stacked block's ``rows`` are ``agent``'s own draws (its batch size;
    the rest is padding)."""
    return int(getattr(agent, "batch_size", rows))


def learned(figures: list[dict[str, float] | None]) -> dict[str, float]:
    """What ``learn`` returns: the figures of the view of one agent, which learned."""
    assert figures[0] is not None  # a view of one with no mask: its agent learned
    return figures[0]


def reported(
    figures: dict[int, dict[str, torch.Tensor]], count: int
) -> list[dict[str, float] | None]:
    """Agent ``p``'s figures ``figures[p]`` as floats (one device sync for all), None for
    an agent of the ``count`` that reported none."""
    names = [(p, name) for p in figures for name in figures[p]]
    if not names:
        return [None] * count
    values = torch.stack([figures[p][name].detach().float() for p, name in names]).tolist()
    out: list[dict[str, float] | None] = [None] * count
    for (p, name), value in zip(names, values, strict=True):
        out[p] = {**(out[p] or {}), name: value}
    return out


def _network_names(agent: Any) -> list[str]:
    names: Callable[[], list[str]] | None = getattr(agent, "_network_attrs", None)
    return names() if names is not None else []
