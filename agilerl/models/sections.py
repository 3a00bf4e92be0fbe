"""Python types of the manifest sections whose schema depends on another section.

The manifest schema types ``algorithm``, ``environment`` and ``network`` precisely (the
algorithm by its ``name``; the environment and network by the algorithm), and points
the generator here (``customTypePath``) because that dependency cannot be a static
pydantic type. :class:`agilerl.models.manifest_base.ManifestBase` validates them.
"""

from typing import Any

#: After validation: the registered algorithm spec (``DQNSpec``, ``PPOSpec``, ...).
AlgorithmValue = Any
#: After validation: the environment spec the algorithm's agent type trains in.
EnvironmentValue = Any
#: After validation: ``NetworkSection`` (RL), ``FinetuningNetworkSpec`` (LLM) or None.
NetworkValue = Any
#: ``NetworkSection.encoder_config``: the encoder config as written (a mapping), checked
#: against the encoder its ``arch`` selects, given or inferred.
EncoderValue = Any
