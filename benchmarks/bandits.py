"""NeuralUCB and NeuralTS on the Iris and digits tables scikit-learn ships: training
steps/s and cumulative regret after 3,000 pulls (one agent, the configs/ network,
no evolution), and the greedy reward rate of 1,000 pulls after.

    OMP_NUM_THREADS=1 python benchmarks/bandits.py
"""

from __future__ import annotations

import time

import numpy as np
import torch
from sklearn.datasets import load_digits, load_iris

from agilerl.algorithms.neural_ts import NeuralTS
from agilerl.algorithms.neural_ucb import NeuralUCB
from agilerl.families.bandits import BanditEnv
from agilerl.families.bandits.loop import train_bandits
from agilerl.families.bandits.memory import BanditMemory

#: The network section of configs/neural_ucb.yaml and neural_ts.yaml.
NET = {
    "latent_dim": 64,
    "encoder_config": {"hidden_size": [64, 64]},
    "head_config": {"hidden_size": [64]},
}
STEPS = 3000


def main() -> None:
    for name, data, scale in (("iris", load_iris(), 1.0), ("digits", load_digits(), 16.0)):
        for cls in (NeuralUCB, NeuralTS):
            torch.manual_seed(0)
            env = BanditEnv(data.data / scale, data.target, name=name)
            agent = cls(env.observation_space, env.action_space, seed=0, net_config=NET)
            start = time.perf_counter()
            pop, _ = train_bandits(
                env, name, cls.__name__, [agent], BanditMemory(100_000), max_steps=STEPS,
                evo_steps=STEPS, episode_steps=500, eval_steps=1, verbose=False,
            )  # fmt: skip
            seconds = time.perf_counter() - start
            rate = pop[0].test(env, max_steps=1000, seed=123)
            curve = np.array(pop[0].regret_curve)
            per_500 = np.diff(np.r_[0.0, curve[:, 1]]).astype(int).tolist()
            print(
                f"{name} {cls.__name__}: {STEPS / seconds:.0f} training steps/s, cumulative "
                f"regret after {STEPS} pulls {curve[-1, 1]:.0f} (per 500 pulls: {per_500}), "
                f"greedy reward rate {rate:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
