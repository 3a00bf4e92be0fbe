"""``LocalTrainer``: a manifest (or its specs) in, a trained population out.

The trainer knows no agent type. It resolves the manifest's specs into a
:class:`~agilerl.families.context.RunContext` and asks the family of its algorithm
(:data:`agilerl.families.FAMILIES`) for the environment, the agents' construction
arguments, the memory and the pre-flight; it builds the population (every agent through
its spec's ``build_algorithm``), the selection and mutation operators, the checkpointer
and the tracking, then runs :func:`~agilerl.training.evolution.evolve` with the family's
turns (:meth:`Family.turns <agilerl.families.base.Family.turns>`) and the run's
:meth:`RunConfig.of <agilerl.training.evolution.RunConfig.of>`. Every argument it accepts takes effect;
``resume_from_checkpoint`` continues a run from its last run checkpoint
(:mod:`agilerl.training.run_checkpoint`).
"""

from __future__ import annotations

import json
import random
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import ValidationError

from agilerl.distributed import Group, join, leave
from agilerl.families import family_for
from agilerl.families.base import Memory
from agilerl.families.context import RunContext
from agilerl.families.python_env import PythonEnv
from agilerl.files.atomic import DirectoryLock, OutputError, clean_stale_temporaries, write_text
from agilerl.files.checkpoints import CheckpointError
from agilerl.guards.manifest_code import anchored
from agilerl.hpo.limits import operator_problems
from agilerl.models.hpo import SELECTION_SPECS, MutationSpec, TournamentSelectionSpec
from agilerl.models.manifest import (
    TrainingManifest,
    dump_manifest,
    load_manifest,
    manifest_document,
    manifest_rule_issues,
    parse_manifest,
)
from agilerl.models.manifest_base import environment_spec_for
from agilerl.models.registry import ALGO_REGISTRY
from agilerl.models.training import ReplayBufferSpec, TrainingSpec
from agilerl.training.callbacks import Callback
from agilerl.training.errors import DivergedError, TrainerError
from agilerl.training.evolution import RunConfig, evolve, next_generation
from agilerl.training.finite import json_safe
from agilerl.training.preflight import Estimate, PreflightError, check_outputs
from agilerl.training.report import describe_best
from agilerl.training.run_checkpoint import (
    checkpointer_for,
    load_run,
    manifest_differences,
    restore,
    save_population,
)
from agilerl.training.run_directory import (
    OUTPUT_NAMES,
    EarlierRunError,
    earlier_outputs,
    remove_earlier_outputs,
)
from agilerl.training.state import RunState, still_finished
from agilerl.training.threads import (
    apply_threads,
    requested_threads,
    restored_threads,
    single_thread,
)
from agilerl.training.tracking import Reporter
from agilerl.training.work import check_work

__all__ = ["LocalTrainer", "TrainerError"]


def _not_written(err: OSError, path: Path) -> str:
    if isinstance(err, OutputError):  # agilerl.files.atomic already said which file and why
        return str(err)
    return f"{path}: cannot write ({err.strerror or err}); the previous file is unchanged"


class _CheckpointFailed(Exception):
    """A run checkpoint could not be written: the run stops with this population."""

    def __init__(self, message: str, population: list[Any]) -> None:
        super().__init__(message)
        self.population = population


class _StopOnFailedCheckpoint:
    """The run's checkpointer, turning a failed write (a full disk) into
    :class:`_CheckpointFailed`, which carries the population the checkpoint was to hold
    (the evaluated agents; with elitism the best of them unchanged in slot 0)."""

    def __init__(self, checkpointer: Any) -> None:
        self.checkpointer = checkpointer

    def due(self, state: RunState) -> bool:
        return self.checkpointer.due(state)

    def write(self, population: list[Any], state: RunState) -> Path:
        try:
            return self.checkpointer.write(population, state)
        except OSError as err:
            raise _CheckpointFailed(_not_written(err, self.checkpointer.path), population) from None


def _checkpoint_kept(checkpointer: _StopOnFailedCheckpoint | None) -> str:
    """What a run that stopped early leaves to resume from."""
    if checkpointer is None:
        return "the run writes no checkpoint"
    path = checkpointer.checkpointer.path
    if path.exists():
        return f"its last checkpoint, {path}, holds the generations before, unchanged"
    return f"no checkpoint had been written yet ({path})"


def _spec(value: Any, cls: type, section: str) -> Any:
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, dict):
        try:
            return cls.model_validate(value)
        except ValidationError as err:  # named by the section, as a manifest's would be
            raise TrainerError(_located(err, section)) from None
    raise TrainerError(f"{section}: expected a {cls.__name__} or a mapping, got {value!r}")


