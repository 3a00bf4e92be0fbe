"""Stable-Baselines3's side of ``benchmarks/standard_tasks.py``: train one SB3 agent on a
Gymnasium task and print its evaluation curve, one JSON line per evaluation.

Runs in a venv of its own with ``stable-baselines3`` and the task's Gymnasium extras
(never in this project's: SB3 is a comparison, not a dependency); it imports neither
this project nor anything beyond SB3, Gymnasium, numpy and torch. Usage (what
``standard_tasks.py`` runs)::

    SB3_PYTHON benchmarks/sb3_side.py '{"algo": "PPO", "env": "LunarLander-v3", ...}'

The JSON argument: ``algo`` (PPO, TD3, DDPG, DQN), ``env``, ``n_envs``, ``steps``
(environment steps in all, as SB3 counts them), ``seed``, ``eval_every`` (environment
steps between evaluations), ``eval_episodes``, ``kwargs`` (the algorithm's keyword
arguments), ``policy_kwargs`` (``net_arch`` and ``activation``: ``relu`` or ``tanh``),
``normalize`` (``VecNormalize``'s ``norm_obs`` and ``norm_reward``, or null) and
``action_noise`` (the standard deviation of Gaussian exploration noise, in units where
the action bounds span [-1, 1], or null), ``env_kwargs`` (``gymnasium.make``'s keyword
arguments) and ``atari`` (null, or ``{"frame_stack": k}``: SB3's ``make_atari_env``, whose
``AtariWrapper`` is the Nature preprocessing, k frames stacked, ``CnnPolicy``; the
evaluation environment is wrapped alike and scored by its ``Monitor``: whole games of
the game's own rewards). Each line: ``{"steps", "mean", "std", "seconds"}``
(mean and standard deviation of the deterministic evaluation returns, in the
environment's units; seconds of training so far, evaluation excluded).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
from stable_baselines3 import DDPG, DQN, PPO, TD3
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_atari_env, make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize

ALGOS = {"PPO": PPO, "TD3": TD3, "DDPG": DDPG, "DQN": DQN}
ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}


class Curve(BaseCallback):
    """Evaluates every ``every`` environment steps and prints the line."""

    def __init__(self, eval_env, every: int, episodes: int) -> None:
        super().__init__()
        self.eval_env, self.every, self.episodes = eval_env, every, episodes
        self.next = every
        self.reported = 0  # the steps of the last evaluation
        self.training_seconds = 0.0
        self.mark = time.perf_counter()

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next:
            self.next += self.every
            self.report()
        return True

    def report(self) -> None:
        self.training_seconds += time.perf_counter() - self.mark
        train_env = self.model.get_env()
        if isinstance(train_env, VecNormalize):  # evaluation sees the training statistics
            self.eval_env.obs_rms = train_env.obs_rms
        returns, _ = evaluate_policy(
            self.model, self.eval_env, n_eval_episodes=self.episodes, deterministic=True,
            return_episode_rewards=True,
        )  # fmt: skip
        line = {
            "steps": int(self.num_timesteps),
            "mean": float(np.mean(returns)),
            "std": float(np.std(returns)),
            "seconds": self.training_seconds,
        }
        print(json.dumps(line), flush=True)
        self.reported = int(self.num_timesteps)
        self.mark = time.perf_counter()


def make_envs(args: dict) -> tuple:
    """The training vector env of ``n_envs`` copies and the evaluation env of one."""
    kwargs = args.get("env_kwargs") or {}
    atari = args.get("atari")
    if not atari:
        return tuple(
            make_vec_env(args["env"], n_envs=n, seed=args["seed"] + offset, env_kwargs=kwargs)
            for n, offset in ((args["n_envs"], 0), (1, 10_000))
        )
    import ale_py
    import gymnasium

    gymnasium.register_envs(ale_py)
    # the game itself must not skip frames: SB3's AtariWrapper does (MaxAndSkipEnv)
    kwargs = {**kwargs, "frameskip": 1}
    return tuple(
        VecFrameStack(
            make_atari_env(args["env"], n_envs=n, seed=args["seed"] + offset, env_kwargs=kwargs),
            n_stack=atari["frame_stack"],
        )
        for n, offset in ((args["n_envs"], 0), (1, 10_000))
    )


def main() -> None:
    args = json.loads(sys.argv[1])
    torch.set_num_threads(1)
    env, eval_env = make_envs(args)
    if args.get("normalize"):
        env = VecNormalize(env, gamma=args["kwargs"].get("gamma", 0.99), **args["normalize"])
        eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
    kwargs = dict(args["kwargs"])
    policy = dict(args.get("policy_kwargs") or {})
    if "activation" in policy:
        policy["activation_fn"] = ACTIVATIONS[policy.pop("activation")]
    if args.get("action_noise") is not None:
        # SB3 adds it to the action scaled to [-1, 1], the units of this project's
        # expl_noise too.
        dims = env.action_space.shape[-1]
        kwargs["action_noise"] = NormalActionNoise(
            np.zeros(dims), args["action_noise"] * np.ones(dims)
        )
    model = ALGOS[args["algo"]](
        "CnnPolicy" if args.get("atari") else "MlpPolicy",
        env,
        seed=args["seed"],
        policy_kwargs=policy,
        verbose=0,
        **kwargs,
    )
    curve = Curve(eval_env, args["eval_every"], args["eval_episodes"])
    model.learn(total_timesteps=args["steps"], callback=curve)
    if curve.reported < model.num_timesteps:  # the last evaluation, at the budget
        curve.report()


if __name__ == "__main__":
    main()
