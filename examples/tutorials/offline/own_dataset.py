"""An offline dataset of your own: write the HDF5 file, then train CQN on it.

The file holds one row per transition: ``observations``, ``actions``, ``rewards``,
``next_observations`` (the true last observation where an episode ended) and
``terminals`` (``truncations`` optional). Here a hand-written CartPole controller, made
clumsy by 30% random actions, plays 20,000 steps.
"""

from pathlib import Path

import gymnasium as gym
import h5py
import numpy as np

from agilerl import LocalTrainer

rng = np.random.default_rng(0)
env = gym.make("CartPole-v1")
rows: dict[str, list] = {
    k: []
    for k in ("observations", "actions", "rewards", "next_observations", "terminals", "truncations")
}
obs, _ = env.reset(seed=0)
for _ in range(20_000):
    lean = obs[2] + 0.5 * obs[3]  # pole angle and angular velocity: push the way it falls
    action = int(rng.integers(2)) if rng.random() < 0.3 else int(lean > 0)
    next_obs, reward, terminated, truncated, _ = env.step(action)
    for key, value in zip(
        rows, (obs, action, reward, next_obs, terminated, truncated), strict=True
    ):
        rows[key].append(value)
    obs = env.reset()[0] if terminated or truncated else next_obs
episodes = sum(rows["terminals"]) + sum(rows["truncations"])
print(f"{len(rows['actions'])} transitions, mean return {len(rows['actions']) / episodes:.1f}")

Path("runs").mkdir(exist_ok=True)
with h5py.File("runs/controller.h5", "w") as f:
    for key, values in rows.items():
        f.create_dataset(key, data=np.asarray(values))

# The tutorial's manifest, pointed at this file (an absolute path: relative ones resolve
# against the manifest's folder).
trainer = LocalTrainer.from_manifest(Path(__file__).with_name("cqn.yaml"))
trainer.environment = trainer.environment.model_copy(
    update={"dataset_path": str(Path("runs/controller.h5").resolve())}
)
population, fitnesses = trainer.train(verbose=False, output_dir="runs/cqn-own", force=True)
print("CQN fitness per agent:", fitnesses)