def _selection_spec_class(value: Any) -> type:
    """The spec class of a selection section, by its ``strategy`` (tournament where a
    mapping has none)."""
    if not isinstance(value, dict):
        known = tuple(SELECTION_SPECS.values())
        return type(value) if isinstance(value, known) else TournamentSelectionSpec
    strategy = value.get("strategy", "tournament")
    if strategy not in SELECTION_SPECS:
        raise TrainerError(
            f"selection_strategy.strategy: {strategy!r} is not a selection strategy; known: "
            f"{', '.join(SELECTION_SPECS)}"
        )
    return SELECTION_SPECS[strategy]


def _located(err: ValidationError, section: str) -> str:
    """pydantic's errors of one section, each at its dotted path in the manifest."""
    return "; ".join(
        f"{'.'.join(map(str, (section, *e['loc'])))}: {e['msg']}" for e in err.errors()
    )


def _refuse_broken_rules(sections: dict[str, Any]) -> None:
    """A run put together in Python meets the manifest's own cross-section rules (PPO's
    ``num_envs`` written twice and differing, ``network.simba`` that the chosen encoder
    would ignore, ...) exactly as a manifest file does: one table of rules, checked by
    ``agilerl validate``, by :func:`load_manifest` and here."""
    issues = manifest_rule_issues(sections)
    if issues:
        raise TrainerError("; ".join(issue.format() for issue in issues))


def spec_class(name: str) -> type:
    """The spec class of registered algorithm ``name``; an unknown name is a
    :class:`TrainerError` listing the known ones."""
    if name not in ALGO_REGISTRY:
        raise TrainerError(f"algorithm: {ALGO_REGISTRY.not_registered(name)}")
    return ALGO_REGISTRY.get(name).spec_cls


def _python_env_section(source: PythonEnv, environment: Any, family: Any) -> dict[str, Any]:
    """The environment section of a run on an environment given in Python: the section
    given (a mapping or spec: ``num_envs``, ``vectorize``, ``wrappers``, ...) as the
    family completes it for ``source`` (:meth:`Family.python_env_section`)."""
    if isinstance(environment, str):
        raise TrainerError(
            f"environment: {environment!r} names an environment and env= gives one: give one"
        )
    section = dict(
        environment.model_dump(exclude_unset=True)
        if hasattr(environment, "model_dump")
        else environment or {}
    )
    return family.python_env_section(source, section)


@dataclass
class _Carried:
    """A finished run as a next ``train()`` continues it: what a run checkpoint holds."""

    population: list[Any]
    state: RunState
    memory: Any
    n_step_memory: Any
    selection: Any
    mutation: Any


