"""``Family``: how the trainer sets up and runs the algorithms of one agent type.

A family (single-agent online, multi-agent, LLM, offline, bandit) is one package under
:mod:`agilerl.families` and one line in :data:`agilerl.families.FAMILY_CLASSES`. The trainer
(:class:`~agilerl.trainer.LocalTrainer`) knows no agent type: it makes a
:class:`~agilerl.families.context.RunContext` from its manifest and asks the family of
its algorithm for the environment, the agents' construction arguments, the memory, the
pre-flight, the training turns (:meth:`Family.turns`) and what the run writes, and runs
the shared generation loop, :func:`~agilerl.training.evolution.evolve`, with them. The
AgileRL-named training functions (``get_training_fn()``: ``train_off_policy``, ...) are
façades for users calling them directly; they build their turns through the same code.

To add a family, write a subclass that sets :attr:`Family.agent_type` and
:attr:`Family.title` and implements the abstract methods (:meth:`make_env`,
:meth:`build_args`, :meth:`turns`, :meth:`preflight`); override the others where the
family differs from the defaults (a family with a replay memory overrides
:meth:`make_memory`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol

from agilerl.families.context import RunContext
from agilerl.families.evaluation import EvaluationError, EvaluationResult
from agilerl.families.python_env import PythonEnv
from agilerl.guards.manifest_code import anchored
from agilerl.models.base import AgentType
from agilerl.models.manifest import NetworkSection
from agilerl.training.errors import TrainerError
from agilerl.training.evolution import Turns
from agilerl.training.preflight import Estimate
from agilerl.training.work import Work, rl_work


class Memory(NamedTuple):
    """What a run stores experience in: the replay buffer and the n-step buffer filled
    beside it (each None where the run uses none)."""

    replay: Any = None
    n_step: Any = None


@dataclass(frozen=True)
class Output:
    """A file a family's run writes beside the common outputs."""

    #: Its name in the output directory.
    name: str
    #: (best agent, path) -> writes it there.
    write: Callable[[Any, Path], Any]


class AgentLoader(Protocol):
    """What rebuilds a saved agent of the run (a run checkpoint's): an algorithm class,
    or an object with the same ``from_state_dict``."""

    def from_state_dict(self, state: Any, device: Any = ..., where: str = ...) -> Any: ...


class HasParameters(Protocol):
    """What the thread choice measures: anything with ``network_parameters()``."""

    def network_parameters(self) -> Any: ...


