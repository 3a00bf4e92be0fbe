"""``DQN``: deep Q-learning with a soft-updated target network (optionally double DQN).

Action spaces: Discrete and MultiDiscrete. A MultiDiscrete action is treated as
independent sub-actions sharing one network (the :class:`QNetwork` layout): each
sub-action has its own Q-values, greedy choice and TD target, and the loss is the mean of
the sub-actions' squared TD errors.

Action masks (``info["action_mask"]`` of an environment) are 0/1 arrays laid out like the
Q-values: ``(batch, n)`` for ``Discrete(n)``, ``(batch, sum(nvec))`` for MultiDiscrete;
a single unbatched row applies to the whole batch. Greedy and random actions alike are
chosen among the allowed entries only. Transitions carry no mask for the next state, so
the TD target maximises over every action, as AgileRL's DQN does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from torch import nn
from torch.nn import functional

from agilerl.algorithms.core.exploration import EpsilonGreedy
from agilerl.algorithms.core.population import Population, learned
from agilerl.algorithms.core.rl_algorithm import RLAlgorithm
from agilerl.algorithms.optim import polyak_update
from agilerl.components.observations import leading_size
from agilerl.models.networks import QNetworkSpec
from agilerl.networks.base import Observation
from agilerl.networks.networks import QNetwork

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.dqn_schema import DQNSpec
else:
    from agilerl.models.algorithms.dqn import DQNSpec


class DQN(EpsilonGreedy, RLAlgorithm, spec=DQNSpec):
    """Deep Q-Network: epsilon-greedy acting, TD(0) learning from a replay buffer.

    ``learn_step`` and ``batch_size`` are read by the training loop (environment steps
    between updates, transitions per update); ``tau`` is the Polyak coefficient of the
    target network update made after every learning step.
    """

    eval_networks: ClassVar[tuple[str, ...]] = ("actor",)
    target_networks: ClassVar[Mapping[str, str]] = {"actor_target": "actor"}
    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "optimizer": (("actor",), "lr")
    }
    #: Gradient-norm clip of every update; None: unclipped, as AgileRL's DQN (Adam bounds
    #: each step by about lr anyway). Rainbow (10) and CQN (1) clip as AgileRL's do.
    max_grad_norm: ClassVar[float | None] = None
    learn_metrics: ClassVar[Mapping[str, str]] = {
        "td_loss": "mean squared TD error of the batch (the loss minimised)",
        "q_mean": "mean Q-value of the actions taken in the batch",
    }
    main_loss: ClassVar[str | None] = "td_loss"
    #: Attributes the update reads from the view's first agent for every agent (the code
    #: path): agents of one cohort must be equal in them.
    cohort_same: ClassVar[tuple[str, ...]] = ("double",)
    #: Learns in cohorts (CQN and RainbowDQN inherit it).
    learns_in_cohorts: ClassVar[bool] = True
    #: Exploration rate of ``predict(..., deterministic=False)``: the default schedule's
    #: final epsilon (``agilerl.components.exploration.EPS_END``; a test keeps them equal).
    sample_epsilon: ClassVar[float] = 0.01

    #: Checked in ``__init__``: one Q-value head per discrete choice.
    action_space: spaces.Discrete | spaces.MultiDiscrete
    # Built by the base class from ``optimizer_specs`` and ``target_networks``.
    optimizer: torch.optim.Optimizer
    actor_target: nn.Module

    # Set from the bound spec (``DQNSpec``) before the body runs.
    batch_size: int
    lr: float
    learn_step: int
    gamma: float
    tau: float
    double: bool
    cudagraphs: bool

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: ``DQNSpec`` (``inspect.signature(DQN)``)."""
        super().__init__(observation_space, action_space, index, **options)
        if isinstance(action_space, spaces.Discrete):
            self._nvec = [int(action_space.n)]
            self._start = np.array([int(action_space.start)], dtype=np.int64)
        elif isinstance(action_space, spaces.MultiDiscrete):
            self._nvec = [int(n) for n in np.asarray(action_space.nvec).reshape(-1)]
            self._start = np.asarray(action_space.start, dtype=np.int64).reshape(-1)
        else:
            raise TypeError(
                f"DQN needs a Discrete or MultiDiscrete action space, got {action_space!r}"
            )
        if self.cudagraphs and self.device.type == "cuda":
            warnings.warn(
                "DQN(cudagraphs=True): this engine does not capture the update in a CUDA "
                "graph; it runs eagerly",
                stacklevel=2,
            )
        # Elsewhere cudagraphs is ignored silently: CUDA graphs exist only on CUDA devices.

        self._start_index = torch.as_tensor(self._start, device=self.device)
        # Column of the first Q-value of each sub-action in the (batch, sum(nvec)) output.
        self._offsets = torch.as_tensor(
            np.concatenate([[0], np.cumsum(self._nvec[:-1])]), dtype=torch.long, device=self.device
        )
        self._target_cache: tuple[Any, list[torch.nn.Parameter]] = (None, [])
        self._mode_cache: tuple[Any, bool] = (None, False)
        self.init_exploration()
        self.actor = self._build_actor()
        self.actor.to(self.device)
        self.finish_init()

    def _build_actor(self) -> nn.Module:
        """The Q-network (a subclass builds its own kind: Rainbow's distributional one)."""
        return QNetwork(self.observation_space, self.action_space, self.network_spec(QNetworkSpec))

    # -- Q-values per sub-action ----------------------------------------------------------
    def _per_sub_action(self, q_values: torch.Tensor) -> torch.Tensor | None:
        """``(batch, D, n)`` view when every sub-action has ``n`` choices, else None."""
        if len(set(self._nvec)) == 1:
            return q_values.view(q_values.shape[0], len(self._nvec), self._nvec[0])
        return None

    def _argmax(self, q_values: torch.Tensor) -> torch.Tensor:
        """Index of the best choice of each sub-action: ``(batch, D)``, 0-based."""
        grouped = self._per_sub_action(q_values)
        if grouped is not None:
            return grouped.argmax(dim=-1)
        return torch.stack([q.argmax(dim=-1) for q in q_values.split(self._nvec, -1)], -1)

    def _max(self, q_values: torch.Tensor) -> torch.Tensor:
        """Best Q-value of each sub-action: ``(batch, D)``."""
        grouped = self._per_sub_action(q_values)
        if grouped is not None:
            return grouped.amax(dim=-1)
        return torch.stack([q.amax(dim=-1) for q in q_values.split(self._nvec, -1)], -1)

    def _gather(self, q_values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Q-values of the chosen 0-based sub-action indices ``(batch, D)``."""
        return q_values.gather(1, index + self._offsets)

    # -- acting ---------------------------------------------------------------------------
    def _mask(self, action_mask: Any, batch: int) -> np.ndarray | None:
        if action_mask is None:
            return None
        mask = np.asarray(action_mask).astype(bool, copy=False)
        width = sum(self._nvec)
        if mask.shape not in ((width,), (batch, width)):
            raise ValueError(
                f"action_mask must have shape ({batch}, {width}) (or ({width},)), got {mask.shape}"
            )
        for part in np.split(mask, np.cumsum(self._nvec[:-1]), axis=-1):
            if not part.any(axis=-1).all():
                raise ValueError("action_mask leaves an observation (sub-action) no allowed action")
        return mask

    def _mode_dependent(self) -> bool:
        """Whether the actor has layers that behave differently in training (batch norm,
        dropout). Cached per spec object: every mutation replaces the network's spec, and a
        new network (loaded, cloned) has its own."""
        if self._mode_cache[0] is not self.actor.spec:
            dependent = any(
                isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd))
                or (isinstance(m, nn.RNNBase) and m.dropout > 0)
                for m in self.actor.modules()
            )
            self._mode_cache = (self.actor.spec, dependent)
        return self._mode_cache[1]

    def _greedy_index(
        self, obs: Observation, mask: np.ndarray | None, q_values: torch.Tensor | None = None
    ) -> np.ndarray:
        """The greedy choices for ``obs`` (from ``q_values`` when already computed: a
        population's one forward)."""
        if q_values is not None:
            return self._argmax_allowed(q_values, mask)
        # Acting uses evaluation mode where it matters: batch-norm running statistics, no
        # dropout, so an environment's action does not depend on the others in the batch.
        # Switching modes costs about a third of a small forward pass, so only then.
        switch = self.actor.training and self._mode_dependent()
        if switch:
            self.actor.eval()
        try:
            with torch.inference_mode():
                return self._argmax_allowed(self.actor(obs), mask)
        finally:
            if switch:
                self.actor.train()

    def _argmax_allowed(self, q_values: torch.Tensor, mask: np.ndarray | None) -> np.ndarray:
        """The best allowed choice of each sub-action, as an array."""
        if mask is not None:
            allowed = torch.as_tensor(mask, device=q_values.device)
            q_values = q_values.masked_fill(~allowed, -torch.inf)
        return self._argmax(q_values).cpu().numpy()

    def _random_index(self, batch: int, mask: np.ndarray | None) -> np.ndarray:
        if mask is None:
            return self.rng.integers(0, self._nvec, size=(batch, len(self._nvec)))
        # The argmax of uniform scores over the allowed entries is uniform among them.
        scores = np.where(mask, self.rng.random((batch, sum(self._nvec))), -1.0)
        parts = np.split(scores, np.cumsum(self._nvec[:-1]), axis=1)
        return np.stack([part.argmax(axis=1) for part in parts], axis=1)

    def _to_actions(self, index: np.ndarray) -> np.ndarray:
        actions = index.astype(np.int64, copy=False) + self._start
        if isinstance(self.action_space, spaces.Discrete):
            return actions[:, 0]
        return actions.reshape(-1, *self.action_space.shape)

    def get_action(
        self,
        obs: Observation,
        epsilon: float = 0.0,
        action_mask: Any = None,
        q_values: torch.Tensor | None = None,
    ) -> np.ndarray:
        """Epsilon-greedy actions for a batch of observations: each row is uniformly
        random (among the allowed actions) with probability ``epsilon``, else greedy
        (on ``q_values`` when given: the Q-values of ``obs``, already computed).

        Returns int64 actions, ``(batch,)`` for Discrete, ``(batch, *shape)`` for
        MultiDiscrete, with the space's ``start`` added.
        """
        batch = leading_size(obs)
        mask = self._mask(action_mask, batch)
        explore = self.rng.random(batch) < epsilon if epsilon > 0 else np.zeros(batch, bool)
        if explore.all():
            return self._to_actions(self._random_index(batch, mask))
        greedy = self._greedy_index(obs, mask, q_values)
        if not explore.any():
            return self._to_actions(greedy)
        random = self._random_index(batch, mask)
        return self._to_actions(np.where(explore[:, None], random, greedy))

    def uniform_actions(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        batch = leading_size(obs)
        return self._to_actions(self._random_index(batch, self._mask(action_mask, batch)))

    def explore(
        self, obs: Observation, action_mask: Any = None, q_values: torch.Tensor | None = None
    ) -> np.ndarray:
        """Epsilon-greedy actions at the schedule's epsilon for this agent's ``steps``
        (decayed once per vector step of ``batch`` envs); ``q_values``: those of ``obs``,
        already computed."""
        self.epsilon = self.epsilon_schedule.at(self.steps, leading_size(obs))
        return self.get_action(obs, self.epsilon, action_mask, q_values)

    def act(
        self, view: Population[DQN], obs: Observation, action_mask: Any, uniform: np.ndarray
    ) -> np.ndarray:
        """Every agent of ``view`` exploring on its block of ``obs``: one forward of the
        view's networks, then each agent's own :meth:`explore` (its epsilon, its
        generator, its action masks; RainbowDQN's greedy choice on its noisy network's
        Q-values, which the forward drew nothing for) on its block of the Q-values;
        uniform actions for the agents ``uniform`` names."""

        def forward(rows: Any) -> torch.Tensor:
            with torch.no_grad():
                return view.net("actor")(rows)

        def own(agent: DQN, own_obs: Any, own_mask: Any, q_values: Any) -> np.ndarray:
            return agent.explore(own_obs, own_mask, q_values)

        return view.act(obs, action_mask, uniform, forward, own)

    def eval_action(
        self, obs: Observation, action_mask: Any = None, actor: Any = None
    ) -> np.ndarray:
        """Greedy actions (among the allowed ones); of ``actor`` when given (a network of
        this agent's architecture, e.g. a cohort's stacked one), else of its own."""
        q_values = None if actor is None else _outputs(actor, obs)
        return self.get_action(obs, 0.0, action_mask, q_values)

    def sample_action(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Epsilon-greedy actions with :attr:`sample_epsilon`, the exploration rate the
        off-policy loop ends its decay at: how the agent acted at the end of training."""
        return self.get_action(obs, self.sample_epsilon, action_mask)

    # -- learning -------------------------------------------------------------------------
    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        """One gradient step on a batch of transitions (a :class:`ReplayBuffer` sample):
        :meth:`update` of this agent alone. Returns :attr:`learn_metrics`: the loss
        (``td_loss``) and ``q_mean``."""
        return learned(self.update(Population.of(self), batch))

    def update(
        self,
        view: Population[DQN],
        batch: dict[str, Any],
        live: np.ndarray | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float] | None]:
        """One learning step of the agents of ``view`` that ``live`` names (None: all),
        each on its rows of ``batch``; the metrics each reported (None: it did not learn).
        DQN draws nothing as it learns (``generators``, the agents' own, serve the
        algorithms that do).

        TD target per sub-action: ``r + gamma * (1 - done) * Q_target(s', a*)`` with ``a*``
        the target network's argmax, or the online network's with ``double``. ``done`` is
        termination only: a truncated episode still bootstraps. Each agent's loss is the
        mean squared TD error of its rows (MSE, as AgileRL's DQN), one Adam step on it
        (unclipped, as AgileRL's; :attr:`max_grad_norm` clips in subclasses), and its
        target network then moves towards the online one by its ``tau`` (Polyak
        averaging)."""
        q_values, index, q_taken, target = self._td(view, batch)
        figures: dict[int, dict[str, torch.Tensor]] = {}
        losses = []
        for p, rows in view.blocks(q_values.shape[0], live):
            own_q = view.own(q_taken, rows)
            loss, figs = view.agents[p]._loss(
                view.own(q_values, rows), view.own(index, rows), own_q, view.own(target, rows)
            )
            figures[p] = {**figs, "q_mean": own_q.detach().mean()}
            losses.append(loss)
        if not losses:
            return [None] * view.count
        mask = view.live_mask(live)
        view.minimise("optimizer", view.total(losses), mask, self.max_grad_norm)
        view.polyak(mask)
        return view.reported(figures)

    def _td(
        self, view: Population[DQN], batch: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The online Q-values of the batch ``(batch, sum(nvec))``, the 0-based taken
        sub-action indices ``(batch, D)``, their Q-values and the (no-gradient) TD targets
        ``(batch, D)`` of every agent of ``view`` (its ``gamma`` on its rows): what every
        loss of this family is built from."""
        actor, actor_target = view.net("actor"), view.net("actor_target")
        q_values = actor(batch["obs"])
        rows = q_values.shape[0]
        action = torch.as_tensor(batch["action"], device=self.device).long()
        index = action.reshape(rows, -1) - self._start_index
        q_taken = self._gather(q_values, index)
        with torch.no_grad():
            next_target = actor_target(batch["next_obs"])
            if self.double:
                next_q = self._gather(next_target, self._argmax(actor(batch["next_obs"])))
            else:
                next_q = self._max(next_target)
            reward = torch.as_tensor(batch["reward"], device=self.device).to(q_taken)
            done = torch.as_tensor(batch["done"], device=self.device).to(q_taken)
            not_done = 1.0 - done.reshape(rows, 1)
            gamma = view.per_row("gamma", view.rows(rows), column=True)
            target = reward.reshape(rows, 1) + gamma * not_done * next_q
        return q_values, index, q_taken, target

    def _loss(
        self,
        q_values: torch.Tensor,
        index: torch.Tensor,
        q_taken: torch.Tensor,
        target: torch.Tensor,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss minimised and the figures reported beside ``q_mean`` (DQN: the mean
        squared TD error, which is both)."""
        loss = functional.mse_loss(q_taken, target)
        return loss, {"td_loss": loss}

    def _online_parameters(self) -> list[torch.nn.Parameter]:
        """The actor's parameters, in ``parameters()`` order. Read from the optimiser, which
        is rebuilt whenever the actor changes: walking the module tree every update costs
        as much as a small layer's forward pass."""
        return self.optimizer.param_groups[0]["params"]

    def _target_parameters(self) -> list[torch.nn.Parameter]:
        """The target's parameters, cached per target object: the base class replaces the
        target network (never its parameters) when the architecture changes."""
        if self._target_cache[0] is not self.actor_target:
            self._target_cache = (self.actor_target, list(self.actor_target.parameters()))
        return self._target_cache[1]

    def soft_update(self) -> None:
        """``target <- tau * online + (1 - tau) * target`` for every parameter."""
        polyak_update(self._target_parameters(), self._online_parameters(), self.tau)


def _outputs(network: Any, obs: Observation) -> torch.Tensor:
    """``network(obs)``, outside autograd."""
    with torch.inference_mode():
        return network(obs)