class LocalTrainer:
    """Train a population on this machine.

    Args:
        algorithm: an algorithm spec (``DQNSpec(...)``) or a registered name.
        environment: a :class:`GymEnvSpec`, a mapping of one, or a Gymnasium id.
        training: budget, evaluation, checkpoints, seed (default ``TrainingSpec()``).
        mutation: the mutation operator's spec; evolution runs when it and
            ``selection_strategy`` are both present and ``training.hpo`` is true.
        selection_strategy: the selection operator's spec (``TournamentSelectionSpec``,
            ``MultiFrequencySelectionSpec``, or a mapping with its ``strategy``).
        replay_buffer: off-policy buffer spec (default capacity 100,000).
        network: the manifest's network section (None: inferred from the observation
            space).
        hpo: fill in default mutation and tournament specs for those not given.
        resume_from_checkpoint: a run checkpoint to continue from.
        device: where the agents live.
        accelerator: an accelerator, which then supplies the device (distributed RL
            training is not implemented).
        num_threads: torch's CPU threads for the run (None: the rule of
            :mod:`agilerl.training.threads`, one thread for small agents on the CPU).
        base_dir: the directory relative paths of the manifest resolve against (an LLM
            run's model, dataset and reward file); :meth:`from_manifest` gives a manifest
            file's own directory; default the working directory.
    """

    def __init__(
        self,
        algorithm: Any,
        environment: Any = None,
        training: Any = None,
        mutation: Any = None,
        selection_strategy: Any = None,
        replay_buffer: Any = None,
        *,
        network: Any = None,
        hpo: bool = False,
        resume_from_checkpoint: str | Path | None = None,
        device: str | torch.device = "cpu",
        accelerator: Any = None,
        version: int | None = None,
        num_threads: int | None = None,
        base_dir: str | Path | None = None,
        env: Any = None,
    ) -> None:
        if isinstance(algorithm, str):
            algorithm = spec_class(algorithm)()
        #: The agent family that sets up the run (refused here if none runs it).
        self.family = family_for(algorithm)
        self.algorithm = algorithm
        env_spec = environment_spec_for(type(algorithm))
        #: The environment given in Python (``env=``), None for a named one.
        self.env_source = None if env is None else PythonEnv.of(env)
        if self.env_source is not None:
            environment = _python_env_section(self.env_source, environment, self.family)
        elif environment is None:
            raise TrainerError("environment: give a Gymnasium id, a spec or a mapping, or env=")
        if isinstance(environment, str):
            environment = env_spec(name=environment)
        self.environment = _spec(environment, env_spec, "environment")
        self.training = _spec(training, TrainingSpec, "training") or TrainingSpec()
        self.mutation = _spec(mutation, MutationSpec, "mutation")
        self.selection_strategy = _spec(
            selection_strategy, _selection_spec_class(selection_strategy), "selection_strategy"
        )
        if hpo:
            self.mutation = self.mutation or MutationSpec()
            self.selection_strategy = self.selection_strategy or TournamentSelectionSpec()
        self.replay_buffer = _spec(replay_buffer, ReplayBufferSpec, "replay_buffer")
        self.network = _spec(network, self.family.network_spec, "network")
        _refuse_broken_rules(
            {
                "algorithm": algorithm,
                # The environment as it will run, defaults included (16 environments
                # unless told), against which an algorithm's own written num_envs is held.
                "environment": self.environment.model_dump(),
                "training": self.training,
                "mutation": self.mutation,
                "selection_strategy": self.selection_strategy,
                "replay_buffer": self.replay_buffer,
                "network": self.network,
            }
        )
        if self.evolving:  # the operators will run: their settings must be usable
            assert self.mutation is not None and self.selection_strategy is not None
            problems = operator_problems(
                self.mutation, self.selection_strategy, self.training.pop_size
            )
            if problems:
                raise TrainerError("; ".join(problems))
        self.base_dir = Path(base_dir) if base_dir is not None else Path()
        # An entry point's file is looked up from the manifest's folder, as its other paths
        # are, and kept absolute: the run's environments, its agents' files and the
        # manifest it writes (in the run's folder, away from the code) then build from
        # any working directory.
        self.environment = anchored(self.environment, self.base_dir)
        self.version = version
        self.resume_from_checkpoint = resume_from_checkpoint
        self.accelerator = accelerator
        self.device = torch.device(accelerator.device if accelerator is not None else device)
        self.num_threads = num_threads
        #: torch's CPU thread count during the last run (:mod:`agilerl.training.threads`).
        self.threads: int | None = None
        self.population: list[Any] | None = None
        self.state: RunState | None = None
        #: What the family loads once per run (RunContext.cache): kept across contexts.
        self._family_cache: dict[str, Any] = {}
        #: The steps per agent each train() call trains (training.max_steps as given).
        self._budget = self.training.max_steps
        #: The run a next train() continues (set when one ends).
        self._carried: _Carried | None = None

    def __repr__(self) -> str:
        """``LocalTrainer(algorithm='PPO', env='CartPole-v1', pop_size=4,
        max_steps=20480, hpo=True, device='cpu')``, and ``steps=...``, the steps per
        agent done, once it has trained."""
        fields = {
            "algorithm": repr(self.algorithm.name),
            "env": repr(self.env_name),
            "pop_size": self.training.pop_size,
            "max_steps": self.training.max_steps,
            "hpo": self.evolving,
            "device": repr(str(self.device)),
        }
        if self.state is not None:
            fields["steps"] = self.state.steps
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in fields.items())})"

    @classmethod
    def from_manifest(cls, manifest: Any, **kwargs: Any) -> LocalTrainer:
        """From a manifest file, a manifest document (dict) or a :class:`TrainingManifest`;
        ``kwargs`` (device, resume_from_checkpoint, hpo, accelerator) are passed on."""
        if isinstance(manifest, (str, Path)):
            kwargs.setdefault("base_dir", Path(manifest).parent)
            manifest = load_manifest(manifest)
        elif isinstance(manifest, dict):
            manifest = parse_manifest(manifest)
        if not isinstance(manifest, TrainingManifest):
            raise TypeError(
                f"expected a manifest path, document or TrainingManifest, got {manifest!r}"
            )
        return cls(
            manifest.algorithm,
            manifest.environment,
            manifest.training,
            manifest.mutation,
            manifest.selection_strategy,
            manifest.replay_buffer,
            network=manifest.network,
            version=getattr(manifest, "version", None),
            **kwargs,
        )

    # -- building -------------------------------------------------------------------------
    @property
    def evolving(self) -> bool:
        return bool(self.training.hpo and self.mutation and self.selection_strategy)

    @property
    def context(self) -> RunContext:
        """The run as the family sees it: the specs as they stand now (the seed a run
        draws, the checkpoint settings ``train`` receives), the device and a
        ``build_agent`` that builds through the spec's ``build_algorithm``."""
        return RunContext(
            algorithm=self.algorithm,
            environment=self.environment,
            training=self.training,
            network=self.network,
            mutation=self.mutation,
            selection_strategy=self.selection_strategy,
            replay_buffer=self.replay_buffer,
            device=self.device,
            accelerator=self.accelerator,
            base_dir=self.base_dir,
            evolving=self.evolving,
            build_agent=self._build_agent,
            cache=self._family_cache,
            env_source=self.env_source,
        )

    @property
    def env_name(self) -> str:
        """What the run calls its environment (a Gymnasium id, an LLM dataset's name)."""
        return self.family.env_name(self.environment)

    def preflight(
        self, output_dir: str | Path | None = None, available: int | None = None
    ) -> Estimate | None:
        """Check that this run can go here, before anything is built for it: the output
        and checkpoint paths, the tracking backends, the thread count asked for (at most
        the cores this process may use), the work the run asks for
        (:func:`~agilerl.training.work.check_work`), then the family's own checks (the
        settings it cannot honour, its data, the memory the run allocates against
        ``available`` bytes, default what this machine has free). Returns the memory
        estimate where the family makes one; raises
        :class:`~agilerl.training.preflight.PreflightError` naming the field (an
        environment or agent that cannot be built raises its own clear error:
        ``EnvironmentSpecError``, ``TrainerError``)."""
        try:  # the thread count the user asked for, before anything uses it
            requested_threads(self.num_threads)
        except ValueError as err:
            raise PreflightError(str(err)) from None
        check_outputs(self.training, output_dir)
        check_work(self.family.work(self.context))
        return self.family.preflight(self.context, available)

    @property
    def evo_steps(self) -> int:
        return self.training.evo_steps or self.algorithm.default_evo_steps

    #: Whether this run drew its seed (the manifest left it null); a resume keeps the
    #: checkpoint's seed then.
    _seed_drawn = False

    def _seed(self, group: Group) -> int:
        seed = self.training.seed
        if seed is None:
            self._seed_drawn = True
            # Draw one and record it, so the manifest this run writes reproduces it; on
            # several processes rank 0's draw is every rank's (they must agree on it).
            seed = group.all_gather(secrets.randbelow(2**31))[0]
            self.training = self.training.model_copy(update={"seed": seed})
        return seed

    def _hp_config(self) -> Any:
        if self.algorithm.hp_config is not None:
            return self.algorithm.hp_config
        if self.mutation is not None and self.mutation.rl_hp_selection:
            return self.mutation.rl_hp_selection
        return None

    def _build_agent(
        self, env: Any, index: int, seed: int, *, device: torch.device | None = None
    ) -> Any:
        """One agent, built through the spec's ``build_algorithm`` (the one way an agent
        is built), with the run's mutable ranges and its environment's count; on
        ``device`` (without the accelerator) where given: the pre-flight builds on the
        meta device."""
        ctx = self.context
        update: dict[str, Any] = {"hp_config": self._hp_config(), **self.family.spec_fields(ctx)}
        if "num_envs" in type(self.algorithm).model_fields:  # the environment decides
            update["num_envs"] = env.num_envs
        spec = self.algorithm.model_copy(update=update)
        try:
            agent = spec.build_algorithm(
                **self.family.build_args(ctx, env, seed),
                index=index,
                device=self.device if device is None else device,
                accelerator=self.accelerator if device is None else None,
            )
        except (TypeError, ValueError) as err:
            field = str(err).partition(":")[0].split(".")[0]  # "normalize.observation: ..."
            if str(err).startswith("hp_config."):
                where = "mutation.rl_hp_selection"
            elif field in type(self.algorithm).model_fields:  # "torch_compiler: ..."
                where = "algorithm"
            else:
                where = "network"
            raise TrainerError(f"{where}: {err}") from err
        # Recorded in the agent's files: `agilerl evaluate AGENT.pt` rebuilds it from there
        # (nothing can rebuild an environment given in Python).
        agent.environment = (
            self.family.recorded_environment(self.environment, self.base_dir)
            if self.env_source is None
            else None
        )
        return agent

    def _operators(self, seed: int) -> tuple[Any, Any]:
        if not self.evolving:
            return None, None
        from agilerl.hpo import Mutations
        from agilerl.hpo.selections import selection_class

        mutation = Mutations.from_spec(self.mutation)
        if self.mutation.rand_seed is None:
            mutation.rng = np.random.default_rng([seed, 1])
        selection = selection_class(self.selection_strategy).from_spec(
            self.selection_strategy, self.training.pop_size, rand_seed=seed
        )
        return selection, mutation

    # -- running --------------------------------------------------------------------------
    def train(
        self,
        verbose: bool = True,
        output_dir: str | Path | None = None,
        checkpoint_path: str | Path | None = None,
        checkpoint_steps: int | None = None,
        overwrite_checkpoints: bool | None = None,
        *,
        resume: bool = False,
        force: bool = False,
        callbacks: Sequence[Callback] = (),
    ) -> tuple[list[Any], list[float]]:
        """Run (or resume) the training; returns ``(population, fitnesses)``.

        Called again on the same trainer, it continues the run it left (the population,
        run state, replay buffers and HPO operators as they are in memory, as a resumed
        run does) for another ``training.max_steps`` steps per agent: each call trains
        that budget, as Stable-Baselines3's ``learn`` does. ``callbacks``
        (:class:`~agilerl.training.callbacks.Callback`) are called at every evaluation
        and generation end; one may stop the run.

        Arguments given here override the training spec. With ``output_dir`` the run
        checkpoints there by default and, at the end, writes ``best_agent.pt`` (the best
        agent ever evaluated), ``population.pt`` (the final population),
        ``manifest.yaml`` (:meth:`to_manifest`), ``fitness.png`` and ``history.json``,
        each atomically. The run holds ``output_dir`` (and the checkpoint) for its whole
        length: a second run on them is refused with :class:`~agilerl.files.atomic.OutputInUseError`.
        A file that cannot be written (a full disk) raises :class:`~agilerl.files.atomic.OutputError`
        and leaves the previous one intact; a failed checkpoint stops the run, after
        writing the outputs of the generations done so far where it can.

        A new run never overwrites an earlier one (:mod:`agilerl.training.run_directory`):
        where ``output_dir`` is not empty or the checkpoint file exists, it is refused
        with :class:`~agilerl.training.run_directory.EarlierRunError` unless it resumes
        (``resume=True``: from the run checkpoint, or ``resume_from_checkpoint``) or
        ``force`` is given, which deletes the earlier run's output and checkpoint files
        (no other file) before this run starts.
        """
        updates = {
            key: value
            for key, value in {
                "checkpoint_path": None if checkpoint_path is None else str(checkpoint_path),
                "checkpoint_steps": checkpoint_steps,
                "overwrite_checkpoints": overwrite_checkpoints,
            }.items()
            if value is not None
        }
        if output_dir is not None and "checkpoint_path" not in updates:
            updates.setdefault(
                "checkpoint_path",
                self.training.checkpoint_path or str(Path(output_dir) / "checkpoint.pt"),
            )
        if updates:
            try:
                self.training = TrainingSpec.model_validate(
                    {**self.training.model_dump(), **updates}
                )
            except ValidationError as err:
                raise TrainerError(_located(err, "training")) from None
        if resume and self.resume_from_checkpoint is None:
            if self.training.checkpoint_path is None:
                raise TrainerError("resume: this run has no checkpoint path to resume from")
            self.resume_from_checkpoint = self.training.checkpoint_path
        group = join(self.device)  # a run launched on several processes joins them
        self.device = group.local_device(self.device)
        # Filled by _start as it takes the locks, so they are released below even when
        # another rank refuses the run after this one took them.
        holds: list[DirectoryLock] = []
        try:
            with restored_threads():  # the run's choice ends with the run
                self._start_together(
                    group, lambda: holds.extend(self._start(group, output_dir, force, verbose))
                )
                population, fitnesses = self._run(verbose, output_dir, group, callbacks)
        finally:
            for lock in holds:
                lock.release()
        leave()  # after the last collective: the other ranks no longer wait for this one
        return population, fitnesses

    def _start(
        self, group: Group, output_dir: str | Path | None, force: bool, verbose: bool
    ) -> list[DirectoryLock]:
        """Before anything is built or written: the pre-flight (paths, memory:
        PreflightError) on every rank, then on rank 0 alone, which writes every file of
        the run, the output directory's lock and the earlier run's outputs."""
        if self.family.shards_population and self.training.pop_size < group.world_size:
            raise TrainerError(
                f"training.pop_size: {self.training.pop_size} agents cannot be shared among "
                f"{group.world_size} processes (each trains at least one): launch at most "
                f"{self.training.pop_size} processes or raise pop_size"
            )
        self.preflight(output_dir)
        if not group.is_main:
            return []
        holds = self._hold_outputs(output_dir)
        try:
            self._claim_outputs(output_dir, force, verbose)
        except BaseException:
            for lock in holds:
                lock.release()
            raise
        return holds

    @staticmethod
    def _start_together(group: Group, start: Any) -> None:
        """``start()`` on every rank; the run goes on only where it passed on all of them
        (a rank that refuses stops the others before the first step, not at the first
        collective)."""
        problem: BaseException | None = None
        try:
            start()
        except Exception as err:  # re-raised below, once every rank has said how it went
            problem = err
        verdicts = group.all_gather(None if problem is None else str(problem))
        if problem is not None:
            raise problem
        refused = [(rank, why) for rank, why in enumerate(verdicts) if why is not None]
        if refused:
            rank, why = refused[0]
            raise TrainerError(f"rank {rank} refused the run: {why}")

    def _claim_outputs(self, output_dir: str | Path | None, force: bool, verbose: bool) -> None:
        """Refuse to start a new run over an earlier one's outputs, or (``force``) delete
        them; a resumed run continues its own outputs."""
        if self.resume_from_checkpoint is not None or self._carried is not None:
            return  # this run's own outputs, continued
        out = None if output_dir is None else Path(output_dir)
        checkpoint = self.training.checkpoint_path
        checkpoint = None if checkpoint is None else Path(checkpoint)
        found = earlier_outputs(out, checkpoint)
        if not found:
            return
        if not force:
            raise EarlierRunError(out, found)
        own = [output.name for output in self.family.outputs.values()]
        removed = remove_earlier_outputs(out, checkpoint, own)
        if verbose and removed:
            names = ", ".join(str(p) for p in removed)
            print(f"replacing the earlier run: deleted {names}", file=sys.stderr)

    def _hold_outputs(self, output_dir: str | Path | None) -> list[DirectoryLock]:
        """Hold the output directory (and the checkpoint, where it lies elsewhere) for
        this run, then remove the temporaries a killed run left there."""
        holds: list[DirectoryLock] = []
        checkpoint = self.training.checkpoint_path
        checkpoint = None if checkpoint is None or Path(checkpoint).is_dir() else Path(checkpoint)
        try:
            if output_dir is not None:
                holds.append(DirectoryLock.for_directory(output_dir).acquire())
                clean_stale_temporaries(output_dir)
            if checkpoint is not None:
                inside = output_dir is not None and (
                    checkpoint.parent.resolve() == Path(output_dir).resolve()
                )
                if not inside:
                    lock = checkpoint.parent / f".{checkpoint.name}.lock"
                    holds.append(DirectoryLock(lock, str(checkpoint)).acquire())
                # its own temporaries only: the directory may hold other runs' files
                copies = f"{checkpoint.stem}_*{checkpoint.suffix}"  # overwrite_checkpoints: false
                clean_stale_temporaries(checkpoint.parent, (checkpoint.name, copies))
        except BaseException:
            for lock in holds:
                lock.release()
            raise
        return holds

    def _run(
        self,
        verbose: bool,
        output_dir: str | Path | None,
        group: Group,
        callbacks: Sequence[Callback] = (),
    ) -> tuple[list[Any], list[float]]:
        carried = self._carried
        if carried is not None:  # train() again: another budget on top of the steps done
            steps = carried.state.steps + self._budget
            self.training = self.training.model_copy(update={"max_steps": steps})
        training = self.training
        seed = self._seed(group)
        env = self.family.make_env(self.context)
        try:
            if carried is not None:
                memory, n_step_memory = carried.memory, carried.n_step_memory
                selection, mutation = carried.selection, carried.mutation
                population, state = carried.population, carried.state
            else:
                memory, n_step_memory = self.family.make_memory(self.context)
                selection, mutation = self._operators(seed)
                if self.resume_from_checkpoint is not None:
                    population, state = self._resume(
                        env, memory, selection, mutation, n_step_memory
                    )
                else:
                    population, state = self._new_population(env, seed), RunState(seed=seed)
            self._set_threads(population[0], env)
            if state.finished is not None and not still_finished(state, training):
                state.finished = None  # the budget was raised or the target removed: go on
                if selection is not None and mutation is not None:
                    # a finished run's checkpoint holds its last evaluated population
                    population = next_generation(population, selection, mutation)
            elif state.finished is not None and verbose:
                print(
                    f"the resumed run had already finished ({state.finished}); raise "
                    "training.max_steps or max_wall_seconds, or raise or remove "
                    "target_score, to continue it",
                    file=sys.stderr,
                )
            checkpointer = checkpointer_for(
                None,
                training.checkpoint_steps,
                training.checkpoint_path,
                training.overwrite_checkpoints,
                f"{self.algorithm.name}-{self.env_name}",
                memory=memory,
                n_step_memory=n_step_memory,
                selection=selection,
                mutation=mutation,
                extra={"manifest": self._document()},
                env=env if self.family.saves_env_position else None,
            )
            if checkpointer is not None:
                checkpointer = _StopOnFailedCheckpoint(checkpointer)
            # TensorBoard, W&B: rank 0 reports for the whole run
            reporter = Reporter.open(training, self._document()) if group.is_main else Reporter([])
            try:
                ctx = self.context
                turns = self.family.turns(ctx, env, Memory(memory, n_step_memory), population)
                config = RunConfig.of(
                    ctx,
                    env_name=self.env_name,
                    target=self.family.target(ctx),
                    selection=selection,
                    mutation=mutation,
                    checkpointer=checkpointer,
                    state=state,
                    verbose=verbose,
                    callbacks=(reporter, *callbacks),
                    # a family that does not split its population (an LLM run's
                    # data-parallel fine-tuning) runs every agent on every process
                    group=None if self.family.shards_population else group.replicated(),
                )
                self.population, fitnesses = evolve(population, turns, config)
            except _CheckpointFailed as failed:
                self.population, self.state = failed.population, state
                raise self._stopped(str(failed), output_dir) from None
            except DivergedError as err:
                # Nothing is written: every output would present the run as a result.
                raise DivergedError(
                    f"{err}; {_checkpoint_kept(checkpointer)}",
                    err.generation,
                    err.index,
                    err.figure,
                ) from None
            finally:
                reporter.close()
        finally:
            self.family.close_env(env)
        self.state = state
        assert self.population is not None  # evolve returned it
        # what a next train() continues from (a checkpoint's worth, in memory)
        self._carried = _Carried(self.population, state, memory, n_step_memory, selection, mutation)
        if output_dir is not None and group.is_main:
            self._write_outputs(output_dir, verbose=verbose)
        return self.population, fitnesses

    def _new_population(self, env: Any, seed: int) -> list[Any]:
        """The run's first population, every agent from its own seed of ``seed``."""
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
        seeds = np.random.SeedSequence(seed).generate_state(self.training.pop_size)
        with single_thread():  # the same initial weights on any machine
            return [self._build_agent(env, i, int(s)) for i, s in enumerate(seeds)]

    def _set_threads(self, agent: Any, env: Any) -> None:
        """torch's thread count for this run (:mod:`agilerl.training.threads`)."""
        ctx = self.context
        workers = self.family.env_workers(ctx, env)
        computes = self.family.computes(ctx, agent)  # what the run's forward passes run
        try:
            self.threads = apply_threads(self.num_threads, computes, self.device, workers)
        except ValueError as err:
            raise TrainerError(str(err)) from None

    def _stopped(self, why: str, output_dir: str | Path | None) -> OutputError:
        """The error that ends a run whose checkpoint failed, after writing what it can."""
        assert self.state is not None  # set from the failed checkpoint before this is called
        done = self.state.generation
        message = (
            f"{why}. The run stopped after {done} generation{'s' if done != 1 else ''} "
            f"({self.state.steps:,} steps per agent)"
        )
        if output_dir is None:
            return OutputError(message)
        try:
            paths = self._write_outputs(output_dir, verbose=False)
        except OutputError as err:
            return OutputError(f"{message}; its outputs could not all be written: {err}")
        names = ", ".join(path.name for path in paths.values())
        return OutputError(f"{message}; its outputs so far are in {output_dir} ({names})")

    def _resume(
        self, env: Any, memory: Any, selection: Any, mutation: Any, n_step_memory: Any = None
    ) -> tuple[list[Any], RunState]:
        path = self.resume_from_checkpoint
        assert path is not None  # only a resumed run calls this
        data = load_run(path)
        if "manifest" in data:
            saved, mine = dict(data["manifest"]), self._document()
            if self._seed_drawn:  # the manifest leaves the seed to the run: keep the saved one
                for doc in (saved, mine):
                    if isinstance(doc.get("training"), dict):
                        doc["training"] = {k: v for k, v in doc["training"].items() if k != "seed"}
            differences = manifest_differences(saved, mine)
            if differences:
                raise CheckpointError(
                    f"{path}: cannot resume: this run's manifest differs from the checkpoint's "
                    "(a resumed run may change only its budget, training.max_steps, "
                    "target_score and max_wall_seconds, and its checkpoint and tracking "
                    "settings):\n  " + "\n  ".join(differences)
                )
        population, state = restore(
            data,
            path,
            self.family.agent_loader(self.context, env),
            self.device,
            memory,
            selection,
            mutation,
            n_step_memory=n_step_memory,
            env=env if self.family.saves_env_position else None,
        )
        # The run keeps its own seed: resets and selection continue its sequence.
        self.training = self.training.model_copy(update={"seed": state.seed})
        return population, state

    # -- results --------------------------------------------------------------------------
    @property
    def best_agent(self) -> Any:
        """The best agent ever evaluated in the run (``state.best`` names its fitness and
        generation), as it was when evaluated: later training and mutation of the
        population never change it."""
        if not self.population:
            raise RuntimeError("train() has not run yet")
        if self.state is not None and self.state.elite is not None:
            return self.state.elite
        return max(self.population, key=lambda a: a.fitness[-1] if a.fitness else -np.inf)

    def _document(self) -> dict[str, Any]:
        """The run's manifest as a plain document (specs as given, nothing evolved)."""
        return manifest_document(
            self.algorithm,
            self.environment,
            self.training,
            network=self.network,
            mutation=self.mutation,
            replay_buffer=self.replay_buffer,
            selection_strategy=self.selection_strategy,
            version=self.version,
        )

    def to_manifest(self) -> TrainingManifest:
        """The manifest of this run; after training, with the best agent's evolved
        hyperparameters and network architecture, and the seed the run used. It holds
        the budget and settings, not this run's checkpoint path or TensorBoard directory:
        a run of it writes its own outputs (a W&B project is kept: each run is its own
        W&B run there)."""
        doc = self._document()
        # budget and settings only: where this run wrote is no part of the next one
        for key in ("checkpoint_path", "tensorboard_log_dir"):
            doc["training"].pop(key, None)
        if self.network is not None:  # as given: a default may not suit every algorithm
            doc["network"] = self.network.model_dump(
                mode="json", exclude_none=True, exclude_unset=True
            )
        if self.population:
            best = self.best_agent
            hyper = best.hyperparameters()
            for name in type(self.algorithm).model_fields:
                if name in hyper and name != "hp_config":
                    doc["algorithm"][name] = hyper[name]
            evolved = self.family.evolved_network(best)
            if evolved is not None:  # None: the manifest's network section stands
                doc["network"] = evolved
        self.family.written_manifest(self.context, doc)
        return parse_manifest(doc)

    def save_outputs(self, output_dir: str | Path, verbose: bool = True) -> dict[str, Path]:
        """Write the best agent, the final population, the final manifest, the fitness
        plot and the history,
        holding ``output_dir`` (refused while a run holds it); see :meth:`_write_outputs`."""
        with DirectoryLock.for_directory(output_dir):
            return self._write_outputs(output_dir, verbose)

    def _write_outputs(self, output_dir: str | Path, verbose: bool) -> dict[str, Path]:
        """Write every output atomically. Those that cannot be written (a full disk) keep
        their previous version; :class:`OutputError` then names each of them and what
        was written."""
        from agilerl.files.documents import dump_yaml, modeline
        from agilerl.training.report import plot_fitness

        out = Path(output_dir)
        best = self.best_agent
        population = self.population
        assert population is not None  # best_agent raised otherwise
        history = self.state.history if self.state else []
        title = f"{self.algorithm.name} on {self.env_name}"
        writers = {
            "agent": best.save_checkpoint,
            "population": lambda p: save_population(population, p),
            "manifest": lambda p: write_text(
                p, modeline(p) + dump_yaml(dump_manifest(self.to_manifest()))
            ),
            "plot": lambda p: plot_fitness(
                history,
                p,
                title,
                loss=type(best).main_loss,
                measure=self.family.measure,
                step_unit=self.family.step_unit,
            ),
            # strict JSON: a figure that is not finite is null (agilerl.training.finite.json_safe)
            "history": lambda p: write_text(
                p, json.dumps(json_safe(history), indent=1, allow_nan=False)
            ),
        }
        names = dict(OUTPUT_NAMES)
        for kind, output in self.family.outputs.items():  # the family's own
            names[kind] = output.name
            writers[kind] = lambda p, write=output.write: write(best, p)
        paths: dict[str, Path] = {}
        failures = []
        for kind, write in writers.items():
            name = names[kind]
            try:
                write(out / name)
            except OSError as err:
                failures.append(_not_written(err, out / name))
            else:
                paths[kind] = out / name
        if failures:
            wrote = f"; written: {', '.join(p.name for p in paths.values())}" if paths else ""
            raise OutputError("; ".join(failures) + wrote)
        if verbose:
            print(
                f"best agent: {self.best_summary()}\n"
                + "\n".join(f"  {kind:<10} {path}" for kind, path in paths.items())
            )
        return paths

    def best_summary(self) -> str:
        """What ``best_agent.pt`` holds: its fitness, agent index and generation."""
        if self.state is not None and self.state.best is not None:
            return describe_best(self.state.best)
        best = self.best_agent
        return f"agent {best.index}, fitness {best.fitness[-1]:.1f}"
