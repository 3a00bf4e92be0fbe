"""Multi-agent TD3 (Ackermann et al., 2019): MADDPG with TD3's three changes.

:class:`~agilerl.algorithms.maddpg.MADDPG` with, per agent group:

* twin centralised critics ``critic_1`` and ``critic_2`` (each with its target), trained
  together by one optimiser on the sum of their squared TD errors;
* the TD target takes the *minimum* of the two target critics;
* target policy smoothing: clipped Gaussian noise on the target actors' Box actions
  (``policy_noise`` 0.2, ``noise_clip`` 0.5, normalised units);
* delayed actors: the actors and all targets update every ``policy_freq`` critic updates.

The actors follow the first critic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from gymnasium import spaces

from agilerl.algorithms.maddpg import MADDPG
from agilerl.algorithms.td3 import _signature_with


class MATD3(MADDPG):
    """MATD3 (module docstring); every constructor argument is MADDPG's."""

    critics: ClassVar[tuple[str, ...]] = ("critic_1", "critic_2")
    roles: ClassVar[tuple[str, ...]] = ("actor", "critic_1", "critic_2")
    target_roles: ClassVar[Mapping[str, str]] = {
        "actor_target": "actor",
        "critic_1_target": "critic_1",
        "critic_2_target": "critic_2",
    }
    optimizer_roles: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "actor_optimizer": (("actor",), "lr_actor"),
        "critic_optimizer": (("critic_1", "critic_2"), "lr_critic"),
    }
    policy_noise: ClassVar[float] = 0.2

    def __init__(
        self,
        observation_spaces: Mapping[str, spaces.Space],
        action_spaces: Mapping[str, spaces.Space],
        index: int = 0,
        *,
        tau: float = 0.015,
        policy_freq: int = 2,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            observation_spaces, action_spaces, index, tau=tau, policy_freq=policy_freq, **kwargs
        )

    def _combine(self, values: list[torch.Tensor]) -> torch.Tensor:
        """The smaller of the two target critics' values."""
        return torch.minimum(values[0], values[1])


# Shown by help() and IDEs (and checked against the schema by the tests): MADDPG's full
# argument list with MATD3's own defaults, rather than ``**kwargs``.
MATD3.__init__.__signature__ = _signature_with(  # type: ignore[attr-defined]
    MADDPG.__init__, tau=0.015, policy_freq=2
)
