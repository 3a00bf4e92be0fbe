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
from typing import TYPE_CHECKING, ClassVar

import torch

from agilerl.algorithms.maddpg import MADDPG

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.matd3_schema import MATD3Spec
else:
    from agilerl.models.algorithms.matd3 import MATD3Spec


class MATD3(MADDPG, spec=MATD3Spec):
    """MATD3 (module docstring); its constructor arguments are its spec's (MADDPG's
    fields and ``policy_freq``, with MATD3's defaults)."""

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

    def _combine(self, values: list[torch.Tensor]) -> torch.Tensor:
        """The smaller of the two target critics' values."""
        return torch.minimum(values[0], values[1])