class Family(ABC):
    """How the trainer runs the algorithms of one agent type (see the module docstring)."""

    #: The agent type whose algorithms this family runs (its key in ``FAMILIES``).
    agent_type: ClassVar[AgentType]
    #: What the family is called in messages.
    title: ClassVar[str]
    #: What fitness and training scores measure (the fitness plot's axes).
    measure: ClassVar[str] = "mean return"
    #: What one of ``training.max_steps`` is (the fitness plot's x-axis counts them per
    #: agent): an environment step, an LLM run's batch, an offline run's update.
    step_unit: ClassVar[str] = "environment steps"
    #: Whether run checkpoints save the environment's position (``env.state_dict()``):
    #: true where a resumed run cannot regain it from seeds (an LLM run's datasets).
    saves_env_position: ClassVar[bool] = False
    #: Whether a run on several processes splits the population among them (each rank
    #: trains its own agents); False: every rank trains every agent on its share of each
    #: batch (the LLM family's data-parallel fine-tuning).
    shards_population: ClassVar[bool] = True
    #: Outputs beside the common ones: kind -> the file and its writer.
    outputs: ClassVar[Mapping[str, Output]] = {}
    #: The spec class of the manifest's ``network`` section.
    network_spec: ClassVar[type] = NetworkSection
    #: The environment spec a saved agent of the family is evaluated on (None: the family
    #: evaluates on no environment; :meth:`cannot_evaluate` says what to do instead).
    evaluation_spec: ClassVar[type | None] = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"  # stateless: one per agent type

    # -- the run's pieces ----------------------------------------------------------------
    def python_env_section(self, source: PythonEnv, section: dict[str, Any]) -> dict[str, Any]:
        """The environment section of a run on an environment given in Python
        (``LocalTrainer(env=...)``, :mod:`agilerl.families.python_env`): ``section``, as
        given, completed for ``source``. A family whose environments come from the section
        alone refuses one (:class:`~agilerl.training.errors.TrainerError`)."""
        raise TrainerError(
            f"env: a {self.title} run takes its environment from the environment section, "
            "not a Python object"
        )

    @abstractmethod
    def make_env(self, ctx: RunContext) -> Any:
        """The environment the run trains and evaluates on."""

    @abstractmethod
    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        """The runtime arguments the spec's ``build_algorithm`` takes for one agent."""

    @abstractmethod
    def turns(self, ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
        """How the run's agents (``population``) train and are evaluated on ``env``
        (:meth:`make_env`'s), with ``memory`` (:meth:`make_memory`'s), each generation
        of :func:`~agilerl.training.evolution.evolve`; whether they may train as cohorts
        is the turns' :class:`~agilerl.training.cohorting.Cohorting`."""

    def target(self, ctx: RunContext) -> float | None:
        """The fitness that ends the run once an agent reaches it: ``training.target_score``."""
        return ctx.training.target_score

    @abstractmethod
    def preflight(self, ctx: RunContext, available: int | None) -> Estimate | None:
        """The family's own checks before the first step (raise
        :class:`~agilerl.training.preflight.PreflightError` naming the field); returns
        the run's memory estimate where it makes one (``available``: bytes to fit in,
        None for what this machine has free)."""

    def work(self, ctx: RunContext) -> list[Work]:
        """What the run does, as products of the counts that decide it (bounded by the
        pre-flight before anything is built): an RL run's by default."""
        return rl_work(ctx)

    def spec_fields(self, ctx: RunContext) -> dict[str, Any]:
        """Algorithm spec fields the run fills in from other sections."""
        return {}

    def make_memory(self, ctx: RunContext) -> Memory:
        """The run's experience storage (none by default)."""
        return Memory()

    def replay_memory(self, spec: Any, algorithm: Any, device: Any) -> Memory:
        """The empty buffers a ``replay_buffer`` section (``spec``) describes for
        ``algorithm`` (its spec) of this family (none by default): what
        :meth:`ReplayBufferSpec.init_buffer <agilerl.models.replay_base.ReplayBufferBase.init_buffer>`
        returns, and what :meth:`make_memory` makes where the section is all it needs."""
        return Memory()

    def env_name(self, environment: Any) -> str:
        """What runs, checkpoints and plots call the environment."""
        return environment.name

    def env_workers(self, ctx: RunContext, env: Any) -> int:
        """Worker processes the environment runs (for the thread choice)."""
        return 0

    def computes(self, ctx: RunContext, agent: Any) -> HasParameters:
        """What an agent's forward passes run, for the thread choice."""
        return agent

    def close_env(self, env: Any) -> None:
        """Release the environment at the end of the run."""
        env.close()

    def agent_loader(self, ctx: RunContext, env: Any) -> AgentLoader:
        """What rebuilds a saved agent of this run (``from_state_dict``)."""
        return ctx.algorithm.algo_class()

    def recorded_environment(self, environment: Any, base_dir: Path) -> dict[str, Any]:
        """The environment section an agent of the run records (``agent.environment``,
        what ``agilerl evaluate`` rebuilds it from): the section as given by default, its
        code's folder absolute (:func:`~agilerl.guards.manifest_code.anchored`: ``base_dir`` is the
        manifest's folder) so that it is found from anywhere."""
        return anchored(environment, base_dir).model_dump(mode="json", exclude_none=True)

    # -- evaluating a saved agent ------------------------------------------------------------
    def cannot_evaluate(self, agent: Any) -> str:
        """Why an agent of this family has no environment to be evaluated on, and what to
        do instead (the families that evaluate declare :attr:`evaluation_spec`)."""
        return f"no episodes of an environment measure a {self.title} agent"

    def evaluation_environment(self, environment: Any, agent: Any) -> Any:
        """The family's environment spec to evaluate ``agent`` on, from the environment
        section it records (a mapping; pydantic's ``ValidationError`` where it is not
        one) or a spec already; :class:`EvaluationError` where the family evaluates on no
        environment."""
        spec = self.evaluation_spec
        if spec is None:
            raise EvaluationError(
                f"{agent.name} ({self.title}) cannot be evaluated on an environment: "
                f"{self.cannot_evaluate(agent)}"
            )
        return environment if isinstance(environment, spec) else spec.model_validate(environment)

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
        """Seeded episodes of ``agent`` (a saved agent of this family) on ``environment``
        (see :meth:`evaluation_environment`): episode ``i`` from seed ``seed + i``,
        ``max_episode_steps`` cutting longer ones, ``video`` recording the first where the
        family records videos. Refused (:class:`EvaluationError`) by default."""
        self.evaluation_environment(environment, agent)
        raise EvaluationError(f"{agent.name}: the {self.title} family evaluates no agent")

    # -- what the run writes ---------------------------------------------------------------
    def evolved_network(self, best: Any) -> dict[str, Any] | None:
        """The best agent's network section as evolved (None: the manifest's stands)."""
        return None

    def written_manifest(self, ctx: RunContext, doc: dict[str, Any]) -> None:
        """The family's changes to the manifest the run writes (in place): none by
        default."""
        return None


def vector_workers(ctx: RunContext, env: Any) -> int:
    """Worker processes of a vectorised environment: none when it steps in this process
    (``environment.sync``), one per copy otherwise."""
    return 0 if ctx.environment.sync else env.num_envs


def evolved_mlp_network(best: Any) -> dict[str, Any]:
    """The best agent's policy network as a manifest network section."""
    network = best.policy.spec.model_dump(mode="json", exclude_none=True)
    encoder = dict(network.pop("encoder_config"))
    network["arch"] = encoder.pop("arch")
    network["encoder_config"] = encoder
    network["head_config"].pop("arch", None)
    return network
