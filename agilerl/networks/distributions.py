"""Action distributions: one class per action-space type, chosen from a table.

:func:`make_action_distribution` (the shape of Stable-Baselines3's
``make_proba_distribution``) maps an action space to its distribution through
:data:`DISTRIBUTIONS`:

* ``Discrete(n)``: a categorical over ``n`` logits.
* ``MultiDiscrete(nvec)``: independent categoricals, one per sub-action; the logits hold
  sub-action 0's ``nvec[0]`` choices first, then sub-action 1's (``nvec`` flattened in C
  order); log-probabilities and entropies are summed over sub-actions.
* ``MultiBinary``: independent Bernoullis, one logit per bit, summed likewise.
* ``Box``: a diagonal Gaussian around the head's outputs with a learned,
  state-independent ``log_std``; with ``squash_output`` the sample ``u`` becomes
  ``low + (tanh(u) + 1) / 2 * (high - low)`` and its log-probability carries the
  change-of-variables term. The entropy is the Gaussian's (the squashed one has no
  closed form).

An :class:`ActionDistribution` is an ``nn.Module`` (it owns what moves with the network:
``log_std``, the bounds); calling it on a batch of head outputs (and, for categorical
actions, an action mask) gives the batch's distribution, whose ``sample``,
``log_prob`` and ``entropy`` work on *samples*: what a rollout stores and a
log-probability is exact for (integer indices plus ``start``, 0/1 bits, the raw
Gaussian ``u``). :meth:`ActionDistribution.actions` turns samples into actions of the
space (the squash) and :meth:`ActionDistribution.env_actions` into what ``env.step``
takes; :meth:`ActionDistribution.samples` inverts :meth:`~ActionDistribution.actions`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt
import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Bernoulli, Normal

#: Logit given to masked-out actions: their probability underflows to exactly zero while
#: the entropy stays finite (``-inf`` would make ``0 * log 0`` a NaN).
MASKED_LOGIT = -1e8
#: ``log_std`` is clamped into this range before use (a std of 2e-9 to 7.4).
LOG_STD_BOUNDS = (-20.0, 2.0)

#: Values as callers hand them over: a tensor, or anything numpy reads as an array.
TensorLike: TypeAlias = torch.Tensor | npt.ArrayLike
#: Samples or actions as callers hand them back (a rollout's tensors, a buffer's arrays).
ActionLike: TypeAlias = TensorLike
#: An action mask (1/True marks an allowed action), or None for no mask.
ActionMask: TypeAlias = torch.Tensor | npt.ArrayLike | None


class BatchDistribution(Protocol):
    """The distribution of one batch of head outputs, as every family's :meth:`batch`
    returns it (:class:`Categoricals`, :class:`Bernoullis`, :class:`DiagGaussian`)."""

    def sample(self, deterministic: bool = False) -> torch.Tensor: ...

    def log_prob(self, sample: ActionLike) -> torch.Tensor: ...

    def entropy(self) -> torch.Tensor: ...


# -- distributions of one batch -------------------------------------------------------------
class Categoricals:
    """Independent categoricals over consecutive groups of ``logits`` columns (``sizes``),
    computed with one ``log_softmax`` per group and no argument validation: a rollout
    step samples a few actions, and ``torch.distributions`` would cost more than the
    network. Samples are ``start + index`` shaped ``(batch, *shape)``; by default one
    column per group from 0."""

    def __init__(
        self,
        logits: torch.Tensor,
        sizes: list[int],
        start: torch.Tensor | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        parts = logits.split(sizes, dim=-1) if len(sizes) > 1 else (logits,)
        self.log_p = [part.log_softmax(dim=-1) for part in parts]
        self.start = start
        self.shape = (len(sizes),) if shape is None else tuple(shape)

    def sample(self, deterministic: bool = False) -> torch.Tensor:
        """Sampled indices, or the most likely ones."""
        if deterministic:
            picks = [lp.argmax(dim=-1, keepdim=True) for lp in self.log_p]
        else:
            # Gumbel-max: argmax(log p + G), G = -log(-log U), is an exact sample and a
            # third of the cost of torch.multinomial on a handful of rows.
            picks = [
                (lp - (-torch.rand_like(lp).log()).log()).argmax(dim=-1, keepdim=True)
                for lp in self.log_p
            ]
        index = picks[0] if len(picks) == 1 else torch.cat(picks, dim=-1)
        if self.start is not None:
            index = index + self.start
        return index.reshape(-1, *self.shape)

    def log_prob(self, sample: ActionLike) -> torch.Tensor:
        """Summed log-probability of samples as :meth:`sample` returns them."""
        first = self.log_p[0]
        index = torch.as_tensor(sample, device=first.device).reshape(first.shape[0], -1).long()
        if self.start is not None:
            index = index - self.start
        total = first.gather(-1, index[:, :1])
        for i, lp in enumerate(self.log_p[1:], start=1):
            total = total + lp.gather(-1, index[:, i : i + 1])
        return total.squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """Summed entropy (a masked action adds ``0 * MASKED_LOGIT = 0``)."""
        total = -(self.log_p[0].exp() * self.log_p[0]).sum(dim=-1)
        for lp in self.log_p[1:]:
            total = total - (lp.exp() * lp).sum(dim=-1)
        return total


class Bernoullis:
    """Independent bits; samples are floats 0/1 shaped ``(batch, *shape)``."""

    def __init__(self, logits: torch.Tensor, shape: tuple[int, ...]) -> None:
        self.dist = Bernoulli(logits=logits, validate_args=False)
        self.shape = shape

    def sample(self, deterministic: bool = False) -> torch.Tensor:
        logits = self.dist.logits
        bits = (logits > 0).to(logits) if deterministic else self.dist.sample()
        return bits.reshape(-1, *self.shape)

    def log_prob(self, sample: ActionLike) -> torch.Tensor:
        logits = self.dist.logits
        bits = torch.as_tensor(sample, device=logits.device).to(logits).reshape(logits.shape)
        return self.dist.log_prob(bits).sum(dim=-1)

    def entropy(self) -> torch.Tensor:
        return self.dist.entropy().sum(dim=-1)


class TanhSquash(nn.Module):
    """``u -> low + (tanh(u) + 1) / 2 * (high - low)`` and its log-Jacobian."""

    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, space: spaces.Box) -> None:
        super().__init__()
        low = torch.as_tensor(space.low, dtype=torch.float32).reshape(-1)
        high = torch.as_tensor(space.high, dtype=torch.float32).reshape(-1)
        if not (torch.isfinite(low).all() and torch.isfinite(high).all()):
            raise ValueError("squash_output needs bounded actions (finite low and high)")
        # Not saved: they follow from the action space, which is.
        self.register_buffer("low", low, persistent=False)
        self.register_buffer("high", high, persistent=False)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.low + (torch.tanh(u) + 1.0) * ((self.high - self.low) * 0.5)

    def log_det(self, u: torch.Tensor) -> torch.Tensor:
        """``sum log|d action / d u|`` over the last dimension."""
        half_range = (self.high - self.low) * 0.5
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|
        log_det = 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u)) + half_range.log()
        return log_det.sum(dim=-1)

    def inverse(self, action: torch.Tensor) -> torch.Tensor:
        """The ``u`` of an action (clamped just inside the bounds, where atanh is finite)."""
        half_range = (self.high - self.low) * 0.5
        y = ((action - self.low) / half_range - 1.0).clamp(-1 + 1e-6, 1 - 1e-6)
        return torch.atanh(y)


class DiagGaussian:
    """A diagonal Gaussian per row (optionally squashed); samples are the raw ``u``
    shaped ``(batch, *shape)``."""

    def __init__(
        self,
        mean: torch.Tensor,
        log_std: torch.Tensor,
        shape: tuple[int, ...],
        squash: TanhSquash | None,
    ) -> None:
        std = log_std.clamp(*LOG_STD_BOUNDS).exp().expand_as(mean)
        self.normal = Normal(mean, std, validate_args=False)
        self.shape = shape
        self.squash = squash

    def sample(self, deterministic: bool = False) -> torch.Tensor:
        # rsample keeps the gradient for callers that want it; its draws equal sample()'s.
        u = self.normal.mean if deterministic else self.normal.rsample()
        return u.reshape(-1, *self.shape)

    def log_prob(self, sample: ActionLike) -> torch.Tensor:
        mean = self.normal.mean
        u = torch.as_tensor(sample, device=mean.device).to(mean).reshape(mean.shape)
        log_prob = self.normal.log_prob(u).sum(dim=-1)
        if self.squash is not None:
            log_prob = log_prob - self.squash.log_det(u)
        return log_prob

    def entropy(self) -> torch.Tensor:
        return self.normal.entropy().sum(dim=-1)


# -- distribution families (one per action-space type) --------------------------------------
class ActionDistribution(nn.Module):
    """The distribution family of one action space (module docstring)."""

    #: dtype of the samples (what a rollout buffer stores).
    sample_dtype: ClassVar[torch.dtype] = torch.float32

    def __init__(self, space: spaces.Space, squash_output: bool = False) -> None:
        super().__init__()
        if space.shape is None:
            raise TypeError(f"no action distribution for {space!r}: it has no shape")
        self.space = space
        self.shape = tuple(space.shape)

    @property
    def num_params(self) -> int:
        """Head outputs the distribution reads per observation."""
        return int(math.prod(self.shape))

    def forward(self, params: torch.Tensor, mask: ActionMask = None) -> BatchDistribution:
        """The distribution of a batch of head outputs ``params``; ``mask`` (1/True marks
        an allowed action) applies to categorical actions only."""
        if mask is not None:
            raise ValueError(
                "action masks apply to Discrete and MultiDiscrete actions, not "
                f"{type(self.space).__name__}"
            )
        return self.batch(params)

    def batch(self, params: torch.Tensor) -> BatchDistribution:
        raise NotImplementedError

    def set_initial_std(self, std: float) -> None:
        """``action_std_init``: the starting spread of a continuous action (only a
        Gaussian has one)."""

    def actions(self, sample: torch.Tensor) -> torch.Tensor:
        """Samples -> actions of the space (tensors; a Gaussian sample is squashed if the
        family squashes, and otherwise left unclipped)."""
        return sample

    def samples(self, action: ActionLike) -> torch.Tensor:
        """Actions of the space -> the samples they came from (inverse of :meth:`actions`)."""
        return torch.as_tensor(action)

    def env_actions(self, sample: torch.Tensor) -> np.ndarray:
        """Samples -> what ``env.step`` takes (numpy, in the space's dtype)."""
        return self.actions(sample).detach().cpu().numpy()


class _Masked(ActionDistribution):
    """Categorical families: masked-out logits get :data:`MASKED_LOGIT`."""

    sample_dtype = torch.int64

    def forward(self, params: torch.Tensor, mask: ActionMask = None) -> BatchDistribution:
        if mask is not None:
            mask = torch.as_tensor(mask, device=params.device).reshape(params.shape).bool()
            params = params.masked_fill(~mask, MASKED_LOGIT)
        return self.batch(params)


class CategoricalDistribution(_Masked):
    """``Discrete(n)``: samples are int64 ``(batch,)`` indices (``start`` added)."""

    start: torch.Tensor | None

    def __init__(self, space: spaces.Discrete, squash_output: bool = False) -> None:
        super().__init__(space, squash_output)
        self.n = int(space.n)
        start = torch.tensor(int(space.start), dtype=torch.int64)
        self.register_buffer("start", start if int(space.start) else None, persistent=False)

    @property
    def num_params(self) -> int:
        return self.n

    def batch(self, params: torch.Tensor) -> Categoricals:
        return Categoricals(params, [self.n], self.start, ())


class MultiCategoricalDistribution(_Masked):
    """``MultiDiscrete``: int64 samples ``(batch, *space.shape)`` (``start`` added)."""

    start: torch.Tensor

    def __init__(self, space: spaces.MultiDiscrete, squash_output: bool = False) -> None:
        super().__init__(space, squash_output)
        self.nvec = [int(n) for n in np.asarray(space.nvec).reshape(-1)]
        start = torch.as_tensor(np.asarray(space.start, dtype=np.int64).reshape(-1))
        self.register_buffer("start", start, persistent=False)

    @property
    def num_params(self) -> int:
        return sum(self.nvec)

    def batch(self, params: torch.Tensor) -> Categoricals:
        return Categoricals(params, self.nvec, self.start, self.shape)


class BernoulliDistribution(ActionDistribution):
    """``MultiBinary``: float 0/1 samples ``(batch, *space.shape)``."""

    def batch(self, params: torch.Tensor) -> Bernoullis:
        return Bernoullis(params, self.shape)

    def env_actions(self, sample: torch.Tensor) -> np.ndarray:
        return sample.detach().cpu().numpy().astype(self.space.dtype)


class DiagGaussianDistribution(ActionDistribution):
    """``Box``: Gaussian samples ``u`` ``(batch, *space.shape)``; the environment gets
    them squashed (``squash_output``) or clipped into the bounds."""

    space: spaces.Box

    def __init__(self, space: spaces.Box, squash_output: bool = False) -> None:
        super().__init__(space, squash_output)
        self.log_std = nn.Parameter(torch.zeros(self.num_params))
        self.squash = TanhSquash(space) if squash_output else None

    def batch(self, params: torch.Tensor) -> DiagGaussian:
        return DiagGaussian(params, self.log_std, self.shape, self.squash)

    def set_initial_std(self, std: float) -> None:
        with torch.no_grad():
            self.log_std.fill_(math.log(std))

    def actions(self, sample: torch.Tensor) -> torch.Tensor:
        if self.squash is None:
            return sample
        flat = self.squash(sample.reshape(sample.shape[0], -1))
        return flat.reshape(-1, *self.shape)

    def samples(self, action: ActionLike) -> torch.Tensor:
        action = torch.as_tensor(action)
        if self.squash is None:
            return action
        flat = action.to(self.squash.low).reshape(action.shape[0], -1)
        return self.squash.inverse(flat).reshape(-1, *self.shape)

    def env_actions(self, sample: torch.Tensor) -> np.ndarray:
        out = self.actions(sample).detach().cpu().numpy()
        return np.clip(out, self.space.low, self.space.high)


#: Action-space type -> its distribution family (subclasses of a space type use its row).
DISTRIBUTIONS: dict[type[spaces.Space], type[ActionDistribution]] = {
    spaces.Discrete: CategoricalDistribution,
    spaces.MultiDiscrete: MultiCategoricalDistribution,
    spaces.MultiBinary: BernoulliDistribution,
    spaces.Box: DiagGaussianDistribution,
}


def distribution_class(space: spaces.Space) -> type[ActionDistribution]:
    """The family of ``space`` from :data:`DISTRIBUTIONS`; a clear error for any other."""
    for klass in type(space).__mro__:
        if klass in DISTRIBUTIONS:
            return DISTRIBUTIONS[klass]
    known = ", ".join(k.__name__ for k in DISTRIBUTIONS)
    raise TypeError(
        f"no action distribution for {space!r}: the supported action spaces are {known}"
    )


def make_action_distribution(
    space: spaces.Space, squash_output: bool = False
) -> ActionDistribution:
    """The distribution family of an action space (module docstring). ``squash_output``
    applies to Box actions and is ignored by the others."""
    return distribution_class(space)(space, squash_output)
