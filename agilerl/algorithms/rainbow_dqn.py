"""``RainbowDQN``: distributional (C51), dueling, noisy, double DQN with n-step returns and
prioritised replay.

It is a :class:`~agilerl.algorithms.dqn.DQN` (same action masks, Polyak target update,
optimiser, gradient clip, checkpoints and mutations) whose network is a
:class:`~agilerl.networks.rainbow.RainbowQNetwork`: a return distribution over
``num_atoms`` atoms spread evenly on ``[v_min, v_max]`` per action, with noisy output
layers. Action spaces: Discrete.

**Learning** (:meth:`RainbowDQN.learn`). For each transition the target distribution is
the target network's distribution at ``next_obs`` for the action the *online* network
rates best there (double DQN), shifted and shrunk to ``reward + discount * (1 - done) *
z`` and projected back onto the atoms (:func:`project_distribution`). The loss per
transition is the cross-entropy between that target and the online network's
distribution of the action taken. A batch from a plain or prioritised buffer is 1-step
(``discount = gamma``). With an n-step buffer the batch carries the n-step transition of
the same slots under ``"n_step"`` (``discount = gamma^k`` per row, ``k <= n_step``
shortened at an episode's end); the loss is then the n-step one, or with
``combined_reward`` the sum of the 1-step and n-step losses (as AgileRL's). With
prioritised replay the batch mean is weighted by the importance-sampling weights, and
the per-transition losses are the new priorities (:meth:`RainbowDQN.learn_prioritized`;
the buffer adds ``prior_eps``). Gradients are clipped to a norm of 10, the target moves
by ``tau``, and both networks draw fresh noise after every update.

**Exploration** is the noisy layers' (no epsilon): :meth:`RainbowDQN.explore` acts
greedily with the current noise sample, which changes after every learning step, as in
AgileRL. Evaluation (:meth:`RainbowDQN.eval_action`) uses the mean weights, i.e. the
network without noise (AgileRL's ``training=False``).

``beta`` is the importance-sampling exponent at the start of the run; the off-policy
loop anneals it linearly to 1 over the run's ``max_steps``
(:func:`agilerl.components.replay.annealed_beta`). ``n_step`` is the horizon of the
n-step buffer, which the run builds from ``replay_buffer.n_step_buffer`` (the trainer
requires ``replay_buffer.n_step_buffer_args.n_step`` to equal it); without an n-step
buffer the agent learns from 1-step returns, as AgileRL's does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from agilerl.algorithms.core.exploration import PrioritizedLearning
from agilerl.algorithms.core.population import Population, learned
from agilerl.algorithms.dqn import DQN, _outputs
from agilerl.algorithms.hyperparameters import parse_hp_config
from agilerl.components.exploration import EpsilonSchedule
from agilerl.components.observations import leading_size
from agilerl.models.networks import RainbowQNetworkSpec
from agilerl.networks.base import Observation
from agilerl.networks.rainbow import RainbowQNetwork

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.rainbow_dqn_schema import RainbowDQNSpec
else:
    from agilerl.models.algorithms.rainbow_dqn import RainbowDQNSpec


def project_distribution(
    probs: torch.Tensor,
    reward: torch.Tensor,
    discount: torch.Tensor | float,
    done: torch.Tensor,
    support: torch.Tensor,
) -> torch.Tensor:
    """The C51 projection: the distribution of ``reward + discount * (1 - done) * Z``,
    ``Z`` distributed as ``probs`` ``(batch, atoms)`` on ``support`` ``(atoms,)``, put back
    onto ``support``.

    Each shifted atom is clamped into ``[v_min, v_max]`` and its probability split between
    the two atoms around it in proportion to closeness (all of it to an atom it lands on).
    ``reward``, ``done`` and a tensor ``discount`` hold one value per row. Mass is kept:
    every row of the result sums to its row of ``probs``.
    """
    atoms = support.numel()
    v_min, v_max = float(support[0]), float(support[-1])
    delta = (v_max - v_min) / (atoms - 1)
    rows = probs.shape[0]
    discount = torch.as_tensor(discount, dtype=probs.dtype, device=probs.device)
    scale = discount.reshape(-1, 1) * (1.0 - done.to(probs).reshape(rows, 1))
    shifted = (reward.to(probs).reshape(rows, 1) + scale * support.reshape(1, atoms)).clamp(
        v_min, v_max
    )
    position = (shifted - v_min) / delta  # in [0, atoms - 1]
    # The atom below (the last but one at the top, so the one above always exists) and
    # the share of the one above: position atoms - 1 gives all of it to the top atom.
    lower = position.floor().clamp(0, atoms - 2)
    upper_share = position - lower
    lower = lower.long()
    projected = torch.zeros_like(probs)
    projected.scatter_add_(1, lower, probs * (1.0 - upper_share))
    projected.scatter_add_(1, lower + 1, probs * upper_share)
    return projected


class RainbowDQN(PrioritizedLearning, DQN, spec=RainbowDQNSpec):
    """Rainbow DQN (see the module docstring). ``batch_size`` and ``learn_step`` are read
    by the training loop; ``beta`` and ``prior_eps`` by prioritised replay."""

    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": (
            "cross-entropy between the projected target and the predicted return "
            "distribution (importance-weighted with prioritised replay; the loss minimised)"
        ),
        "q_mean": "mean Q-value (expected return) of the actions taken in the batch",
    }
    main_loss: ClassVar[str | None] = "loss"
    #: As AgileRL's Rainbow: the gradient's global norm is clipped at 10.
    max_grad_norm: ClassVar[float | None] = 10.0
    # Batches may carry the n-step transitions of their slots (an n-step buffer serves
    # them) and be drawn by priority: PrioritizedLearning says so.
    #: ``combined_reward`` decides which losses the update sums.
    cohort_same: ClassVar[tuple[str, ...]] = ("combined_reward",)
    #: Settings fixed for a run: the network's atoms and noise are built from them and the
    #: n-step buffer's horizon from ``n_step``; a mutated value would leave both behind.
    fixed_settings: ClassVar[tuple[str, ...]] = (
        "num_atoms",
        "v_min",
        "v_max",
        "noise_std",
        "n_step",
    )

    # Set from the bound spec (``RainbowDQNSpec``) before the body runs.
    beta: float
    prior_eps: float
    num_atoms: int
    v_min: float
    v_max: float
    noise_std: float
    n_step: int
    combined_reward: bool

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: ``RainbowDQNSpec``
        (``inspect.signature(RainbowDQN)``)."""
        if not isinstance(action_space, spaces.Discrete):
            raise TypeError(f"RainbowDQN needs a Discrete action space, got {action_space!r}")
        fixed = [
            name
            for name in parse_hp_config(options.get("hp_config"))
            if name in self.fixed_settings
        ]
        if fixed:
            raise ValueError(
                f"hp_config.{fixed[0]}: RainbowDQN's {', '.join(self.fixed_settings)} are "
                "fixed for a run (the network and the n-step buffer are built from them); "
                "they cannot mutate"
            )
        # DQN's settings that Rainbow's spec does not hold: the online network chooses
        # the next action (double DQN); the update is not captured in a CUDA graph.
        self.double = True
        self.cudagraphs = False
        super().__init__(observation_space, action_space, index, **options)

    def check_hyperparameters(self) -> None:
        """What the schema cannot say: a distribution needs two atoms at least (the
        schema allows one), over a support that is not empty."""
        if self.num_atoms < 2:
            raise ValueError(f"RainbowDQN(num_atoms={self.num_atoms!r}): must be at least 2")
        if not self.v_min < self.v_max:
            raise ValueError(
                f"RainbowDQN(v_min={self.v_min!r}, v_max={self.v_max!r}): v_min must be below v_max"
            )

    def _build_actor(self) -> nn.Module:
        space = self.action_space
        if not isinstance(space, spaces.Discrete):  # refused in __init__; narrows the type
            raise TypeError(f"RainbowDQN needs a Discrete action space, got {space!r}")
        return RainbowQNetwork(
            self.observation_space,
            space,
            self.network_spec(RainbowQNetworkSpec),
            num_atoms=self.num_atoms,
            v_min=self.v_min,
            v_max=self.v_max,
            noise_std=self.noise_std,
        )

    # -- acting ---------------------------------------------------------------------------
    # Not DQN's (obs, epsilon, ...): Rainbow explores by its noisy layers, so it takes no
    # epsilon; the signature is AgileRL's RainbowDQN.get_action, which callers rely on.
    def get_action(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, obs: Observation, action_mask: Any = None, training: bool = True, actor: Any = None
    ) -> np.ndarray:
        """Greedy actions (among the allowed ones) of the noisy network (``training``) or
        of its mean weights: this agent's, or ``actor`` (a network of its architecture,
        e.g. a cohort's stacked one). Returns int64 actions ``(batch,)`` with the space's
        start."""
        mask = self._mask(action_mask, leading_size(obs))
        network = self.actor if actor is None else actor
        was_training = network.training
        # The noisy layers add noise in training mode only. Switching modes walks the
        # module tree (as costly as a small forward pass), so only when it changes.
        if was_training != training:
            network.train(training)
        try:
            q_values = None if actor is None else _outputs(actor, obs)
            return self._to_actions(self._greedy_index(obs, mask, q_values))
        finally:
            if was_training != training:
                network.train(was_training)

    def configure_exploration(self, schedule: EpsilonSchedule) -> None:
        """Noisy networks explore: the run's epsilon schedule (DQN's) is not used."""

    def explore(
        self, obs: Observation, action_mask: Any = None, q_values: torch.Tensor | None = None
    ) -> np.ndarray:
        """Greedy actions of the noisy network (its current noise sample); ``q_values``:
        those of ``obs``, already computed (by that network, in training mode)."""
        if q_values is not None:
            mask = self._mask(action_mask, leading_size(obs))
            return self._to_actions(self._greedy_index(obs, mask, q_values))
        return self.get_action(obs, action_mask, training=True)

    def exploration_metrics(self) -> dict[str, float]:
        return {}

    def eval_action(
        self, obs: Observation, action_mask: Any = None, actor: Any = None
    ) -> np.ndarray:
        """Greedy actions of the mean weights (no noise); of ``actor`` when given."""
        return self.get_action(obs, action_mask, training=False, actor=actor)

    def sample_action(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Greedy actions of the noisy network: how the agent acts while it trains."""
        return self.get_action(obs, action_mask, training=True)

    # -- learning -------------------------------------------------------------------------
    def _transition_loss(
        self, view: Population[DQN], batch: dict[str, Any], discount: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-entropy per transition between the projected double-DQN target and the
        online distribution of the action taken, ``(batch,)``, and the Q-values of the
        actions taken (detached)."""
        actor, actor_target = view.net("actor"), view.net("actor_target")
        action = torch.as_tensor(batch["action"], device=self.device).long().reshape(-1)
        rows = action.shape[0]
        taken = torch.arange(rows, device=self.device)
        with torch.no_grad():
            next_action = actor(batch["next_obs"]).argmax(dim=1)
            next_probs = actor_target.dist(batch["next_obs"])[taken, next_action]
            reward = torch.as_tensor(batch["reward"], device=self.device)
            done = torch.as_tensor(batch["done"], device=self.device)
            if torch.is_tensor(discount):
                discount = discount.to(self.device)
            target = project_distribution(next_probs, reward, discount, done, actor.support)
        index = action - int(self._start[0])
        log_probs = actor.log_dist(batch["obs"])[taken, index]
        q_taken = actor.q_from_dist(log_probs.detach().exp())
        return -(target * log_probs).sum(dim=-1), q_taken

    def _per_transition(
        self, view: Population[DQN], batch: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The networks' part of a step: the loss of every transition ``(batch,)`` (1-step,
        n-step or both, as the module docstring says; each agent's ``gamma`` on its rows)
        and the Q-values of the actions taken."""
        n_step = batch.get("n_step")
        parts = []
        if n_step is None or self.combined_reward:
            rows = view.rows(int(batch["reward"].shape[0]))
            parts.append(self._transition_loss(view, batch, view.per_row("gamma", rows)))
        if n_step is not None:
            parts.append(self._transition_loss(view, n_step, n_step["discount"]))
        # The parts share obs and action: any one's Q-values are those of the batch.
        return torch.stack([part for part, _ in parts]).sum(dim=0), parts[0][1]

    @staticmethod
    def _weighted_loss(per_transition: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
        """The agent's part: the batch mean, importance-weighted with prioritised replay."""
        if weights is None:
            return per_transition.mean()
        return (per_transition * weights.to(per_transition)).mean()

    def learn_prioritized(self, batch: dict[str, Any]) -> tuple[dict[str, float], torch.Tensor]:
        """One gradient step (see the module docstring); returns the metrics and the loss
        of every transition (the new priorities of the slots sampled)."""
        figures, per_transition = self.update_prioritized(Population.of(self), batch)
        return learned(figures), per_transition

    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        """One gradient step on a batch (a replay sample, possibly with ``weights`` and an
        ``"n_step"`` batch of the same slots); returns :attr:`learn_metrics`."""
        return self.learn_prioritized(batch)[0]

    def update(
        self,
        view: Population[DQN],
        batch: dict[str, Any],
        live: np.ndarray | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float] | None]:
        return self.update_prioritized(view, batch, live, generators)[0]

    def update_prioritized(
        self,
        view: Population[DQN],
        batch: dict[str, Any],
        live: np.ndarray | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> tuple[list[dict[str, float] | None], torch.Tensor]:
        """One learning step of the agents of ``view`` that ``live`` names (None: all),
        each on its rows of ``batch``: the metrics each reported (None: it did not learn)
        and the loss of every row (agent ``p``'s rows: its new priorities). Each learning
        agent's mean is importance-weighted with its rows' ``weights``; after the step it
        draws a new noise sample for its online and then its target network (from
        ``generators[p]`` when stacked, from torch's as alone: the same order)."""
        per_transition, q_taken = self._per_transition(view, batch)
        weights = batch.get("weights")
        figures: dict[int, dict[str, torch.Tensor]] = {}
        losses = []
        blocks = view.blocks(per_transition.shape[0], live)
        for p, rows in blocks:
            own_weights = None if weights is None else view.own(weights, rows)
            loss = self._weighted_loss(view.own(per_transition, rows), own_weights)
            figures[p] = {"loss": loss.detach(), "q_mean": view.own(q_taken, rows).mean()}
            losses.append(loss)
        if losses:
            mask = view.live_mask(live)
            view.minimise("optimizer", view.total(losses), mask, self.max_grad_norm)
            view.polyak(mask)
            for p, _ in blocks:
                generator = None if generators is None else generators[p]
                view.reset_noise("actor", p, generator)
                view.reset_noise("actor_target", p, generator)
        return view.reported(figures), per_transition.detach()
