"""Your own environment from Python: the class itself, no manifest, no registration.

``LocalTrainer(..., env=make)`` takes a factory (a class or function; one copy per
``num_envs``); ``train_agent`` does the same in one call for one agent. The factory is
``make``, not the bare class: its time limit ends an episode that wanders, and an
evaluation episode that never ends would never return.
"""

import numpy as np
from gridwalk import make

from agilerl import LocalTrainer, evaluate_agent, train_agent

BEST = 1 - 0.05 * (2 * 4 - 3)  # 0.75: six moves, the last one onto the goal

# One call: one DQN agent, no HPO, keyword arguments are DQN's hyperparameters.
agent = train_agent("DQN", make, steps=6_000, lr=1e-3, learn_step=2, verbose=False)
result = evaluate_agent(agent, make(), episodes=3)
print("train_agent:", result.summary())

# The whole trainer: the environment section's num_envs, config (the factory's keyword
# arguments) and wrappers apply to the factory; a population of 2 with HPO.
trainer = LocalTrainer(
    "DQN",
    {"num_envs": 4, "config": {"size": 4}},
    {"max_steps": 6_000, "evo_steps": 2_000, "pop_size": 2, "seed": 0},
    env=make,
    hpo=True,
)
population, fitnesses = trainer.train(verbose=False)
action, _ = trainer.best_agent.predict(np.array([0.0, 0.0], np.float32), deterministic=True)
print("LocalTrainer: fitnesses", [round(f, 2) for f in fitnesses], "first move", action)
print(f"best possible return {BEST:.2f}")
