"""Evaluate a saved agent in Python: `python examples/tutorials/evaluation/evaluate.py runs/evaluation`.

``RLAlgorithm.load`` reads an agent file (no pickle: data only); ``evaluate_agent`` plays
whole seeded episodes; ``predict`` is Stable-Baselines3's, for your own loop.
"""

import sys
from pathlib import Path

import gymnasium as gym

from agilerl import RLAlgorithm, evaluate_agent

run = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/evaluation")
agent = RLAlgorithm.load(run / "best_agent.pt")
print(agent)

# Whole episodes, episode i reset with seed + i: the same agent and seed give the same returns.
result = evaluate_agent(agent, "CartPole-v1", episodes=5, seed=0)
print(result.summary())
print("returns:", result.returns, "mean", result.mean_return)

# Sampled actions instead of the most likely, and a video of the first episode.
sampled = evaluate_agent(
    agent, "CartPole-v1", episodes=2, deterministic=False, video=run / "play.gif"
)
print("sampled:", sampled.summary())

# Your own loop: one observation in, one action out (an int for a Discrete space).
env = gym.make("CartPole-v1")
obs, _ = env.reset(seed=0)
total, done = 0.0, False
while not done:
    action, _ = agent.predict(obs, deterministic=True)
    obs, reward, terminated, truncated, _ = env.step(action)
    total += float(reward)
    done = terminated or truncated
print("own loop return:", total)
