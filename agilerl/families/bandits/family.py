"""The contextual bandit family (NeuralUCB, NeuralTS): a bandit made from the manifest's
tables (relative paths resolve against the manifest's directory) or given in Python
(``LocalTrainer(..., env=BanditEnv(features, targets))``: tables already in memory), a
shared memory of pulls, the bandit turn of :mod:`.loop`, and the regret plot beside the
common outputs."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from agilerl.families.bandits import loop
from agilerl.families.bandits.env import BanditEnv, BanditTableError, one_arm
from agilerl.families.bandits.loop import EVAL_STEPS, plot_regret
from agilerl.families.bandits.memory import BanditMemory
from agilerl.families.bandits.preflight import check_bandit_run
from agilerl.families.base import Family, Memory, Output, evolved_mlp_network
from agilerl.families.context import RunContext
from agilerl.families.environments import EnvironmentSpecError, call_factory, import_target
from agilerl.families.evaluation import (
    EvaluationError,
    EvaluationResult,
    check_counts,
    no_video,
)
from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.evaluation import check_spaces, seeded_sampling
from agilerl.models.base import AgentType
from agilerl.models.env import BANDIT_TABLES, BanditEnvSpec, missing_bandit_tables
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.errors import TrainerError
from agilerl.training.evolution import Turns
from agilerl.training.preflight import Estimate
from agilerl.training.work import Factor, Work, rl_work


class BanditFamily(Family):
    agent_type = AgentType.BanditAgent
    title = "contextual bandit"
    evaluation_spec = BanditEnvSpec
    measure = "reward rate, 0 to 1"
    step_unit = "arm pulls"
    # The best agent's cumulative regret over its lineage's pulls.
    outputs = {"regret": Output("regret.png", plot_regret)}

    def python_env_section(self, source: PythonEnv, section: dict[str, Any]) -> dict[str, Any]:
        """A bandit given in Python is the run's one bandit: the section names it (its
        ``name``, else the class or function's) and holds no tables."""
        given = [key for key in (*BANDIT_TABLES, "entrypoint") if section.get(key) is not None]
        if given:
            raise TrainerError(
                f"environment.{given[0]}: env= gives the bandit, and its tables with it: "
                "give the tables or env=, not both"
            )
        return {**section, "name": getattr(source.instance, "name", None) or source.label}

    def work(self, ctx: RunContext) -> list[Work]:
        """An RL run's, each evaluation ``training.eval_steps`` greedy pulls
        (:data:`~agilerl.families.bandits.loop.EVAL_STEPS` where unset): no episode ends."""
        pulls = ctx.training.eval_steps or EVAL_STEPS
        return rl_work(ctx, Factor("training.eval_steps", pulls, EVAL_STEPS))

    def make_env(self, ctx: RunContext) -> BanditEnv:
        """The bandit given in Python, else that of the environment section (its entry
        point or its tables); a bad table, or none, is a
        :class:`~agilerl.training.errors.TrainerError` naming the file and row, or the
        field."""
        if ctx.env_source is not None:
            return _given_bandit(ctx.env_source)
        try:
            return make_bandit(ctx.environment, ctx.base_dir)
        except (BanditTableError, EnvironmentSpecError) as err:
            raise TrainerError(str(err)) from None

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        """One arm's context space, the arms, the network section and the agent's seed."""
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "net_config": ctx.network,
            "seed": seed,
        }

    def turns(self, ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
        return loop.run_turns(ctx, env, memory, population)

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate:
        return check_bandit_run(ctx, self, available)

    def make_memory(self, ctx: RunContext) -> Memory:
        """The population's shared memory of pulls (``replay_buffer.max_size`` of them)."""
        return self.replay_memory(
            ctx.replay_buffer or ReplayBufferSpec(), ctx.algorithm, ctx.device
        )

    def replay_memory(self, spec: Any, algorithm: Any, device: Any) -> Memory:
        return Memory(BanditMemory(spec.max_size, device=device))

    def evolved_network(self, best: Any) -> dict[str, Any]:
        return evolved_mlp_network(best)

    def written_manifest(self, ctx: RunContext, doc: dict[str, Any]) -> None:
        """The tables' paths made absolute: they were relative to the original manifest."""
        _absolute_tables(doc["environment"], ctx.base_dir)

    def recorded_environment(self, environment: Any, base_dir: Path) -> dict[str, Any]:
        """The section with absolute table paths, so the agent file is evaluated from
        anywhere."""
        return _absolute_tables(super().recorded_environment(environment, base_dir), base_dir)

    # -- evaluating a saved agent ---------------------------------------------------------
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
        """Rounds of ``max_episode_steps`` (default 500) pulls on the recorded tables
        (relative paths from the working directory), greedy unless ``deterministic`` is
        False: each round an "episode" from seed ``seed + i``, its return the round's
        reward rate (as the run's fitness)."""
        check_counts(episodes, max_episode_steps)
        no_video(video, "a contextual bandit")
        spec = self.evaluation_environment(environment, agent)
        try:
            env = make_bandit(spec)
        except (BanditTableError, EnvironmentSpecError) as err:
            raise EvaluationError(str(err)) from None
        check_spaces(agent, env, spec.name)
        pulls = 500 if max_episode_steps is None else max_episode_steps
        returns = []
        with contextlib.nullcontext() if deterministic else seeded_sampling(agent, seed):
            for episode in range(episodes):
                contexts = env.reset(seed=seed + episode)
                total = 0.0
                for _ in range(pulls):
                    contexts, reward = env.step(agent.predict(contexts, deterministic))
                    total += reward
                returns.append(total / pulls)
        return EvaluationResult(returns, [pulls] * episodes, seed, deterministic, spec.name)


def make_bandit(spec: Any, base_dir: str | Path = ".") -> BanditEnv:
    """The bandit of an environment section: what its entry point returns (called with
    ``config``), or the bandit of its tables (relative paths from ``base_dir``, the
    manifest's folder). A section with neither, or both, is refused
    (:func:`~agilerl.models.env.missing_bandit_tables`), as is a table that cannot make
    a bandit (:class:`BanditTableError`, naming the file and row) or an entry point that
    fails, returns anything else or a bandit of one label (:class:`EnvironmentSpecError`;
    :func:`~agilerl.families.bandits.env.one_arm`, the tables' own check)."""
    missing = missing_bandit_tables(spec)
    if missing:
        raise EnvironmentSpecError(missing)
    if spec.entrypoint is None:
        try:
            return BanditEnv.from_spec(spec, base_dir)
        except BanditTableError as err:
            raise BanditTableError(f"environment: {err}") from None
    where = "environment.entrypoint"
    factory = import_target(spec.entrypoint, where, spec.path)
    env = call_factory(factory, (), spec.config or {}, where, spec.entrypoint, "environment.config")
    if not isinstance(env, BanditEnv):
        raise EnvironmentSpecError(
            f"{where}: {spec.entrypoint} returned a {type(env).__name__}, not a BanditEnv "
            "(agilerl.families.bandits.BanditEnv(features, targets))"
        )
    refusal = one_arm(env.arms)
    if refusal is not None:
        raise EnvironmentSpecError(f"{where}: {spec.entrypoint}: {refusal}")
    return env


def _given_bandit(source: PythonEnv) -> BanditEnv:
    """The bandit of ``env=``: an object, or what a factory makes (called once); one of
    one label is refused as its tables would be (:func:`~agilerl.families.bandits.env.one_arm`)."""
    try:
        env = source.factory()
    except BanditTableError as err:
        raise TrainerError(f"env: {err}") from None
    if not isinstance(env, BanditEnv):
        raise TrainerError(
            f"env: {source.label} gave a {type(env).__name__}; a contextual bandit run takes "
            "a BanditEnv (agilerl.families.bandits.env.BanditEnv(features, targets))"
        )
    refusal = one_arm(env.arms)
    if refusal is not None:
        raise TrainerError(f"env: {source.label}: {refusal}")
    return env


def _absolute_tables(document: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """``document`` (an environment section) with its tables' paths made absolute."""
    for key in BANDIT_TABLES:
        if document.get(key) is not None:
            document[key] = str((Path(base_dir) / document[key]).resolve())
    return document
