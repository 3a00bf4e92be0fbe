"""What :meth:`AlgorithmSpec.get_training_kwargs <agilerl.models.base.AlgorithmBase.get_training_kwargs>`
returns: the keyword arguments of an algorithm's AgileRL-named training function
(``train_off_policy(env, env_name, algo, pop, memory, **kwargs)``, ...), read from the
specs, for users who call those functions the AgileRL way.

The trainer does not read them: it runs :func:`~agilerl.training.evolution.evolve` with
the family's turns and :meth:`RunConfig.of <agilerl.training.evolution.RunConfig.of>`.
The spec layer looks this module up by name (it imports no engine module).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agilerl.models.kinds import AgentType


@dataclass(frozen=True)
class Sources:
    """What the keywords are read from: ``get_training_kwargs``'s arguments."""

    spec: Any
    training: Any
    env_spec: Any
    memory: Any
    n_step_memory: Any


def _given(**values: Any) -> dict[str, Any]:
    """``values`` without those that are None (keywords left to the function's default)."""
    return {name: value for name, value in values.items() if value is not None}


def _optional(source: Any, *names: str) -> dict[str, Any]:
    """The attributes ``names`` of ``source`` that it has and sets (an older training
    object may lack one: the function's default stands)."""
    return _given(**{name: getattr(source, name, None) for name in names})


def run(s: Sources) -> dict[str, Any]:
    """What every RL training function is told: the run's names, evaluation, checkpoints."""
    t = s.training
    return {
        "env_name": s.env_spec.name,
        "algo": s.spec.name,
        "eval_steps": t.eval_steps,
        "eval_loop": t.eval_loop,
        "target": t.target_score,
        "checkpoint": t.checkpoint_steps,
        "checkpoint_path": t.checkpoint_path,
        "overwrite_checkpoints": t.overwrite_checkpoints,
    }


def memory(s: Sources) -> dict[str, Any]:
    """The replay buffer (off-policy, offline and bandit functions)."""
    return {"memory": s.memory}


def off_policy(s: Sources) -> dict[str, Any]:
    """When learning starts, epsilon-greedy exploration where the training section sets
    it, the n-step buffer beside a prioritised one."""
    return {
        "learning_delay": s.training.learning_delay,
        **_optional(s.training, "eps_start", "eps_end", "eps_decay"),
        **_given(n_step_memory=s.n_step_memory),
    }


def warmup(s: Sources) -> dict[str, Any]:
    """How a single-agent off-policy agent acts before it learns."""
    return _optional(s.training, "warmup_actions")


def cohorts_flag(s: Sources) -> dict[str, Any]:
    """Whether agents that share an architecture train as cohorts."""
    return _optional(s.training, "cohorts")


def cohorts(s: Sources) -> dict[str, Any]:
    """The environment section (what a cohort copies) and the flag."""
    return {"env_spec": s.env_spec, **cohorts_flag(s)}


def bandit(s: Sources) -> dict[str, Any]:
    """A contextual bandit's episode length."""
    return {"episode_steps": s.training.episode_steps}


def multi_agent(s: Sources) -> dict[str, Any]:
    """How a team's episode is scored."""
    return {"sum_scores": s.training.sum_scores}


def llm(s: Sources) -> dict[str, Any]:
    """An LLM fine-tuning function: its evaluation interval; the rest only where set."""
    return {
        "evaluation_interval": s.training.evaluation_interval,
        **_optional(s.env_spec, "max_reward"),
        **_optional(s.training, "checkpoint_steps", "checkpoint_path", "num_epochs"),
    }


Part = Callable[[Sources], dict[str, Any]]

#: (agent type, the algorithm's ``off_policy``) -> the parts of its keywords, in order;
#: None: an algorithm spec of no kind (the bare ``AlgorithmSpec``).
KEYWORDS: dict[tuple[AgentType | None, bool], tuple[Part, ...]] = {
    (AgentType.SingleAgent, False): (run, cohorts),
    (AgentType.SingleAgent, True): (run, memory, off_policy, warmup, cohorts),
    (AgentType.MultiAgent, False): (run, multi_agent, cohorts),
    (AgentType.MultiAgent, True): (run, memory, off_policy, multi_agent, cohorts),
    (AgentType.OfflineAgent, False): (run, memory, cohorts_flag),
    (AgentType.OfflineAgent, True): (run, memory, off_policy, cohorts_flag),
    (AgentType.BanditAgent, False): (run, memory, bandit),
    (AgentType.BanditAgent, True): (run, memory, off_policy, bandit),
    (AgentType.LLMAgent, False): (llm,),
    (AgentType.LLMAgent, True): (llm,),
    (None, False): (run,),
    (None, True): (run, memory, off_policy),
}


def training_kwargs(
    spec: Any, *, training: Any, env_spec: Any, memory: Any = None, n_step_memory: Any = None
) -> dict[str, Any]:
    """The keyword arguments of ``spec``'s training function (see the module docstring)."""
    sources = Sources(spec, training, env_spec, memory, n_step_memory)
    found: dict[str, Any] = {}
    for part in KEYWORDS[(spec.agent_type, bool(spec.off_policy))]:
        found.update(part(sources))
    return found
