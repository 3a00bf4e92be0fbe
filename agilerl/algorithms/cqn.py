"""``CQN``: conservative Q-learning (CQL) for discrete actions, trained from a dataset.

CQN is :class:`~agilerl.algorithms.dqn.DQN` (the same Q-network, TD targets, double DQN
option, Polyak-averaged target network, acting and checkpoints) with the CQL(H)
regulariser of Kumar et al. (2020) added to the loss:

    loss = alpha * mean_s[ logsumexp_a Q(s, a) - Q(s, a_data) ] + 0.5 * MSE(Q(s, a_data), y)

where ``a_data`` is the dataset's action and ``y = r + gamma * (1 - terminal) *
Q_target(s', a*)`` DQN's target. The first term pushes down the Q-values of every action
(softly, through the log-sum-exp) while pushing up those the data took, so actions the
dataset never shows cannot look better than the ones it does: the value of
out-of-distribution actions stays low.

Known deviation of the reference: AgileRL's CQN subtracts the *mean* of Q over all actions
instead of Q of the dataset's action, which leaves the data action pushed down like any
other; this class follows the paper. ``alpha`` (default 1.0, the reference's implicit
weight) is a constructor argument: the CQN specification has no field for it.
MultiDiscrete actions: the regulariser is taken per sub-action and averaged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from gymnasium import spaces
from torch.nn import functional

from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.hyperparameters import non_negative

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.cqn_schema import CQNSpec
else:
    from agilerl.models.algorithms.cqn import CQNSpec


class CQN(DQN, spec=CQNSpec):
    """Conservative Q-Network: DQN's loss plus the CQL(H) regulariser weighted by
    ``alpha``; learns from a fixed dataset (``agilerl.training.train_offline``)."""

    #: Constructor arguments the CQN specification has no field for (module docstring;
    #: ``cudagraphs`` is DQN's, which CQN's schema does not repeat).
    extra_init_args: ClassVar[tuple[str, ...]] = ("alpha", "cudagraphs")
    #: As the reference's CQN: the regulariser's gradients can be large early on.
    max_grad_norm: ClassVar[float | None] = 1.0
    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "alpha * cql_loss + 0.5 * td_loss (the loss minimised)",
        "td_loss": "mean squared TD error of the batch",
        "cql_loss": "mean of logsumexp_a Q(s, a) - Q(s, a_data) over the batch",
        "q_mean": "mean Q-value of the dataset's actions in the batch",
    }
    main_loss: ClassVar[str | None] = "loss"
    #: Not ``learn_step``: offline, every step is an update (no environment is stepped
    #: between them), so a mutated learn_step would change nothing.
    default_mutable: ClassVar[tuple[str, ...]] = ("lr", "batch_size")

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        *,
        alpha: float = 1.0,
        cudagraphs: bool = False,
        **options: Any,
    ) -> None:
        """Hyperparameters: ``CQNSpec``'s (``inspect.signature(CQN)``), and ``alpha``
        and ``cudagraphs``, which it does not state."""
        self.alpha = non_negative("alpha", alpha)
        self.cudagraphs = bool(cudagraphs)
        super().__init__(observation_space, action_space, index, **options)

    def _loss(
        self,
        q_values: torch.Tensor,
        index: torch.Tensor,
        q_taken: torch.Tensor,
        target: torch.Tensor,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        td_loss = functional.mse_loss(q_taken, target)
        grouped = self._per_sub_action(q_values)
        if grouped is not None:
            soft_max = grouped.logsumexp(dim=-1)
        else:
            soft_max = torch.stack(
                [q.logsumexp(dim=-1) for q in q_values.split(self._nvec, -1)], -1
            )
        cql_loss = (soft_max - q_taken).mean()
        loss = self.alpha * cql_loss + 0.5 * td_loss
        return loss, {"loss": loss, "td_loss": td_loss, "cql_loss": cql_loss}
