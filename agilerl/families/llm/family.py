"""The LLM fine-tuning family (GRPO, DPO, SFT): a population of LoRA adapters on one
shared base model, trained on local datasets by :mod:`.loop`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agilerl.families.base import AgentLoader, Family, HasParameters, Memory, Output
from agilerl.families.context import RunContext
from agilerl.families.llm import loop, setup
from agilerl.families.llm.preflight import check_llm_run
from agilerl.families.llm.sizing import llm_work
from agilerl.models.base import AgentType, spec_class
from agilerl.training.evolution import Turns
from agilerl.training.preflight import Estimate
from agilerl.training.work import Work


class LLMFamily(Family):
    agent_type = AgentType.LLMAgent
    title = "LLM fine-tuning"
    measure = "score: reward, accuracy or 1/perplexity"
    step_unit = "training batches"
    saves_env_position = True
    shards_population = False
    # The best agent's peft adapter directory, tokenizer beside it.
    outputs = {"adapter": Output("best_adapter", lambda best, path: best.save_adapter(path))}
    network_spec = spec_class("FinetuningNetworkSpec")

    def turns(self, ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
        return loop.run_turns(ctx, env, memory, population)

    def target(self, ctx: RunContext) -> float | None:
        """``training.target_score``, else the best reward a completion can earn
        (``environment.max_reward``, a reasoning section's, where given)."""
        target = ctx.training.target_score
        return target if target is not None else getattr(ctx.environment, "max_reward", None)

    def make_env(self, ctx: RunContext) -> Any:
        return setup.make_llm_env(ctx)

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        return setup.llm_build_args(ctx, env, seed)

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate | None:
        return check_llm_run(ctx, self, available)

    def work(self, ctx: RunContext) -> list[Work]:
        return llm_work(ctx)

    def spec_fields(self, ctx: RunContext) -> dict[str, Any]:
        return setup.llm_spec_fields(ctx)

    def env_name(self, environment: Any) -> str:
        # the dataset's file name, or a multi-turn entry point's class or factory
        # (``pkg.mod:Name`` -> Name): LLMEnvSpec.name is whichever the section gives
        return Path(environment.name.replace(":", "/")).stem

    def computes(self, ctx: RunContext, agent: Any) -> HasParameters:
        return setup.BaseCompute(ctx, agent)

    def close_env(self, env: Any) -> None:
        """Datasets in memory: nothing to release."""

    def agent_loader(self, ctx: RunContext, env: Any) -> AgentLoader:
        return setup.SharedBaseLoader(ctx, env)

    def cannot_evaluate(self, agent: Any) -> str:
        return (
            "an LLM agent is scored on its dataset's test split by `agilerl train` (the "
            "fitness in the run's history.json), and its fine-tuned LoRA adapter is the "
            "run's best_adapter/ directory (load it with peft onto the base model)"
        )

    def written_manifest(self, ctx: RunContext, doc: dict[str, Any]) -> None:
        setup.llm_written_manifest(ctx, doc)
