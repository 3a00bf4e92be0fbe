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

import inspect
from typing import Any, ClassVar

import torch
from gymnasium import spaces

from agilerl.algorithms.ddpg import DDPG


class TD3(DDPG):
    """TD3 (module docstring); every constructor argument is DDPG's."""

    critics: ClassVar[tuple[str, ...]] = ("critic_1", "critic_2")
    eval_networks: ClassVar[tuple[str, ...]] = ("actor", "critic_1", "critic_2")
    target_networks: ClassVar[dict[str, str]] = {
        "actor_target": "actor",
        "critic_1_target": "critic_1",
        "critic_2_target": "critic_2",
    }
    optimizer_specs: ClassVar[dict[str, tuple[tuple[str, ...], str]]] = {
        "actor_optimizer": (("actor",), "lr_actor"),
        "critic_optimizer": (("critic_1", "critic_2"), "lr_critic"),
    }

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        *,
        tau: float = 5e-3,
        **kwargs: Any,
    ) -> None:
        super().__init__(observation_space, action_space, index, tau=tau, **kwargs)

    def _combine(self, values: list[torch.Tensor]) -> torch.Tensor:
        """The smaller of the two target critics' values."""
        return torch.minimum(values[0], values[1])


def _signature_with(func: Any, **defaults: Any) -> inspect.Signature:
    """``func``'s signature with some parameters' defaults replaced."""
    sig = inspect.signature(func)
    params = [
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in sig.parameters.values()
    ]
    return sig.replace(parameters=params)


# Shown by help() and IDEs (and checked against the schema by the tests): DDPG's
# full argument list with TD3's own default, rather than ``**kwargs``.
TD3.__init__.__signature__ = _signature_with(DDPG.__init__, tau=5e-3)  # type: ignore[attr-defined]
