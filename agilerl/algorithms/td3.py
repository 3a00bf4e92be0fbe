"""``TD3``: twin delayed DDPG (Fujimoto et al., 2018).

TD3 is :class:`~agilerl.algorithms.ddpg.DDPG` with two critics. What differs:

* twin critics ``critic_1`` and ``critic_2`` (each with its target), trained together by
  one optimiser on the sum of their squared TD errors;
* the TD target takes the *minimum* of the two target critics, which counters the
  overestimation a single critic's maximisation builds up;
* a larger default Polyak coefficient (``tau`` 5e-3, the schema's).

Target policy smoothing and the delayed actor and target updates (``policy_freq``) are
DDPG's here already, as in AgileRL; the actor follows the first critic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

import torch

from agilerl.algorithms.ddpg import DDPG

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.td3_schema import TD3Spec
else:
    from agilerl.models.algorithms.td3 import TD3Spec


class TD3(DDPG, spec=TD3Spec):
    """TD3 (module docstring); its constructor arguments are its spec's (DDPG's fields,
    with TD3's defaults)."""

    critics: ClassVar[tuple[str, ...]] = ("critic_1", "critic_2")
    eval_networks: ClassVar[tuple[str, ...]] = ("actor", "critic_1", "critic_2")
    target_networks: ClassVar[Mapping[str, str]] = {
        "actor_target": "actor",
        "critic_1_target": "critic_1",
        "critic_2_target": "critic_2",
    }
    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "actor_optimizer": (("actor",), "lr_actor"),
        "critic_optimizer": (("critic_1", "critic_2"), "lr_critic"),
    }

    def _combine(self, values: list[torch.Tensor]) -> torch.Tensor:
        """The smaller of the two target critics' values."""
        return torch.minimum(values[0], values[1])
