"""The multi-agent family (IPPO, MADDPG, MATD3): PettingZoo parallel environments
vectorised over ``num_envs`` copies, the shared multi-agent replay buffer of the
off-policy teams, and the team turns of :mod:`.loops`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agilerl.families.base import Family, Memory, vector_workers
from agilerl.families.context import RunContext
from agilerl.families.evaluation import (
    EvaluationError,
    EvaluationResult,
    check_counts,
    no_video,
)
from agilerl.families.python_env import CopiedPythonEnv
from agilerl.models.base import AgentType
from agilerl.models.env import PzEnvSpec
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.evaluation_cap import episode_steps, warn_if_saved_cut
from agilerl.training.evolution import Turns
from agilerl.training.preflight import Estimate

#: The spec's training function (``x-agilerl-algorithm.training_fn``) -> the function of
#: :mod:`.loops` that makes the turns of a run of it (imported with PettingZoo, on use).
TURNS: dict[str, str] = {
    "train_multi_agent_off_policy": "off_policy_run_turns",
    "train_multi_agent_on_policy": "on_policy_run_turns",
}


class MultiAgentFamily(CopiedPythonEnv, Family):
    """PettingZoo is the ``multiagent`` extra: this family's environment side (and the
    buffers, pre-flight and evaluation built on it) is imported when a multi-agent run or
    evaluation is set up, so ``FAMILIES`` and every other family work without it."""

    agent_type = AgentType.MultiAgent
    title = "multi-agent"
    evaluation_spec = PzEnvSpec

    def make_env(self, ctx: RunContext) -> Any:
        from agilerl.families.multi_agent.vector import make_vector_env

        return make_vector_env(ctx.environment, source=ctx.env_source)

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        return {
            "observation_spaces": env.observation_spaces,
            "action_spaces": env.action_spaces,
            "net_config": ctx.network,
            "seed": seed,
        }

    def turns(self, ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
        from agilerl.families.multi_agent import loops

        run_turns = getattr(loops, TURNS[ctx.algorithm.training_fn_name])
        return run_turns(ctx, env, memory, population)

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate:
        from agilerl.families.multi_agent.preflight import check_multi_agent_run

        return check_multi_agent_run(ctx, available)

    def make_memory(self, ctx: RunContext) -> Memory:
        """Off-policy teams share one replay buffer of every agent's transitions;
        on-policy teams keep their own rollouts."""
        return self.replay_memory(
            ctx.replay_buffer or ReplayBufferSpec(), ctx.algorithm, ctx.device
        )

    def replay_memory(self, spec: Any, algorithm: Any, device: Any) -> Memory:
        if not algorithm.off_policy:
            return Memory()
        from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer

        return Memory(MultiAgentReplayBuffer(spec.max_size, device=device))

    def env_workers(self, ctx: RunContext, env: Any) -> int:
        return vector_workers(ctx, env)

    # One network section serves every agent group and each group's networks evolve on
    # their own: the manifest's section stands (the agents' files hold the rest), so
    # evolved_network keeps the default.

    # -- evaluating a saved team ----------------------------------------------------------
    def evaluate_saved(
        self,
        agent: Any,
        environment: Any,
        *,
        episodes: int,
        seed: int,
        deterministic: bool,
        video: str | Path | None = None,
        max_episode_steps: int | None = None,
    ) -> EvaluationResult:
        """Episodes of one parallel environment, the team acting with its deterministic
        actions (``agent.predict``); an episode's return is every agent's rewards
        summed, and it ends when every agent is done."""
        check_counts(episodes, max_episode_steps)
        no_video(video, "a PettingZoo environment")
        if not deterministic:
            raise EvaluationError(
                "deterministic: a multi-agent team is evaluated with its deterministic "
                "actions; leave --stochastic out"
            )
        from agilerl.families.multi_agent.envs import make_parallel_env

        spec = self.evaluation_environment(environment, agent)
        name = spec.entrypoint or spec.name
        env = make_parallel_env(spec)
        try:
            _check_team_spaces(agent, env, name)
            returns, lengths = [], []
            # an environment whose episodes never end stops at the cap (a warning says so)
            limit, cut = episode_steps(max_episode_steps), False
            for episode in range(episodes):
                obs, infos = env.reset(seed=seed + episode)
                total, steps, done = 0.0, 0, not env.agents
                while not done and steps < limit:
                    actions = agent.predict(obs, infos)
                    obs, rewards, terminated, truncated, infos = env.step(actions)
                    total += sum(float(reward) for reward in rewards.values())
                    steps += 1
                    ended = all(terminated[a] or truncated[a] for a in terminated)
                    done = ended or not env.agents
                returns.append(total)
                lengths.append(steps)
                cut = cut or not done
            warn_if_saved_cut(cut, max_episode_steps)
        finally:
            env.close()
        return EvaluationResult(returns, lengths, seed, True, name)


def _check_team_spaces(agent: Any, env: Any, where: str) -> None:
    """The team was built for this environment's agents and their spaces."""
    ids = list(env.possible_agents)
    if set(ids) != set(agent.agent_ids):
        raise EvaluationError(
            f"{where}: the team's agents {sorted(agent.agent_ids)} are not the "
            f"environment's {sorted(ids)}: the team was trained on another environment"
        )
    for agent_id in ids:
        for kind, mine, theirs in (
            ("observation", agent.observation_spaces, env.observation_space),
            ("action", agent.action_spaces, env.action_space),
        ):
            if mine[agent_id] != theirs(agent_id):
                raise EvaluationError(
                    f"{where}: agent {agent_id!r}'s {kind} space {mine[agent_id]} is not the "
                    f"environment's {theirs(agent_id)}: the team was trained on another "
                    "environment"
                )
