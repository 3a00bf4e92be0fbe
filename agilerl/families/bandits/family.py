"""The contextual bandit family (NeuralUCB, NeuralTS): a bandit made from the manifest's
tables (relative paths resolve against the manifest's directory), a shared memory of
pulls, the bandit turn of :mod:`.loop`, and the regret plot beside the common outputs."""

from __future__ import annotations

from typing import Any

from agilerl.families.bandits.env import BanditEnv, BanditTableError
from agilerl.families.bandits.loop import plot_regret
from agilerl.families.bandits.memory import BanditMemory
from agilerl.families.bandits.preflight import check_bandit_run
from agilerl.families.base import Family, Memory, Output, evolved_mlp_network
from agilerl.families.context import RunContext
from agilerl.models.base import AgentType
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.errors import TrainerError
from agilerl.training.preflight import Estimate


class BanditFamily(Family):
    agent_type = AgentType.BanditAgent
    title = "contextual bandit"
    measure = "reward rate, 0 to 1"
    # The best agent's cumulative regret over its lineage's pulls.
    outputs = {"regret": Output("regret.png", plot_regret)}

    def make_env(self, ctx: RunContext) -> BanditEnv:
        """The bandit of the environment section's tables; a bad table is a
        :class:`~agilerl.training.errors.TrainerError` naming the file and row."""
        try:
            return BanditEnv.from_spec(ctx.environment, ctx.base_dir)
        except BanditTableError as err:
            raise TrainerError(f"environment: {err}") from None

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        """One arm's context space, the arms, the network section and the agent's seed."""
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "net_config": ctx.network,
            "seed": seed,
        }

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate:
        return check_bandit_run(ctx, self, available)

    def make_memory(self, ctx: RunContext) -> Memory:
        """The population's shared memory of pulls (``replay_buffer.max_size`` of them)."""
        spec = ctx.replay_buffer or ReplayBufferSpec()
        return Memory(BanditMemory(spec.max_size, device=ctx.device))

    def evolved_network(self, best: Any) -> dict[str, Any]:
        return evolved_mlp_network(best)

    def written_manifest(self, ctx: RunContext, doc: dict[str, Any]) -> None:
        """The tables' paths made absolute: they were relative to the original manifest."""
        for key in ("features", "targets"):
            doc["environment"][key] = str((ctx.base_dir / doc["environment"][key]).resolve())
