"""``NeuralBandit``: what NeuralUCB and NeuralTS share (they differ only in :meth:`score`).

A network ``f(x; theta)`` (a :class:`QNetwork` with one output) predicts the reward of
pulling an arm from that arm's context ``x``. Its uncertainty comes from the gradient
features of the network's **output layer** (as AgileRL's implementation does, not the
gradient of every parameter the papers use: the design matrix then has the size of one
layer, ``(m + 1)^2`` for an output layer of ``m`` inputs, instead of the square of the
whole network):

    g(x) = d f(x; theta) / d (W_out, b_out) / sqrt(m)

the papers' width scaling ``g / sqrt(m)`` included. The design matrix is
``Z = lamb * I + sum_t g_t g_t^T`` over the contexts of the arms pulled; its inverse is
kept and updated with each pull by the Sherman-Morrison formula
``Z^-1 <- Z^-1 - (Z^-1 g)(Z^-1 g)^T / (1 + g^T Z^-1 g)`` (in float64), and the posterior
standard deviation of an arm's reward is ``sigma(x) = sqrt(g^T Z^-1 g)``. NeuralUCB pulls
the arm of highest ``f + gamma * sigma``; NeuralTS samples a score ``N(f, (gamma *
sigma)^2)`` per arm and pulls the highest: the same posterior, explored optimistically or
by sampling.

Learning (every ``learn_step`` pulls, on ``batch_size`` pulls drawn from the shared
memory) minimises ``mean((f(x) - r)^2) + reg * ||theta - theta_0||^2``: the squared error
of the predicted rewards plus an L2 pull towards the initial parameters ``theta_0``. The
anchor ``theta_0`` is kept as a network (:attr:`actor_initial`) that learning never
moves; a mutation (architecture or weights) starts a new anchor at the mutated weights,
and an architecture mutation restarts ``Z^-1`` from ``I / lamb`` (the gradient features
changed meaning and, with a new width, size).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from agilerl.algorithms import foreach
from agilerl.algorithms.core.population import Population, learned
from agilerl.algorithms.core.rl_algorithm import RLAlgorithm
from agilerl.files import checkpoints
from agilerl.models.networks import QNetworkSpec
from agilerl.networks.base import Observation
from agilerl.networks.networks import QNetwork


class NeuralBandit(RLAlgorithm):
    """Base of the neural contextual bandits (see the module docstring)."""

    eval_networks: ClassVar[tuple[str, ...]] = ("actor",)
    #: theta_0, the anchor of the regulariser (never trained; see the module docstring).
    target_networks: ClassVar[Mapping[str, str]] = {"actor_initial": "actor"}
    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "optimizer": (("actor",), "lr")
    }
    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "squared reward error plus reg * ||theta - theta_0||^2 (the loss minimised)",
        "reward_mse": "mean squared error of the predicted rewards of the batch",
    }
    main_loss: ClassVar[str | None] = "loss"

    # Set from the bound spec (NeuralUCB's, NeuralTS's) before the body runs.
    batch_size: int
    lr: float
    learn_step: int
    gamma: float
    lamb: float
    reg: float

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: the subclass's spec
        (``inspect.signature(NeuralUCB)``)."""
        super().__init__(observation_space, action_space, index, **options)
        if not isinstance(action_space, spaces.Discrete):
            raise TypeError(f"{self.name} needs a Discrete space of arms, got {action_space!r}")
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise TypeError(
                f"{self.name} scores one context vector per arm: a 1-D Box observation "
                f"space, got {observation_space!r}"
            )
        # One output: the predicted reward of the arm whose context is the input.
        self.actor = QNetwork(
            observation_space, spaces.Discrete(1), self.network_spec(QNetworkSpec)
        )
        self.actor.to(self.device)
        #: Cumulative regret of this agent's lineage (the pulls it and its ancestors made)
        #: and its curve: ``[steps, cumulative regret]`` points recorded by the loop.
        self.regret = 0.0
        self.regret_curve: list[list[float]] = []
        self.finish_init()
        self.sigma_inv = self._prior()

    def check_hyperparameters(self) -> None:
        """The schema allows ``lamb`` 0; the posterior's prior ``Z = lamb * I`` must be
        invertible."""
        if self.lamb == 0:
            raise ValueError(
                f"{self.name}(lamb=0.0): must be above 0 (Z = lamb * I must be invertible)"
            )

    # -- the posterior --------------------------------------------------------------------
    @property
    def feature_dim(self) -> int:
        """Size of the gradient features: the output layer's weights and bias."""
        return self.actor.head.out.in_features + 1

    def _prior(self) -> torch.Tensor:
        """``Z^-1`` before any pull: ``I / lamb``."""
        eye = torch.eye(self.feature_dim, dtype=torch.float64, device=self.device)
        return eye / self.lamb

    def features(self, contexts: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Predicted rewards ``(n,)`` and gradient features ``(n, m + 1)`` (float64) of
        ``n`` contexts: the gradient of each prediction with respect to the output layer
        (weights, then bias) over ``sqrt(m)``. The layer is linear, so the gradient is
        ``f'(z) * [phi, 1]`` with ``phi`` its input and ``f'(z)`` the derivative of what
        follows it: 1 where nothing does (the default), else taken by autograd (one
        backward pass for all contexts: each prediction depends on its own ``z`` only)."""
        head = self.actor.head
        linear_output = isinstance(head.out_act, nn.Identity) and isinstance(
            head.out_norm, nn.Identity
        )
        seen: dict[str, torch.Tensor] = {}

        def keep(module: nn.Module, args: tuple[torch.Tensor, ...], result: torch.Tensor) -> None:
            seen["phi"], seen["z"] = args[0], result

        hook = head.out.register_forward_hook(keep)
        obs = torch.as_tensor(np.asarray(contexts), dtype=torch.float32, device=self.device)
        try:
            with torch.set_grad_enabled(not linear_output):
                prediction = self.actor(obs)
                if linear_output:
                    slope = torch.ones_like(prediction)
                else:
                    (slope,) = torch.autograd.grad(prediction.sum(), seen["z"])
        finally:
            hook.remove()
        phi = seen["phi"].detach()
        grads = torch.cat([slope * phi, slope], dim=1).to(torch.float64)
        return prediction.detach().reshape(-1), grads / math.sqrt(phi.shape[1])

    def sigma(self, grads: torch.Tensor) -> torch.Tensor:
        """Posterior standard deviation ``sqrt(g^T Z^-1 g)`` of each row of ``grads``."""
        return ((grads @ self.sigma_inv) * grads).sum(dim=1).clamp_min(0).sqrt()

    def observe(self, grad: torch.Tensor) -> None:
        """``Z <- Z + g g^T`` for a pulled arm's features, as a Sherman-Morrison update of
        ``Z^-1``."""
        zg = self.sigma_inv @ grad
        self.sigma_inv -= torch.outer(zg, zg) / (1.0 + grad @ zg)

    # -- acting ---------------------------------------------------------------------------
    def score(self, mean: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """Exploration scores of the arms, the highest pulled (NeuralUCB, NeuralTS)."""
        raise NotImplementedError

    # A bandit pulls one arm (an int) per set of K contexts, not an array of actions per
    # observation as RLAlgorithm's methods do (AgileRL's NeuralUCB/NeuralTS return it so).
    def explore(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, obs: Observation, action_mask: Any = None
    ) -> int:
        """Pull an arm for the ``(K, K * d)`` contexts ``obs``: the highest
        :meth:`score`; the pulled arm's gradient features update ``Z^-1``."""
        mean, grads = self.features(obs)
        arm = int(torch.argmax(self.score(mean.double(), self.sigma(grads))))
        self.observe(grads[arm])
        return arm

    def get_action(self, obs: Observation, action_mask: Any = None) -> int:
        """The arm to pull for the ``(K, K * d)`` contexts ``obs``, exploring
        (:meth:`explore`)."""
        return self.explore(obs, action_mask)

    # One arm, as explore.
    def eval_action(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, obs: Observation, action_mask: Any = None
    ) -> int:
        """The arm of highest predicted reward (no exploration; ``Z^-1`` unchanged)."""
        with torch.inference_mode():
            obs = torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=self.device)
            return int(torch.argmax(self.actor(obs).reshape(-1)))

    # Returns the arm alone, not SB3's (action, state) pair of RLAlgorithm.predict (and
    # defaults to deterministic): kept as the bandit trainers and tests call it.
    def predict(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, obs: Observation, deterministic: bool = True, **_: Any
    ) -> int:
        """The arm to pull for one step's ``(K, K * d)`` contexts: greedy, or with
        ``deterministic=False`` by the algorithm's exploration (which updates ``Z^-1``)."""
        return self.eval_action(obs) if deterministic else self.explore(obs)

    def test(
        self, env: Any, max_steps: int | None = None, loop: int = 1, seed: int | None = None
    ) -> float:
        """Reward rate of ``loop`` rounds of ``max_steps`` (default 500) greedy pulls on
        the bandit ``env`` (reset from ``seed``): the fitness, appended to ``fitness``."""
        steps = 500 if max_steps is None else int(max_steps)
        total = 0.0
        for round_ in range(loop):
            contexts = env.reset(seed=None if seed is None else seed + round_)
            for _ in range(steps):
                contexts, reward = env.step(self.eval_action(contexts))
                total += reward
        self.eval_steps_taken = steps * loop
        fitness = total / (steps * loop)
        self.fitness.append(fitness)
        return fitness

    # -- learning -------------------------------------------------------------------------
    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        """One Adam step on a batch of pulls (``context`` ``(B, D)``, ``reward`` ``(B,)``):
        ``mean((f(x) - r)^2) + reg * ||theta - theta_0||^2`` (:meth:`update` on this agent
        alone)."""
        return learned(self.update(Population.of(self), batch))

    def update(
        self,
        view: Population[NeuralBandit],
        batch: dict[str, Any],
        live: np.ndarray | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float] | None]:
        """One learning step of the agents of ``view`` that ``live`` names (None: all),
        each on its rows of ``batch``; the metrics each reported (None: it did not learn).
        A bandit draws nothing as it learns (``generators`` serve the algorithms that do).

        Each agent's loss is the mean squared error of its predicted rewards plus its
        ``reg * ||theta - theta_0||^2``: the squared error by backpropagation, the anchor
        term's gradient ``2 * reg * (theta - theta_0)`` added in closed form (one fused
        call instead of a graph over every parameter), each agent with its own ``reg``
        and its own anchor :attr:`actor_initial`, which nothing here moves (a bandit has
        no soft update: the anchor is no polyak target)."""
        context = torch.as_tensor(batch["context"], device=self.device)
        reward = torch.as_tensor(batch["reward"], device=self.device).to(torch.float32)
        prediction = view.net("actor")(context).reshape(-1)
        error = (prediction - reward.reshape(-1)).pow(2)
        learning = view.blocks(error.shape[0], live)
        if not learning:
            return [None] * view.count
        mse = {p: view.own(error, rows).mean() for p, rows in learning}
        # theta_0 position by position with theta (the anchor is a copy of the actor).
        anchor_of = dict(
            zip(
                map(id, view.net("actor").parameters()),
                view.net("actor_initial").parameters(),
                strict=True,
            )
        )
        distance: dict[int, torch.Tensor] = {}

        # theta - theta_0 taken where the step holds theta (in its optimiser's order, before
        # the step): the gradient term and the reported distance from the same offsets.
        def anchored(params: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
            offsets = foreach.sub(params, [anchor_of[id(t)] for t in params])
            for p, _ in learning:
                own = view.slices(offsets, p)
                distance[p] = torch.stack(foreach.norm(own)).pow(2).sum()
                reg = view.agents[p].reg
                if reg:
                    foreach.add_(view.slices(grads, p), own, alpha=2.0 * reg)

        view.minimise(
            "optimizer", view.total(mse.values()), view.live_mask(live), gradient=anchored
        )
        figures = {
            p: {
                "loss": mse[p].detach() + view.agents[p].reg * distance[p],
                "reward_mse": mse[p].detach(),
            }
            for p in mse
        }
        return view.reported(figures)

    # -- evolution and checkpoints --------------------------------------------------------
    def networks_changed(self) -> None:
        """A new architecture: new anchor and optimiser (the base's), ``Z^-1`` afresh."""
        super().networks_changed()
        self.sigma_inv = self._prior()

    def set_hyperparameter(self, name: str, value: Any) -> None:
        """The base's; a new ``lamb`` takes effect in the design matrix at once:
        ``Z <- Z + (lamb_new - lamb_old) I``, inverted directly (it is one layer wide)."""
        old = getattr(self, name)
        super().set_hyperparameter(name, value)
        if name == "lamb" and value != old:
            eye = torch.eye(self.feature_dim, dtype=torch.float64, device=self.device)
            design = torch.linalg.inv(self.sigma_inv) + (value - old) * eye
            self.sigma_inv = torch.linalg.inv(design)

    def extra_state(self) -> dict[str, Any]:
        return {
            "sigma_inv": self.sigma_inv.detach().cpu().clone(),
            "regret": float(self.regret),
            "regret_curve": [list(map(float, point)) for point in self.regret_curve],
        }

    def load_extra_state(self, state: dict[str, Any], where: str = "extra") -> None:
        checkpoints.require(
            state,
            {
                "sigma_inv": torch.Tensor,
                "regret": float,
                "regret_curve": checkpoints.ListOf(checkpoints.ListOf(float)),
            },
            where,
        )
        p = self.feature_dim
        sigma_inv = checkpoints.require_tensor(
            state["sigma_inv"], checkpoints.join(where, "sigma_inv"), (p, p), torch.float64
        )
        self.sigma_inv = sigma_inv.to(self.device).clone()
        self.regret = float(state["regret"])
        self.regret_curve = [list(point) for point in state["regret_curve"]]
