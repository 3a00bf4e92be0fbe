"""One agent, one call: :func:`train_agent`, the short path for a user who wants a trained
agent rather than an evolving population (Stable-Baselines3's ``PPO("MlpPolicy",
env).learn(n)``, here ``train_agent("PPO", env, steps=n)``).

The same engine as ``LocalTrainer`` and ``agilerl train``, with small defaults: one
agent, no HPO, 4 environment copies in this process, a fixed seed. What it leaves out is
one :class:`~agilerl.trainer.LocalTrainer` away.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agilerl.families.python_env import PythonEnv
from agilerl.models.manifest_base import environment_spec_for
from agilerl.trainer import LocalTrainer, spec_class
from agilerl.training.callbacks import Callback
from agilerl.training.errors import TrainerError

#: Environment copies stepped together where the environment can be copied.
NUM_ENVS = 4


def train_agent(
    algorithm: str,
    env: Any,
    steps: int = 100_000,
    *,
    seed: int = 0,
    num_envs: int = NUM_ENVS,
    verbose: bool = True,
    output_dir: str | Path | None = None,
    callbacks: Sequence[Callback] = (),
    **hyperparameters: Any,
) -> Any:
    """Train one ``algorithm`` agent (a registered name: ``"PPO"``, ``"DQN"``, ...) for
    ``steps`` environment steps and return it, the best of its evaluations.

    ``env``: a Gymnasium id, an environment object (one copy) or a factory (a class or
    function that makes one; ``num_envs`` copies); for NeuralUCB and NeuralTS, a
    :class:`~agilerl.families.bandits.env.BanditEnv` (tables in memory). ``hyperparameters`` are the
    algorithm spec's fields (``lr=1e-3``, ``batch_size=64``), checked as a manifest's
    are. ``output_dir`` writes the run's files (``best_agent.pt``, ...) as ``agilerl
    train`` does; ``callbacks`` as :meth:`LocalTrainer.train` takes them. Problems are
    :class:`~agilerl.training.errors.TrainerError` naming the argument.
    """
    cls = spec_class(algorithm)
    try:
        spec = cls(**hyperparameters)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise TrainerError(f"{algorithm} hyperparameters: {problems}") from None
    named = isinstance(env, str)
    copies = 1 if not named and PythonEnv.of(env).copies == 1 else num_envs
    # Copies in this process, where the environment's spec has copies at all (a bandit
    # is one table, with no num_envs).
    fields = environment_spec_for(cls).model_fields
    environment: dict[str, Any] = {
        key: value for key, value in {"num_envs": copies, "sync": True}.items() if key in fields
    }
    if named:
        environment["name"] = env
    trainer = LocalTrainer(
        spec,
        environment,
        {"max_steps": steps, "pop_size": 1, "hpo": False, "seed": seed},
        env=None if named else env,
    )
    trainer.train(verbose=verbose, output_dir=output_dir, callbacks=callbacks)
    return trainer.best_agent
