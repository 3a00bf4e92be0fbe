"""The single-agent online family (DQN, RainbowDQN, DDPG, TD3, PPO): Gymnasium vector
environments, the replay buffers of the ``replay_buffer`` section for off-policy
algorithms, and the training turns of :mod:`.off_policy` and :mod:`.on_policy` (chosen by
the spec's training function, ``train_off_policy`` or ``train_on_policy``:
:data:`TURNS`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agilerl.components.replay import build_replay_buffers
from agilerl.families.base import Family, Memory, evolved_mlp_network
from agilerl.families.context import RunContext
from agilerl.families.python_env import CopiedPythonEnv
from agilerl.families.single_agent import off_policy, on_policy
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.families.single_agent.evaluation import GymEvaluation
from agilerl.families.single_agent.preflight import check_rl_run
from agilerl.families.single_agent.vectorize import resolve_vectorize
from agilerl.models.base import AgentType
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.errors import TrainerError
from agilerl.training.evolution import Turns
from agilerl.training.preflight import Estimate

#: The spec's training function (``x-agilerl-algorithm.training_fn``) -> the turns of
#: a run of it.
TURNS: dict[str, Callable[[RunContext, Any, Memory, list[Any]], Turns]] = {
    "train_off_policy": off_policy.run_turns,
    "train_on_policy": on_policy.run_turns,
}


def gym_env_workers(ctx: RunContext, env: Any) -> int:
    """Worker processes of a Gymnasium vector env: one per copy where
    ``environment.vectorize`` resolves to ``async``, none otherwise."""
    return env.num_envs if resolve_vectorize(ctx.environment).workers else 0


def gym_build_args(ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
    """One environment's spaces (of a vector env), the network section and the seed."""
    return {
        "observation_space": env.single_observation_space,
        "action_space": env.single_action_space,
        "net_config": ctx.network,
        "seed": seed,
    }


class SingleAgentFamily(CopiedPythonEnv, GymEvaluation, Family):
    agent_type = AgentType.SingleAgent
    title = "single-agent"

    def make_env(self, ctx: RunContext) -> Any:
        return make_vector_env(ctx.environment, source=ctx.env_source)

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        return gym_build_args(ctx, env, seed)

    def turns(self, ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
        return TURNS[ctx.algorithm.training_fn_name](ctx, env, memory, population)

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate:
        return check_rl_run(ctx, available)

    def make_memory(self, ctx: RunContext) -> Memory:
        """Off-policy algorithms: the buffers of the ``replay_buffer`` section (uniform,
        prioritised, n-step beside it); on-policy ones keep their own rollouts."""
        try:
            return self.replay_memory(
                ctx.replay_buffer or ReplayBufferSpec(), ctx.algorithm, ctx.device
            )
        except ValueError as err:  # a combination the algorithm cannot use
            raise TrainerError(str(err)) from None

    def replay_memory(self, spec: Any, algorithm: Any, device: Any) -> Memory:
        if not algorithm.off_policy:
            return Memory()
        return Memory(*build_replay_buffers(spec, algorithm, device))

    def env_workers(self, ctx: RunContext, env: Any) -> int:
        return gym_env_workers(ctx, env)

    def evolved_network(self, best: Any) -> dict[str, Any]:
        return evolved_mlp_network(best)
