"""``RLAlgorithm``: the single-agent family (one observation space, one action space).

Everything agents of all families share (hyperparameters and their mutation, declared
networks / targets / optimisers, metrics, checkpoints, ``clone``) is
:class:`~agilerl.algorithms.core.evolvable.EvolvableAlgorithm`. This family adds what acting
in one Gymnasium environment needs: evaluation (:meth:`RLAlgorithm.test`) on a
vectorised environment, :meth:`RLAlgorithm.predict`, and exploration owned by the agent
(:meth:`RLAlgorithm.explore`, told where episodes ended by
:meth:`RLAlgorithm.episodes_ended`).

Subclass contract (see ``dqn.py``): as :class:`EvolvableAlgorithm`'s (bound to its spec,
``class DQN(RLAlgorithm, spec=DQNSpec)``), plus ``get_action``, ``eval_action`` (and
``sample_action`` / ``explore`` where the algorithm has them; an epsilon-greedy agent and
one learning from prioritised replay add the mixins of
:mod:`agilerl.algorithms.core.exploration`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch
from gymnasium import spaces
from pydantic import BaseModel

from agilerl.algorithms.core.evolvable import EvolvableAlgorithm, space_text
from agilerl.networks.base import Observation, infer_encoder_spec

#: The network spec class :func:`network_spec` builds (and returns an instance of).
SpecT = TypeVar("SpecT", bound=BaseModel)


def network_spec(
    spec_cls: type[SpecT],
    observation_space: spaces.Space,
    net_config: Any = None,
    recurrent: bool = False,
) -> SpecT:
    """The network spec of class ``spec_cls`` that ``net_config`` describes.

    ``net_config`` is None (defaults: encoder inferred from the observation space), a
    manifest ``network`` section, a network spec or a plain dict of either. An encoder
    config without ``arch`` gets the arch inferred from the observation space.
    """
    if net_config is None:
        data: dict[str, Any] = {}
    elif isinstance(net_config, BaseModel):
        data = net_config.model_dump(exclude_unset=False)
    elif isinstance(net_config, Mapping):
        data = dict(net_config)
    else:
        raise TypeError(f"net_config must be a network section or spec, got {net_config!r}")
    arch = data.pop("arch", None)
    simba = bool(data.get("simba", False))
    encoder = data.get("encoder_config")
    if isinstance(encoder, BaseModel):
        encoder = encoder.model_dump()
    inferred = infer_encoder_spec(observation_space, recurrent=recurrent, simba=simba)
    if encoder is None:
        encoder = inferred.model_dump()
    else:
        encoder = dict(encoder)
        encoder.setdefault("arch", arch or inferred.arch)
    data["encoder_config"] = encoder
    data.setdefault("head_config", {"hidden_size": [64]})
    if isinstance(data["head_config"], BaseModel):
        data["head_config"] = data["head_config"].model_dump()
    fields = spec_cls.model_fields
    return spec_cls.model_validate({k: v for k, v in data.items() if k in fields})


def action_mask_from_info(info: dict[str, Any]) -> np.ndarray | None:
    """The vector env's ``action_mask`` with rows of environments that gave none set to
    all allowed (gymnasium fills missing entries with zeros, i.e. everything masked)."""
    mask = info.get("action_mask")
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=bool)
    present = info.get("_action_mask")
    if present is not None and not np.all(present):
        mask = mask.copy()
        mask[~np.asarray(present, dtype=bool)] = True
    return mask


def play_episodes(
    env: Any,
    reset: Callable[[int], tuple[Any, dict[str, Any]]],
    act: Callable[[Any, Any], np.ndarray],
    episodes_ended: Sequence[Callable[[np.ndarray], None]],
    max_steps: int | None = None,
    loop: int = 1,
) -> tuple[list[list[float]], list[int], list[bool]]:
    """``loop`` rounds of one episode per copy of a vectorised ``env`` (same-step
    autoreset) whose copies form ``len(episodes_ended)`` equal groups, one per agent
    (:meth:`RLAlgorithm.test`: one; a cohort's evaluation: its agents). Each round starts
    from ``reset(round)``; ``act(obs, action_mask)`` acts for every copy; each group's
    ``episodes_ended`` hears of its copies' ends (all of them at a round's start);
    ``max_steps`` cuts the episodes short. Returns each group's episode returns, env
    steps (counted until its own episodes have all ended) and whether ``max_steps`` cut
    any of its episodes."""
    groups = len(episodes_ended)
    n = env.num_envs // groups
    returns: list[list[float]] = [[] for _ in range(groups)]
    taken = np.zeros(groups, dtype=np.int64)
    cut = np.zeros(groups, dtype=bool)
    for round_ in range(loop):
        obs, info = reset(round_)
        for ended_in in episodes_ended:
            ended_in(np.ones(n, dtype=bool))  # per-env state afresh
        totals = np.zeros((groups, n))
        done = np.zeros((groups, n), dtype=bool)
        steps = 0
        while not done.all() and (max_steps is None or steps < max_steps):
            taken += n * ~done.all(axis=1)
            action = act(obs, action_mask_from_info(info))
            obs, reward, terminated, truncated, info = env.step(action)
            totals += np.where(done, 0.0, np.asarray(reward).reshape(groups, n))
            ended = np.logical_or(terminated, truncated).reshape(groups, n)
            for ended_in, own in zip(episodes_ended, ended, strict=True):
                ended_in(own)
            done |= ended
            steps += 1
        cut |= ~done.all(axis=1)
        for own, total in zip(returns, totals, strict=True):
            own.extend(total.tolist())
    return returns, taken.tolist(), cut.tolist()


class RLAlgorithm(EvolvableAlgorithm):
    """Base of single-agent algorithms (see the module docstring for the contract)."""

    construction_layout: ClassVar[Mapping[str, Any]] = {
        "observation_space": spaces.Space,
        "action_space": spaces.Space,
    }

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        **options: Any,
    ) -> None:
        """``options``: the bound spec's hyperparameters and the keywords every agent
        takes (:class:`EvolvableAlgorithm`: ``hp_config``, ``net_config``, ``device``,
        ``accelerator``, ``seed``)."""
        if not isinstance(observation_space, spaces.Space):
            raise TypeError(
                f"observation_space must be a gymnasium space, got {observation_space!r}"
            )
        if not isinstance(action_space, spaces.Space):
            raise TypeError(f"action_space must be a gymnasium space, got {action_space!r}")
        self.observation_space = observation_space
        self.action_space = action_space
        super().__init__(index, **options)

    def _repr_fields(self) -> dict[str, str]:
        return {
            "observation_space": space_text(self.observation_space),
            "action_space": space_text(self.action_space),
        }

    # -- to implement ---------------------------------------------------------------------
    def get_action(self, obs: Observation, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def eval_action(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Greedy / deterministic actions for a batch of observations (evaluation)."""
        raise NotImplementedError

    def sample_action(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Actions drawn from the agent's stochastic policy for a batch of observations,
        as :meth:`eval_action` returns them (``predict(..., deterministic=False)``)."""
        raise NotImplementedError(f"{self.name} has no stochastic policy to sample from")

    # -- exploration (asked for by the off-policy loop) ------------------------------------
    # Epsilon-greedy agents (the run's schedule) and agents learning from prioritised
    # replay add the mixins of :mod:`agilerl.algorithms.core.exploration`.
    def explore(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Exploratory actions for one vector step of training, in the environment's
        action space: the agent applies its own exploration (epsilon-greedy at the
        schedule's epsilon for its :attr:`steps`, action noise, noisy networks)."""
        raise NotImplementedError(f"{self.name} does not explore off-policy")

    def uniform_actions(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Actions drawn uniformly from the action space (among the allowed ones), one per
        observation of the batch, by the agent's own generator: how it acts before its
        learning starts when the run's ``warmup_actions`` is ``uniform``. Its exploration
        state (epsilon, action noise) is left as it was."""
        raise NotImplementedError(f"{self.name} has no uniform warm-up actions")

    def episodes_ended(self, ended: np.ndarray) -> None:
        """Sub-environments (a boolean row per env) whose episodes just ended: per-env
        exploration state (Ornstein-Uhlenbeck noise, a hidden state) starts afresh there."""

    def exploration_metrics(self) -> dict[str, float]:
        """Figures of the exploration the last :meth:`explore` used (DQN: ``epsilon``),
        reported beside :attr:`learn_metrics`."""
        return {}

    def network_spec(self, spec_cls: type[SpecT], recurrent: bool = False) -> SpecT:
        return network_spec(spec_cls, self.observation_space, self.net_config, recurrent)

    # -- inference ------------------------------------------------------------------------
    #: The state a recurrent agent acts on and advances between calls (PPO with an LSTM
    #: encoder: network name -> the LSTM's ``(h, c)`` tensors); None for the others.
    hidden_state: Any = None

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
        *,
        action_mask: Any = None,
    ) -> tuple[Any, Any]:
        """``(action, state)``: the action(s) to take, as the environment's action space
        takes them, and the recurrent state after them (None for a feed-forward agent).
        Stable-Baselines3's signature and return, so the tools written for its
        ``predict`` work with these agents.

        ``observation`` is one observation, as ``env.reset()`` / ``env.step()`` return
        it, or a batch (a leading dimension on every leaf of a Dict/Tuple observation);
        which one is read from the observation space's shapes. ``action_mask`` (Discrete
        and MultiDiscrete actions: 1/True marks an allowed action) is shaped like the
        observation: one row, or one per observation of the batch.

        The action, for one observation: a Python ``int`` for Discrete, a numpy array of
        the space's shape and dtype otherwise (MultiDiscrete, MultiBinary, Box clipped or
        squashed into its bounds); for a batch, a numpy array with a leading batch
        dimension. ``deterministic`` gives the greedy / most likely action; False (the
        default, as in SB3) samples the policy (:meth:`sample_action`).

        A recurrent agent (PPO with an LSTM encoder) returns its state as numpy arrays
        (network name -> ``(h, c)``, each ``(layers, batch, hidden_state_size)``) and
        acts from ``state`` when given one (what an earlier call returned); without one
        it goes on from the state its last call left. ``episode_start`` (a bool, or one
        per observation) says which observations begin a new episode, whose state
        starts from zero (:meth:`episodes_ended`).
        """
        from agilerl.components.observations import add_batch_dim, batch_size, map_tree

        single = batch_size(observation, self.observation_space) is None
        if single:
            observation = add_batch_dim(observation, self.observation_space)
            if action_mask is not None:
                action_mask = np.asarray(action_mask)[None]
        if state is not None:
            self.hidden_state = map_tree(
                lambda x: torch.as_tensor(x, dtype=torch.float32, device=self.device), state
            )
        if episode_start is not None:
            self.episodes_ended(np.asarray(episode_start, dtype=bool).reshape(-1))
        act = self.eval_action if deterministic else self.sample_action
        with torch.no_grad():
            actions = act(observation, action_mask)
        after = (
            None
            if self.hidden_state is None
            else map_tree(lambda x: x.detach().cpu().numpy(), self.hidden_state)
        )
        if not single:
            return actions, after
        action = actions[0]
        return (int(action) if isinstance(self.action_space, spaces.Discrete) else action), after

    # -- evaluation -----------------------------------------------------------------------
    def test(
        self,
        env: Any,
        max_steps: int | None = None,
        loop: int = 1,
        seed: int | None = None,
    ) -> float:
        """Mean return of ``loop`` rounds of one episode per sub-environment of a
        vectorised ``env`` (same-step autoreset), acting with :meth:`eval_action`.
        ``max_steps`` cuts each episode short. Appends the result to ``fitness``.
        Returns the mean and counts the environment steps taken in ``eval_steps_taken``
        (whether ``max_steps`` cut an episode in ``eval_cut``)."""
        num_envs = env.num_envs

        def reset(round_: int) -> tuple[Any, dict[str, Any]]:
            return env.reset(seed=None if seed is None else seed + round_ * num_envs)

        with torch.no_grad():
            (returns,), (taken,), (cut,) = play_episodes(
                env, reset, self.eval_action, [self.episodes_ended], max_steps, loop
            )
        self.eval_steps_taken, self.eval_cut = taken, cut
        fitness = float(np.mean(returns))
        self.fitness.append(fitness)
        return fitness
