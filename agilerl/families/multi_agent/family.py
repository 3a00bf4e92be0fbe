"""The multi-agent family (IPPO, MADDPG, MATD3): PettingZoo parallel environments
vectorised over ``num_envs`` copies, the shared multi-agent replay buffer of the
off-policy teams, and the team turns of :mod:`.loops`."""

from __future__ import annotations

from typing import Any

from agilerl.families.base import Family, Memory, vector_workers
from agilerl.families.context import RunContext
from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer
from agilerl.families.multi_agent.preflight import check_multi_agent_run
from agilerl.families.multi_agent.vector import make_vector_env
from agilerl.models.base import AgentType
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.preflight import Estimate


class MultiAgentFamily(Family):
    agent_type = AgentType.MultiAgent
    title = "multi-agent"

    def make_env(self, ctx: RunContext) -> Any:
        return make_vector_env(ctx.environment)

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        return {
            "observation_spaces": env.observation_spaces,
            "action_spaces": env.action_spaces,
            "net_config": ctx.network,
            "seed": seed,
        }

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate:
        return check_multi_agent_run(ctx, available)

    def make_memory(self, ctx: RunContext) -> Memory:
        """Off-policy teams share one replay buffer of every agent's transitions;
        on-policy teams keep their own rollouts."""
        if not ctx.algorithm.off_policy:
            return Memory()
        spec = ctx.replay_buffer or ReplayBufferSpec()
        return Memory(MultiAgentReplayBuffer(spec.max_size, device=ctx.device))

    def env_workers(self, ctx: RunContext, env: Any) -> int:
        return vector_workers(ctx, env)

    # One network section serves every agent group and each group's networks evolve on
    # their own: the manifest's section stands (the agents' files hold the rest), so
    # evolved_network keeps the default.
