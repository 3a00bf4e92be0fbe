# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from pydantic import ConfigDict

from .rl_algorithm_schema import RLAlgorithmFields


class PPOSpec(RLAlgorithmFields):
    """
    Proximal Policy Optimisation. Algorithm-specific fields are added with the manifest specs.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'single_agent',
                'off_policy': False,
                'training_fn': 'train_on_policy',
            }
        },
    )
