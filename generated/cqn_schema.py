# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from pydantic import ConfigDict

from .dqn_schema import QLearningFields


class CQNFields(QLearningFields):
    """
    Fields of the CQN specification (shared with the manifest).
    """


class CQNSpec(CQNFields):
    """
    Conservative Q-Network (CQN), trained offline from a dataset.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'offline_agent',
                'off_policy': False,
                'training_fn': 'train_offline',
                'network_spec': 'QNetworkSpec',
                'default_evo_steps': 5000,
            }
        },
    )
