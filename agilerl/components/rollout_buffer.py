"""``RolloutBuffer``: one on-policy rollout of a vectorised environment, with GAE.

Every field is a tensor of shape ``(capacity, num_envs, *leaf shape)`` allocated once on the
buffer's device (observations: one tensor per leaf of a Dict/Tuple space), so a rollout
step is a handful of in-place copies and a minibatch is one ``index_select`` per leaf.

Row ``t`` holds vector step ``t``: the observation acted on, the action taken, the reward
and done flag that step returned, the critic's value of the observation and the
log-probability of the action. ``done[t]`` means the episode ended *with* step ``t``
(terminated or truncated), so ``V(obs[t + 1])`` belongs to another episode and is not
bootstrapped into step ``t``; a time-limit cut is bootstrapped through that step's reward
(:func:`~agilerl.components.on_policy.bootstrap_time_limits`, which PPO's collection,
:func:`~agilerl.components.on_policy.collect_rollout`, applies before :meth:`add`).

Advantages and returns (:meth:`RolloutBuffer.compute_returns_and_advantages`) are
:func:`~agilerl.components.on_policy.advantages_and_returns` of the stored steps, from
``V_T``, the value of the observation after the last step: GAE (``R_t = A_t + V_t``), or
without GAE discounted returns and ``A_t = R_t - V_t`` (every step active).

Recurrent policies (truncated backpropagation through time): a buffer built with
``seq_len`` cuts each environment's rollout into sequences of ``seq_len`` steps that
start every ``seq_stride`` steps (:data:`SEQUENCE_STRIDES`), and stores the policy's
hidden state at those starts only (the state it acted on at that step; :meth:`add`
takes it every step and keeps it where a sequence starts). Sequences stop adding once
one reaches the rollout's end; the last may be shorter and is padded (``valid`` marks
the real steps). :meth:`RolloutBuffer.sequence_minibatches` yields whole sequences.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import numpy as np
import torch
from gymnasium import spaces

from agilerl.components import on_policy
from agilerl.components.observations import map_tree, tree_leaves
from agilerl.networks.base import Observation
from agilerl.networks.distributions import TensorLike, distribution_class

#: A recurrent policy's state: a tree (dict/tuple) of ``(num_envs, ...)`` tensors, as an
#: LSTM's ``(h, c)``.
HiddenState: TypeAlias = torch.Tensor | Mapping[str, "HiddenState"] | tuple["HiddenState", ...]


@dataclass(frozen=True)
class _Leaf:
    """Shape and dtype of one stored value (a class, not a tuple: tuples are Tuple spaces)."""

    shape: tuple[int, ...]
    dtype: torch.dtype


def _obs_layout(space: spaces.Space) -> Any:
    """The :class:`_Leaf` of one observation of ``space``, nested like Dict/Tuple spaces.

    Observations are stored raw (the network preprocesses them when it reads them):
    integer Boxes (images) keep their dtype to stay compact, other Boxes become float32,
    Discrete and MultiDiscrete values int64 and MultiBinary bits int8.
    """
    if isinstance(space, spaces.Dict):
        return {k: _obs_layout(sub) for k, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_obs_layout(sub) for sub in space.spaces)
    if isinstance(space, spaces.Box):
        if np.issubdtype(space.dtype, np.integer):
            return _Leaf(tuple(space.shape), torch.from_numpy(np.empty(0, space.dtype)).dtype)
        return _Leaf(tuple(space.shape), torch.float32)
    if isinstance(space, spaces.Discrete):
        return _Leaf((), torch.int64)
    if isinstance(space, spaces.MultiDiscrete):
        return _Leaf(tuple(space.shape), torch.int64)
    if isinstance(space, spaces.MultiBinary):
        return _Leaf(tuple(space.shape), torch.int8)
    raise TypeError(f"unsupported observation space {space!r}")


def _action_layout(space: spaces.Space) -> _Leaf:
    """The :class:`_Leaf` of one action sample of the space's action distribution
    (:mod:`agilerl.networks.distributions`): integer (sub-)actions for Discrete and
    MultiDiscrete, float bits for MultiBinary, floats for Box (the unclipped, unsquashed
    Gaussian sample the log-probability belongs to)."""
    klass = distribution_class(space)  # every space it accepts has a shape
    shape = () if isinstance(space, spaces.Discrete) else tuple(space.shape or ())
    return _Leaf(shape, klass.sample_dtype)


#: ``bptt_sequence_type`` -> the step between the starts of consecutive sequences of
#: ``max_seq_len`` steps: back to back, half overlapping, or one starting at every step.
SEQUENCE_STRIDES = {
    "chunked": lambda seq_len: seq_len,
    "fifty_percent_overlap": lambda seq_len: max(1, seq_len // 2),
    "maximum": lambda seq_len: 1,
}


def _write(store: torch.Tensor, value: TensorLike) -> None:
    """Copy ``value`` (array or tensor, any device and dtype) into the row ``store``."""
    src = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    if src.shape == store.shape:
        store.copy_(src)
        return
    if src.numel() != store.numel():
        raise ValueError(
            f"expected {tuple(store.shape)} values for one rollout step, got {tuple(src.shape)}"
        )
    store.copy_(src.reshape(store.shape))


@dataclass
class RolloutBatch:
    """A minibatch of rollout samples (flattened over steps and environments)."""

    obs: Any  # tensor, or dict/tuple of tensors for Dict/Tuple observation spaces
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    action_masks: torch.Tensor | None
    #: Sequence minibatches only (else None): ``obs`` is then laid out ``(sequences,
    #: seq_len, ...)`` (padding included) and the other fields hold the ``valid`` steps,
    #: flattened in that order; ``hidden`` is the stored state at each sequence's start
    #: (sequence first) and ``resets[s, t]`` says an episode starts at step ``t``.
    hidden: Any = None
    resets: torch.Tensor | None = None
    valid: torch.Tensor | None = None

    def map(
        self,
        fn: Callable[..., torch.Tensor],
        *others: RolloutBatch,
        obs: Callable[..., Any] | None = None,
    ) -> RolloutBatch:
        """A batch whose every sample field is ``fn`` of this batch's field and the same
        field of ``others`` (observations leaf by leaf, with ``obs`` where they are laid
        out otherwise; action masks where this batch has them)."""

        def each(name: str) -> Any:
            return fn(getattr(self, name), *(getattr(o, name) for o in others))

        return RolloutBatch(
            obs=map_tree(obs or fn, self.obs, *(o.obs for o in others)),
            actions=each("actions"),
            log_probs=each("log_probs"),
            values=each("values"),
            advantages=each("advantages"),
            returns=each("returns"),
            action_masks=None if self.action_masks is None else each("action_masks"),
        )

    def rows(self, index: torch.Tensor) -> RolloutBatch:
        """The samples at ``index`` of a flat batch (not a sequence minibatch)."""
        return self.map(lambda leaf: leaf.index_select(0, index))


class RolloutBuffer:
    """``capacity`` vector steps of ``num_envs`` environments (see the module docstring).

    Action masks are optional: their storage is allocated, all allowed, the first time
    :meth:`add` receives one, so a rollout that never sees a mask carries none.
    """

    def __init__(
        self,
        capacity: int,
        num_envs: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: str | torch.device = "cpu",
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        use_gae: bool = True,
        seq_len: int | None = None,
        seq_stride: int | None = None,
    ) -> None:
        for name, value in (("capacity", capacity), ("num_envs", num_envs)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.seq_len: int | None = None
        self.seq_stride: int | None = None
        if seq_len is not None:
            stride = seq_len if seq_stride is None else seq_stride
            for name, value in (("seq_len", seq_len), ("seq_stride", stride)):
                if isinstance(value, bool) or int(value) != value or value < 1:
                    raise ValueError(f"{name} must be a positive integer, got {value!r}")
            self.seq_len = min(int(seq_len), int(capacity))
            self.seq_stride = min(int(stride), self.seq_len)
        self.capacity = int(capacity)
        self.num_envs = int(num_envs)
        self.observation_space = observation_space
        self.action_space = action_space
        self.device = torch.device(device)
        #: Numbers, or one per environment (``(num_envs,)`` float64 tensors on
        #: :attr:`device`) where the environments' agents differ in them (a cohort's
        #: rollout).
        self.gamma: float | torch.Tensor = float(gamma)
        self.gae_lambda: float | torch.Tensor = float(gae_lambda)
        self.use_gae = bool(use_gae)

        rows = (self.capacity, self.num_envs)

        def empty(leaf: _Leaf) -> torch.Tensor:
            return torch.zeros((*rows, *leaf.shape), dtype=leaf.dtype, device=self.device)

        scalar = _Leaf((), torch.float32)
        self.obs = map_tree(empty, _obs_layout(observation_space))
        self.actions = empty(_action_layout(action_space))
        self.rewards = empty(scalar)
        self.dones = empty(scalar)
        self.values = empty(scalar)
        self.log_probs = empty(scalar)
        self.advantages = empty(scalar)
        self.returns = empty(scalar)
        self.action_masks: torch.Tensor | None = None
        # Hidden states at sequence starts, (starts, num_envs, ...) per leaf of the tree
        # of states :meth:`add` receives; allocated from the first one.
        self.hidden: Any = None
        self.pos = 0
        self.ready = False  # advantages and returns computed for the current contents

    def __len__(self) -> int:
        """Samples stored (vector steps times environments)."""
        return self.pos * self.num_envs

    @property
    def full(self) -> bool:
        return self.pos == self.capacity

    def reset(self) -> None:
        """Start a new rollout (the storage is kept and overwritten)."""
        self.pos = 0
        self.ready = False
        if self.action_masks is not None:
            self.action_masks.fill_(True)

    def add(
        self,
        obs: Observation,
        action: TensorLike,
        reward: TensorLike,
        done: TensorLike,
        value: TensorLike,
        log_prob: TensorLike,
        action_mask: TensorLike | None = None,
        hidden_state: HiddenState | None = None,
    ) -> None:
        """Store one vector step: every argument has ``num_envs`` as its leading
        dimension (observations as the environment returns them, nested for Dict/Tuple;
        ``hidden_state``, of a buffer with ``seq_len``, a tree of tensors: the state the
        policy acted on, kept where a sequence starts)."""
        if self.full:
            raise RuntimeError(f"rollout buffer is full ({self.capacity} steps); reset() it")
        t = self.pos
        map_tree(lambda store, leaf: _write(store[t], leaf), self.obs, obs)
        _write(self.actions[t], action)
        _write(self.rewards[t], reward)
        _write(self.dones[t], done)
        _write(self.values[t], value)
        _write(self.log_probs[t], log_prob)
        if action_mask is not None:
            if self.action_masks is None:
                mask = torch.as_tensor(
                    np.asarray(action_mask) if not torch.is_tensor(action_mask) else action_mask
                )
                shape = (self.capacity, self.num_envs, *mask.shape[1:])
                self.action_masks = torch.ones(shape, dtype=torch.bool, device=self.device)
            _write(self.action_masks[t], action_mask)
        if self.seq_len is not None:
            if hidden_state is None:
                raise ValueError("a recurrent rollout buffer needs the hidden_state of every step")
            _, stride = self._sequences()
            if t % stride == 0:
                self._store_hidden(t // stride, hidden_state)
        self.pos += 1
        self.ready = False

    def _sequences(self) -> tuple[int, int]:
        """``(seq_len, seq_stride)`` of a recurrent buffer."""
        if self.seq_len is None or self.seq_stride is None:
            raise RuntimeError("this rollout buffer was built without seq_len")
        return self.seq_len, self.seq_stride

    def _store_hidden(self, row: int, hidden_state: HiddenState) -> None:
        # (Re)allocated for the first state and for one of another layout (a mutated LSTM).
        layout = [tuple(leaf.shape[1:]) for leaf in tree_leaves(hidden_state)]
        if self.hidden is None or layout != [x.shape[2:] for x in tree_leaves(self.hidden)]:
            starts = -(-self.capacity // self._sequences()[1])

            def empty(leaf: torch.Tensor) -> torch.Tensor:
                shape = (starts, self.num_envs, *leaf.shape[1:])
                return torch.zeros(shape, dtype=leaf.dtype, device=self.device)

            self.hidden = map_tree(empty, hidden_state)
        map_tree(lambda store, leaf: _write(store[row], leaf.detach()), self.hidden, hidden_state)

    def sequence_starts(self) -> list[int]:
        """Steps where the sequences of each environment's rollout start: every
        ``seq_stride`` steps until one sequence reaches the last stored step."""
        seq_len, stride = self._sequences()
        starts = [0]
        while starts[-1] + seq_len < self.pos:
            starts.append(starts[-1] + stride)
        return starts

    def compute_returns_and_advantages(
        self, last_value: TensorLike, last_done: TensorLike | None = None
    ) -> None:
        """Fill ``advantages`` and ``returns`` of the stored steps (module docstring).

        ``last_value``: ``V`` of the observation after the last stored step, one per
        environment. ``last_done``: optional done flags of that last step; the flags
        :meth:`add` stored already say it, so this only overrides them (for callers that
        learn about the end of an episode after storing the step).
        """
        if self.pos == 0:
            raise RuntimeError("the rollout buffer is empty")
        n = self.pos
        next_value = torch.as_tensor(last_value, dtype=torch.float32, device=self.device)
        next_value = next_value.reshape(self.num_envs)
        if last_done is not None:
            _write(self.dones[n - 1], last_done)
        advantages, returns = on_policy.advantages_and_returns(
            self.rewards[:n],
            self.values[:n],
            self.dones[:n],
            next_value,
            self.gamma,
            self.gae_lambda,
            use_gae=self.use_gae,
        )
        self.advantages[:n] = advantages
        self.returns[:n] = returns
        self.ready = True

    def samples(self) -> RolloutBatch:
        """Every stored sample, flattened over steps and environments (step by step), as
        one batch (views of the storage)."""
        if not self.ready:
            raise RuntimeError("compute_returns_and_advantages() must run before sampling")
        size = len(self)
        n = self.pos

        def flat(store: torch.Tensor) -> torch.Tensor:
            return store[:n].reshape(size, *store.shape[2:])

        return self._stores().map(flat)

    def _stores(self) -> RolloutBatch:
        """The storage itself, ``(capacity, num_envs, ...)`` per field, as a batch."""
        return RolloutBatch(
            obs=self.obs,
            actions=self.actions,
            log_probs=self.log_probs,
            values=self.values,
            advantages=self.advantages,
            returns=self.returns,
            action_masks=self.action_masks,
        )

    def minibatches(self, batch_size: int) -> Iterator[RolloutBatch]:
        """One pass over every stored sample in a random order (drawn from the global
        torch CPU generator, so seeded runs match across devices), ``batch_size`` samples
        at a time; the last minibatch holds the remainder."""
        if not self.ready:
            raise RuntimeError("compute_returns_and_advantages() must run before minibatches()")
        if isinstance(batch_size, bool) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        every = self.samples()
        size = len(self)
        order = torch.randperm(size).to(self.device)
        for start in range(0, size, int(batch_size)):
            yield every.rows(order[start : start + int(batch_size)])

    def sequence_minibatches(self, batch_size: int) -> Iterator[RolloutBatch]:
        """One pass over every sequence (see the module docstring) of every environment
        in a random order (the global torch CPU generator), ``max(1, batch_size //
        seq_len)`` sequences at a time, so a minibatch holds about ``batch_size`` steps
        as a feed-forward one does."""
        if not self.ready:
            raise RuntimeError(
                "compute_returns_and_advantages() must run before sequence_minibatches()"
            )
        if isinstance(batch_size, bool) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        starts = torch.tensor(self.sequence_starts(), device=self.device)
        length, stride = self._sequences()
        # Sequence k = (start starts[k % S], env k // S): steps (L,) and validity per sequence.
        offsets = torch.arange(length, device=self.device)
        steps = starts[:, None] + offsets[None, :]  # (S, L)
        valid = steps < self.pos
        steps = steps.clamp(max=self.pos - 1)
        count = len(starts) * self.num_envs
        per_batch = max(1, int(batch_size) // length)
        order = torch.randperm(count).to(self.device)
        rows = starts // stride
        for first in range(0, count, per_batch):
            pick = order[first : first + per_batch]
            which, env = pick % len(starts), pick // len(starts)
            t, e = steps[which], env[:, None].expand(-1, length)  # (B, L) each
            ok = valid[which]

            def seq(store: torch.Tensor, t: torch.Tensor = t, e: torch.Tensor = e) -> torch.Tensor:
                return store[t, e]

            def flat(store: torch.Tensor, ok: torch.Tensor = ok) -> torch.Tensor:
                return seq(store)[ok]

            # An episode starts at step t > 0 of a sequence when the step before ended one;
            # step 0 starts from the stored state, already reset where it had to be.
            resets = torch.zeros_like(ok)
            if length > 1:
                resets[:, 1:] = seq(self.dones)[:, :-1].bool()
            yield replace(
                self._stores().map(flat, obs=seq),
                hidden=map_tree(lambda store, w=which, v=env: store[rows[w], v], self.hidden),
                resets=resets,
                valid=ok,
            )
