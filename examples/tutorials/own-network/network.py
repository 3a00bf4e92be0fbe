"""Your own network from Python: a spec, the network it builds, and a run that uses it.

A network spec is data (pydantic, generated from the JSON Schemas): checked when it is
made, printed, saved. The engine builds torch modules from it, and an architecture
mutation changes module and spec together.
"""

import numpy as np
import torch
from gymnasium import spaces

from agilerl import LocalTrainer
from agilerl.models import DQNSpec, QNetworkSpec
from agilerl.models.validation import SpecError, parse_spec
from agilerl.networks import QNetwork

# A SimBa encoder (residual MLP blocks, Lee et al. 2024) under a small MLP head.
spec = QNetworkSpec(
    latent_dim=32,
    encoder_config={"arch": "simba", "hidden_size": 64, "num_blocks": 2},
    head_config={"hidden_size": [32]},
)
print(type(spec.encoder_config).__name__)  # SimbaSpec, chosen by `arch`

# A mistake is refused with the dotted path of the field, as `agilerl validate` says it.
try:
    parse_spec(QNetworkSpec, {"encoder_config": {"arch": "mlp", "hidden_size": [4]}})
except SpecError as err:
    print(err)

# The torch network for CartPole's spaces; growth keeps what it computes.
net = QNetwork(spaces.Box(-1, 1, (4,)), spaces.Discrete(2), spec)
obs = torch.randn(3, 4)
before = net(obs)
print(net.mutation_methods())
net.mutate("encoder.add_node", np.random.default_rng(0))
assert torch.allclose(before, net(obs), atol=1e-5)
print("after add_node:", net.spec.encoder_config.hidden_size)

# The same network section in a run: LocalTrainer(network=...) takes a mapping or a spec.
trainer = LocalTrainer(
    DQNSpec(lr=1e-3, learn_step=1, batch_size=64),
    {"name": "CartPole-v1", "num_envs": 4},
    {"max_steps": 2_000, "evo_steps": 1_000, "pop_size": 1, "seed": 0},
    network={
        "latent_dim": 32,
        "encoder_config": {"arch": "simba", "hidden_size": 64, "num_blocks": 2},
        "head_config": {"hidden_size": [32]},
    },
)
trainer.train(verbose=False)
print(trainer.best_agent)
print(trainer.to_manifest().network)
