"""The ``agilerl`` command line: validate manifests and specs, print the schema, start a
manifest, train it, evaluate a trained agent."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agilerl.distribution import DISTRIBUTION, install_command
from agilerl.documents import dump_yaml, modeline

if TYPE_CHECKING:
    from agilerl.families.base import Family

MANIFEST = "TrainingManifest"


def spec_classes() -> dict[str, type[BaseModel]]:
    """Every public spec class of :mod:`agilerl.models`, by class name."""
    import agilerl.models as models

    return {
        name: obj
        for name in models.__all__
        if isinstance(obj := getattr(models, name), type) and issubclass(obj, BaseModel)
    }


def _summary(spec: Any) -> str:
    from agilerl.models.manifest import TrainingManifest

    if not isinstance(spec, TrainingManifest):
        return type(spec).__name__
    env = spec.environment
    return f"{spec.algorithm.name} on {getattr(env, 'name', None) or getattr(env, 'dataset', '?')}"


def _load_checked(path: str, spec_cls: Any, strict: bool) -> tuple[Any, list[Any]]:
    """The spec in file ``path`` (a manifest when ``spec_cls`` is None) and an issue per
    old spelling of a key it holds, read under its new name (``strict``: refused)."""
    from agilerl.documents import load_document, load_spec
    from agilerl.models.manifest import parse_manifest_with_deprecations

    if spec_cls is not None:
        return load_spec(spec_cls, path), []
    data, locate = load_document(path)
    manifest, deprecated = parse_manifest_with_deprecations(
        data, source=path, locate=locate, strict=strict
    )
    return manifest, deprecated


def _validate(args: argparse.Namespace) -> int:
    from agilerl.documents import DocumentError
    from agilerl.manifest_code import code_references
    from agilerl.models.validation import SpecError
    from agilerl.vectorize import VectorizeError

    classes = spec_classes()
    if args.spec != MANIFEST and args.spec not in classes:
        known = ", ".join(sorted([MANIFEST, *classes]))
        print(f"agilerl: unknown spec {args.spec!r}; known: {known}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {}
    for path in args.files:
        try:
            spec_cls = None if args.spec == MANIFEST else classes[args.spec]
            spec, deprecated = _load_checked(path, spec_cls, args.strict)
        except DocumentError as err:
            report[path] = {"valid": False, "errors": [{"message": str(err)}]}
            if args.format == "text":
                print(err, file=sys.stderr)
        except SpecError as err:
            report[path] = {"valid": False, "errors": [_issue_json(issue) for issue in err.issues]}
            if args.format == "text":
                print(err, file=sys.stderr)
        else:
            # what a run of it would import: shown, not run
            code = code_references(spec, base_dir=Path(path).parent)
            try:
                vectorised = _vectorisation(spec)
            except VectorizeError as err:  # valid for the schema; every run would refuse it
                vectorised, refusal = None, str(err)
            else:
                refusal = _run_refusal(spec)
            if refusal is not None:
                report[path] = {"valid": False, "errors": [{"message": refusal}]}
                if args.format == "text":
                    print(f"{path}: {refusal}", file=sys.stderr)
                continue
            report[path] = {"valid": True, "code": [ref.to_json() for ref in code]}
            if vectorised is not None:
                report[path]["environment"] = vectorised
            warnings = _engine_warnings(spec)
            if warnings:
                report[path]["warnings"] = warnings
            if deprecated:
                report[path]["deprecated"] = [_issue_json(issue) for issue in deprecated]
            if args.format == "text":
                print(f"{path}: valid ({_summary(spec)})")
                for issue in deprecated:
                    print(f"agilerl: warning: {issue.format(path)}", file=sys.stderr)
                for warning in warnings:
                    print(f"{path}: warning: {warning}", file=sys.stderr)
                for ref in code:
                    print(f"  {ref.line()}")
                if vectorised is not None:
                    print(f"  {vectorised}")
                if args.show:
                    print(dump_yaml(_dump(spec)), end="")
    if args.format == "json":
        print(json.dumps(report, indent=2))
    return 0 if all(entry["valid"] for entry in report.values()) else 1


def _vectorisation(spec: Any) -> str | None:
    """How a manifest's Gymnasium environment copies would run (the line validate
    prints), None for a spec without one; a :class:`~agilerl.vectorize.VectorizeError`
    when ``environment.sync`` and ``environment.vectorize`` disagree or ``native`` is not
    available (a run refuses the same)."""
    from agilerl.models.manifest import TrainingManifest
    from agilerl.vectorize import describe_vectorize

    if not isinstance(spec, TrainingManifest) or not hasattr(spec.environment, "vectorize"):
        return None
    return describe_vectorize(spec.environment)


def _run_refusal(spec: Any) -> str | None:
    """What every run of a schema-valid manifest refuses before its first step, where
    its environment section alone tells (:data:`agilerl.models.env.RUN_REFUSALS`)."""
    from agilerl.models.env import RUN_REFUSALS
    from agilerl.models.manifest import TrainingManifest

    if not isinstance(spec, TrainingManifest):
        return None
    check = RUN_REFUSALS.get(type(spec.environment))
    return None if check is None else check(spec.environment)


def _engine_warnings(spec: Any) -> list[str]:
    """What a valid manifest cannot do yet: an algorithm the engine does not train."""
    from agilerl.models.base import engine_lacks
    from agilerl.models.manifest import TrainingManifest

    if not isinstance(spec, TrainingManifest):
        return []
    lacking = engine_lacks(spec.algorithm.name)
    return [lacking] if lacking else []


def _dump(spec: Any) -> dict[str, Any]:
    from agilerl.models.manifest import TrainingManifest, dump_manifest

    return (
        dump_manifest(spec) if isinstance(spec, TrainingManifest) else spec.model_dump(mode="json")
    )


def _issue_json(issue: Any) -> dict[str, Any]:
    line, column = issue.position or (None, None)
    return {"path": issue.dotted_path, "line": line, "column": column, "message": issue.message}


def _schema(args: argparse.Namespace) -> int:
    from agilerl.schema import bundle_schema

    text = json.dumps(bundle_schema(args.spec), indent=2) + "\n"
    if args.output:
        from agilerl.atomic import OutputError, write_text

        try:
            write_text(args.output, text)
        except OutputError as err:
            print(f"agilerl: {err}", file=sys.stderr)
            return 1
        print(f"wrote {args.output} ({args.spec}, every referenced schema bundled)")
    else:
        sys.stdout.write(text)
    return 0


def _init(args: argparse.Namespace) -> int:
    from agilerl.models.base import AgentType, engine_lacks
    from agilerl.models.registry import ALGO_REGISTRY
    from agilerl.starter import default_file_name, env_refusal, starter_manifest

    if args.algorithm not in ALGO_REGISTRY:
        print(f"agilerl: {ALGO_REGISTRY.not_registered(args.algorithm)}", file=sys.stderr)
        return 2
    refusal = None if args.env is None else env_refusal(args.env)
    if refusal:
        print(f"agilerl: {refusal}", file=sys.stderr)
        return 2
    spec_cls = ALGO_REGISTRY.get(args.algorithm).spec_cls
    image = None
    if args.env and spec_cls.agent_type is AgentType.SingleAgent:
        from agilerl.families.single_agent.envs import image_observations

        image = image_observations(args.env)  # a CNN for image observations
    manifest = starter_manifest(spec_cls, args.env, image)
    output = Path(args.output or default_file_name(manifest))
    try:
        exists = output.exists()
    except OSError as err:  # a name the file system refuses (too long), before writing
        print(f"agilerl: {output}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 1
    if exists and not args.force:
        print(f"agilerl: {output} exists (use --force to overwrite)", file=sys.stderr)
        return 1
    body = dump_yaml(manifest)
    from agilerl.atomic import OutputError, write_text

    try:
        write_text(output, modeline(output) + body)
    except OutputError as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    print(f"wrote {output}: a {args.algorithm} manifest; check it with `agilerl validate {output}`")
    lacking = engine_lacks(args.algorithm)
    if lacking:
        print(f"agilerl: warning: {lacking}", file=sys.stderr)
    if args.env and ALGO_REGISTRY.get(args.algorithm).spec_cls.agent_type is AgentType.SingleAgent:
        from agilerl.families.single_agent.envs import missing_extra

        extra = missing_extra(args.env, installed_too=False)
        if extra:
            print(
                f"agilerl: warning: {args.env} needs the {extra} extra to train: "
                f"{install_command(extra)}",
                file=sys.stderr,
            )
    return 0


def _set_path(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    """Put ``value`` at ``path`` in the document, creating missing sections."""
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            where = ".".join(map(str, path[: depth + 1]))
            raise ValueError(f"{where} is not a section of the manifest")
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    else:
        raise ValueError(f"{'.'.join(map(str, path[:-1]))} is not a section of the manifest")


def _depth_present(data: Any, keys: tuple[Any, ...]) -> int:
    """How many leading parts of ``keys`` the document already has (before a --set)."""
    node = data
    for depth, part in enumerate(keys[:-1]):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return depth
    return len(keys) - 1


def load_with_overrides(path: str, assignments: list[str]) -> Any:
    """The manifest at ``path`` with ``KEY=VALUE`` overrides (dotted keys, YAML values)
    applied, validated like the file itself. Problems are raised as :class:`CliError`
    lines naming ``file:line:column`` or the ``--set`` they came from."""
    from agilerl.documents import DocumentError, load_document, parse_value
    from agilerl.models.legacy import LEGACY_KEYS
    from agilerl.models.manifest import parse_manifest_with_deprecations
    from agilerl.models.validation import SpecError

    try:
        data, locate = load_document(path)
    except DocumentError as err:
        raise CliError(str(err)) from None
    overridden: dict[tuple[Any, ...], str] = {}
    for item in assignments:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set {item}: expected KEY=VALUE, e.g. training.max_steps=20000")
        keys = tuple(int(p) if p.isdigit() else p for p in key.strip().split("."))
        # What the --set brings into the document: the value, and every section on its
        # path the file lacked (``a.b.c=1`` on a file without ``a`` brings ``a``).
        brought = keys[: _depth_present(data, keys) + 1]
        try:
            if not isinstance(data, dict):
                raise ValueError("the manifest is not a mapping")
            _set_path(data, keys, parse_value(text))
        except (ValueError, DocumentError) as err:
            raise CliError(f"--set {item}: {err}") from None
        overridden[brought] = item
        for legacy in LEGACY_KEYS:  # the --set replaces the file's value, however spelt
            if keys == legacy.new_path:
                _section_of(data, legacy.section).pop(legacy.old, None)

    def where(issue: Any) -> str:
        """The --set an issue's value came from, else the file."""
        for keys, item in overridden.items():
            if issue.path[: len(keys)] == keys:
                return f"--set {item}"
        return path

    def located(issue: Any) -> Any:  # a value from the command line has no file position
        return issue if where(issue) == path else dataclasses.replace(issue, position=None)

    try:
        manifest, deprecated = parse_manifest_with_deprecations(data, source=path, locate=locate)
    except SpecError as err:
        lines = [f"{len(err.issues)} problem(s) with the manifest {path}:"]
        lines += ["  " + located(issue).format(where(issue)) for issue in err.issues]
        raise CliError("\n".join(lines)) from None
    for issue in deprecated:
        print(f"agilerl: warning: {located(issue).format(where(issue))}", file=sys.stderr)
    return manifest


def _section_of(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The object at ``keys`` of a document (one a --set has just written below)."""
    node = data
    for part in keys:
        node = node[part]
    return node


class CliError(Exception):
    """A problem reported as plain lines (no traceback), exit status 1."""


def _device(name: str) -> Any:
    import torch

    try:
        device = torch.device(name)
    except RuntimeError:
        raise CliError(f"--device {name}: not a torch device (cpu, cuda, cuda:1, mps)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise CliError(f"--device {name}: CUDA is not available on this machine")
    return device


@contextlib.contextmanager
def command_threads(explicit: int | None, agent: Any, device: Any) -> Iterator[None]:
    """The block runs on the torch thread count that ``agilerl train`` would choose for
    ``agent`` (None: no networks) on ``device``: one thread for small networks on the
    CPU unless the user set one (``--threads``, ``AGILERL_NUM_THREADS``,
    ``OMP_NUM_THREADS``); see :mod:`agilerl.training.threads`. Every command that runs
    torch outside a training run takes its count here; the count before is restored
    after (for callers of :func:`main` in-process)."""
    from agilerl.training.threads import apply_threads, restored_threads

    with restored_threads():
        try:
            apply_threads(explicit, agent, device)
        except ValueError as err:
            raise CliError(str(err)) from None
        yield


def _tracking_overrides(args: argparse.Namespace) -> list[str]:
    """``--tensorboard`` / ``--wandb`` as the ``--set`` assignments they stand for (values
    quoted: JSON strings are YAML strings, so a DIR like ``123`` or ``null`` stays text)."""
    fields = {"tensorboard": "training.tensorboard_log_dir", "wandb": "training.wandb.project"}
    return [
        f"{key}={json.dumps(getattr(args, flag))}"
        for flag, key in fields.items()
        if getattr(args, flag) is not None
    ]


#: The options of ``agilerl train`` a resume repeats, as (flag, attribute): every one that
#: shapes the run (its manifest, its budget, where it writes, how it computes) or what it
#: prints. ``--force`` is left out (it would delete the run being resumed), and so is
#: ``--resume CHECKPOINT``: a resumed run writes its checkpoints to its own checkpoint
#: path, so plain ``--resume`` continues it from there.
_RESUME_OPTIONS = (
    ("--set", "set"),
    ("--tensorboard", "tensorboard"),
    ("--wandb", "wandb"),
    ("--device", "device"),
    ("--out", "out"),
    ("--checkpoint-path", "checkpoint_path"),
    ("--checkpoint-steps", "checkpoint_steps"),
    ("--threads", "threads"),
    ("--processes", "processes"),
    ("--quiet", "quiet"),
)


def resume_command(args: argparse.Namespace) -> str:
    """The command that continues the run ``args`` started: the same manifest and every
    option of :data:`_RESUME_OPTIONS` it was given (a resume without the run's ``--set``
    would train another run: a different budget, population or environment), then
    ``--resume``. Values are shell-quoted so that the line can be pasted as it is."""
    import shlex

    defaults = build_parser().parse_args(["train", args.manifest])
    words = ["agilerl", "train", args.manifest]
    for flag, attribute in _RESUME_OPTIONS:
        value = getattr(args, attribute)
        if value == getattr(defaults, attribute):
            continue  # the default: the resumed run takes it too
        if value is True:
            words.append(flag)
        else:
            for item in value if isinstance(value, list) else [value]:
                words += [flag, str(item)]
    return shlex.join([*words, "--resume"])


def _train(args: argparse.Namespace) -> int:
    # Only what reads the settings and the manifest: a refused manifest is answered before
    # torch and the engine load (seconds), which _run_training imports.
    from agilerl.distributed.launcher import launched_world_size
    from agilerl.distributed.liveness import PeerTimeoutSettingError, peer_timeout

    rank = int(os.environ.get("RANK", "0") or 0)
    who = "agilerl" if launched_world_size() == 1 else f"agilerl (rank {rank})"
    try:
        if args.processes > 1 or launched_world_size() > 1:
            peer_timeout()  # a bad setting is refused once, before any rank starts
        manifest = load_with_overrides(args.manifest, args.set + _tracking_overrides(args))
    except (CliError, PeerTimeoutSettingError) as err:
        print(f"{who}: {err}", file=sys.stderr)
        return 1
    refusal = _run_refusal(manifest)  # what `agilerl validate` says of it, before anything
    if refusal is not None:
        print(f"{who}: {args.manifest}: {refusal}", file=sys.stderr)
        return 1
    if args.processes > 1 and launched_world_size() == 1:
        return _launch(args)  # the manifest is valid: start the ranks
    return _run_training(args, manifest, rank, who)


def _run_training(args: argparse.Namespace, manifest: Any, rank: int, who: str) -> int:
    """``agilerl train`` of a valid manifest on this process (one rank of a launch)."""
    from agilerl.atomic import OutputError
    from agilerl.checkpoints import CheckpointError
    from agilerl.distributed import PeerLost
    from agilerl.distributed.liveness import EXIT_CODE
    from agilerl.families.single_agent.envs import EnvironmentSpecError
    from agilerl.manifest_code import code_references
    from agilerl.models.base import AlgorithmNotAvailableError
    from agilerl.trainer import LocalTrainer, TrainerError
    from agilerl.training.preflight import PreflightError
    from agilerl.training.run_directory import EarlierRunError
    from agilerl.training.tracking import TrackingError
    from agilerl.user_code import UserCodeError

    try:
        out = Path(args.out) if args.out else Path("runs") / Path(args.manifest).stem
        # training may be absent (null: every default)
        checkpoint = args.checkpoint_path or getattr(manifest.training, "checkpoint_path", None)
        checkpoint = checkpoint or str(out / "checkpoint.pt")
        resume = checkpoint if args.resume is True else args.resume
        device = _device(args.device)
        trainer = LocalTrainer.from_manifest(
            manifest,
            device=device,
            resume_from_checkpoint=resume,
            num_threads=args.threads,
            base_dir=Path(args.manifest).parent,  # the manifest's relative paths start there
        )
        if rank == 0:  # one rank speaks for the run
            if not args.quiet:  # a quiet run prints one line, at its end
                print(
                    f"training {manifest.algorithm.name} on {trainer.env_name}: population "
                    f"{trainer.training.pop_size}, {trainer.training.max_steps:,} steps per "
                    f"agent, output in {out}/" + (f", resuming from {resume}" if resume else ""),
                    file=sys.stderr,
                )
            # Before the run imports any of it, quiet or not: what code runs is a notice,
            # like a warning, not progress.
            for ref in code_references(manifest, base_dir=Path(args.manifest).parent):
                print(ref.line(), file=sys.stderr)
        trainer.train(
            verbose=not args.quiet and rank == 0,
            output_dir=out,
            checkpoint_path=checkpoint,
            checkpoint_steps=args.checkpoint_steps,
            force=args.force,
        )
        if args.quiet and rank == 0:  # the one line a quiet run prints: its outputs
            resumed = f", resumed from {resume}" if resume else ""
            print(f"outputs in {out}/ (best agent: {trainer.best_summary()}){resumed}")
    except EarlierRunError as err:
        print(
            f"agilerl: {err.where()}: holds an earlier run's outputs ({err.names()}). "
            "Continue that run with --resume, write this one elsewhere with --out DIR, or "
            "replace it with --force (deletes the earlier run's outputs and checkpoint "
            "first)",
            file=sys.stderr,
        )
        return 1
    except (
        CliError,
        CheckpointError,
        EnvironmentSpecError,
        AlgorithmNotAvailableError,
        OutputError,
        PreflightError,
        TrackingError,
        TrainerError,
        UserCodeError,
    ) as err:
        print(f"{who}: {err}", file=sys.stderr)
        return 1
    except PeerLost as err:
        print(f"{who}: {err}", file=sys.stderr)
        return EXIT_CODE
    except KeyboardInterrupt:
        print(f"\nagilerl: interrupted; continue with: {resume_command(args)}", file=sys.stderr)
        return 130
    return 0


def _launch(args: argparse.Namespace) -> int:
    """``agilerl train --processes N``: the same command on N processes of this machine,
    started by torchrun's launcher (``torch.distributed.run --standalone``), run in this
    process so that its end is ours to report: torchrun ends the others when one fails,
    and a rank killed or interrupted is one line (exit status 75, or 130 for Ctrl-C)
    instead of the launcher's ``ChildFailedError`` traceback."""
    import logging

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    argv = list(args.argv)
    # The ranks run the command without --processes (torchrun started them already).
    for i, item in enumerate(argv):
        if item == "--processes":
            del argv[i : i + 2]
            break
        if item.startswith("--processes="):
            del argv[i]
            break
    launcher = [
        "--standalone",
        f"--nproc-per-node={args.processes}",
        "-m",
        "agilerl",
        *argv,
    ]
    print(f"agilerl: starting {args.processes} processes (torchrun)", file=sys.stderr)
    # The launcher's own log (closing signals, the failure summary) repeats what the
    # line below says.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    resume = resume_command(args)
    try:
        run(parse_args(launcher))
    except ChildFailedError as err:
        return _rank_failure(err, resume)
    except (SignalException, KeyboardInterrupt):
        print(f"\nagilerl: interrupted; continue with: {resume}", file=sys.stderr)
        return 130
    return 0


def _rank_failure(err: Any, resume: str) -> int:
    """The exit status of a multi-process run one of whose ranks failed, and its line.
    Ranks that stopped with an error of their own (exit status 1) have printed it; a rank
    killed by a signal, or one that stopped because a peer was gone (75), is named."""
    import signal

    from agilerl.distributed.liveness import EXIT_CODE

    codes = {rank: failure.exitcode for rank, failure in err.failures.items()}
    if all(code == 1 for code in codes.values()):
        return 1
    # The rank lost: one killed by a signal other than the SIGTERM the launcher sends the
    # rest when one fails; else any killed one; else the first to fail.
    killed = [r for r, code in sorted(codes.items()) if code < 0]
    others = [r for r in killed if codes[r] != -signal.SIGTERM]
    lost = (others or killed or [err.get_first_failure()[0]])[0]
    code = codes[lost]
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit status {code}"
    print(
        f"agilerl: rank {lost} ended ({how}) and the run stopped on every rank; "
        f"resume the run with: {resume}",
        file=sys.stderr,
    )
    return EXIT_CODE


def _without_dataset(document: dict[str, Any]) -> dict[str, Any]:
    """An offline environment section as the Gymnasium environment it evaluates in (an
    offline agent records its dataset beside it)."""
    from agilerl.models.env import OFFLINE_DATASET_FIELDS

    return {key: value for key, value in document.items() if key not in OFFLINE_DATASET_FIELDS}


def _evaluation_environment(
    args: argparse.Namespace, agent: Any, family: Family
) -> tuple[str, Any]:
    """Where the environment to evaluate on comes from, and its section: --env, the
    manifest's (its relative paths from the manifest's folder, as in training), or the
    one the agent file records (agents written by ``agilerl train`` record theirs); an
    offline section without its dataset."""
    if args.manifest:
        environment = load_with_overrides(args.manifest, []).environment
        document = family.recorded_environment(environment, Path(args.manifest).parent)
        return f"{args.manifest}: environment", _without_dataset(document)
    if args.env:
        return "--env", {"name": args.env}
    if agent.environment is None:
        raise CliError(
            f"{args.agent} records no environment (only agents that agilerl train wrote do); "
            "name one with --env ID or --manifest FILE"
        )
    return f"{args.agent}: environment", _without_dataset(agent.environment)


def _evaluate(args: argparse.Namespace) -> int:
    import os
    from types import SimpleNamespace

    from pydantic import ValidationError

    from agilerl.algorithms.core.evolvable import EvolvableAlgorithm
    from agilerl.atomic import OutputError
    from agilerl.checkpoints import CheckpointError
    from agilerl.evaluation import EvaluationError, agent_family
    from agilerl.families.single_agent.envs import EnvironmentSpecError
    from agilerl.manifest_code import code_references
    from agilerl.recorded_code import RecordedCodeError, check_recorded_code, installed_imports
    from agilerl.user_code import UserCodeError

    try:
        # Any family's agent: its family evaluates it, or says why it cannot.
        device = _device(args.device)
        agent = EvolvableAlgorithm.load(args.agent, device=device)
        family = agent_family(agent)
        where, document = _evaluation_environment(args, agent, family)
        try:
            environment = family.evaluation_environment(document, agent)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(map(str, first["loc"]))
            raise CliError(f"{where}: {loc}: {first['msg']}") from None
        imports: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if not (args.env or args.manifest or args.trust_agent_code):  # what the file records
            # The files that could pose as a trusted module: those beside the agent and in
            # the working directory (the agent unpacked and evaluated in place).
            beside = (Path.cwd(), Path(args.agent).resolve().parent)
            check_recorded_code(args.agent, environment, trusted=False, beside=beside)
            imports = installed_imports(beside)
        label = getattr(environment, "entrypoint", None) or environment.name
        print(f"evaluating {args.agent} ({agent.name}) on {label}", file=sys.stderr)
        for ref in code_references(SimpleNamespace(environment=environment)):
            print(ref.line(), file=sys.stderr)  # before any of it is imported
        if args.video:
            # rgb_array frames need no display; without one SDL (pygame) complains.
            os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        with imports, command_threads(args.threads, agent, device):
            result = family.evaluate_saved(
                agent,
                environment,
                episodes=args.episodes,
                seed=args.seed,
                deterministic=not args.stochastic,
                video=args.video,
                max_episode_steps=args.max_episode_steps,
            )
    except (
        CliError,
        CheckpointError,
        EnvironmentSpecError,
        EvaluationError,
        OutputError,
        UserCodeError,
        RecordedCodeError,
    ) as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    if args.format == "json":
        from agilerl.finite import json_safe

        report = json_safe({"agent": args.agent, **result.to_json()})  # strict JSON
        print(json.dumps(report, indent=2, allow_nan=False))
    else:
        print(result.summary())
    return 0


def _llm_tiny(args: argparse.Namespace) -> int:
    from agilerl.llm.tiny import AssetsExistError, build_tiny_assets

    try:
        import torch

        with command_threads(None, None, torch.device("cpu")):  # a tiny model: one thread
            root = build_tiny_assets(args.directory, seed=args.seed, force=args.force)
    except CliError as err:  # AGILERL_NUM_THREADS refused
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    except AssetsExistError as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"agilerl: {args.directory}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(f"wrote {root}/: model/ (tiny Llama + tokenizer), data/*.jsonl, reward.py")
    return 0


def _collection_environment(source: str) -> Any:
    """The environment ``agilerl dataset collect`` records: a manifest's (an offline one
    names the evaluation environment beside its dataset) or a Gymnasium id."""
    from pydantic import ValidationError

    from agilerl.models.env import GymEnvSpec

    if Path(source).suffix in (".yaml", ".yml"):
        environment = load_with_overrides(source, []).environment
        if not hasattr(environment, "num_envs"):
            raise CliError(
                f"{source}: environment: datasets are recorded from Gymnasium environments, "
                f"not a {type(environment).__name__}"
            )
        from agilerl.manifest_code import anchored

        return anchored(environment, Path(source).parent)  # its code beside it, as in training
    try:  # one environment in this process: consecutive rows are consecutive steps
        return GymEnvSpec(name=source, num_envs=1, sync=True)
    except ValidationError as err:
        raise CliError(f"{source}: {err.errors()[0]['msg']}") from None


def _collection_policy(path: str) -> Any:
    """The single-agent agent saved at ``path``, acting in the collected environment."""
    from agilerl.algorithms import RLAlgorithm
    from agilerl.algorithms.core.evolvable import EvolvableAlgorithm

    agent = EvolvableAlgorithm.load(path)
    if not isinstance(agent, RLAlgorithm):
        raise CliError(
            f"--policy {path}: a {agent.name} agent acts in no single Gymnasium environment; "
            "dataset collect needs a single-agent policy (DQN, PPO, ...) or random"
        )
    return agent


def _dataset_collect(args: argparse.Namespace) -> int:
    import torch

    from agilerl.checkpoints import CheckpointError
    from agilerl.families.offline.collect import collect_transitions, write_dataset
    from agilerl.families.offline.datasets import DatasetError
    from agilerl.families.single_agent.envs import EnvironmentSpecError, make_vector_env
    from agilerl.user_code import UserCodeError

    try:
        if args.policy == "random" and args.epsilon is not None:
            raise CliError("--epsilon: the random policy acts at random at every step already")
        if not Path(args.output).parent.is_dir():  # before the collection, not after it
            raise CliError(f"-o {args.output}: no such directory {Path(args.output).parent}")
        environment = _collection_environment(args.source)
        agent = None if args.policy == "random" else _collection_policy(args.policy)
        env = make_vector_env(environment)
        try:
            # Shapes and actions must agree; observation bounds may differ (an agent
            # built for an unbounded Box acts on a bounded one alike).
            if agent is not None and (
                agent.observation_space.shape != env.single_observation_space.shape
                or agent.action_space != env.single_action_space
            ):
                raise CliError(
                    f"{args.policy}: the agent acts on observations of shape "
                    f"{agent.observation_space.shape} with {agent.action_space}; "
                    f"{environment.name} has {env.single_observation_space.shape} and "
                    f"{env.single_action_space}"
                )
            device = torch.device(agent.device if agent is not None else "cpu")
            with command_threads(args.threads, agent, device):
                data, returns = collect_transitions(
                    env, args.steps, agent, epsilon=args.epsilon or 0.0, seed=args.seed
                )
        finally:
            env.close()
        path = write_dataset(args.output, data)
    except (CliError, CheckpointError, DatasetError, EnvironmentSpecError, UserCodeError) as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"agilerl: {args.output}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 1
    policy = "random policy" if agent is None else f"{args.policy}, epsilon {args.epsilon or 0}"
    mean = f", mean return {sum(returns) / len(returns):.1f}" if returns else ""
    print(
        f"wrote {path}: {len(data['rewards']):,} transitions of {environment.name} "
        f"({policy}); {len(returns):,} episodes ended{mean}"
    )
    return 0


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in [0, 1]")
    return value


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _threads_option(parser: argparse.ArgumentParser) -> None:
    """``--threads N`` of every command that runs networks (:func:`command_threads`)."""
    parser.add_argument(
        "--threads",
        type=_positive,
        metavar="N",
        help="torch CPU threads (default: 1 for small networks on the CPU; also "
        "AGILERL_NUM_THREADS)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agilerl", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    validate = commands.add_parser(
        "validate", help="validate manifests (or other spec files); exit 1 if any is invalid"
    )
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument(
        "--spec",
        default=MANIFEST,
        help=f"spec the files hold (default {MANIFEST}), e.g. QNetworkSpec",
    )
    validate.add_argument("--format", choices=["text", "json"], default="text")
    validate.add_argument(
        "--show", action="store_true", help="print each valid file with every default filled in"
    )
    validate.add_argument(
        "--strict",
        action="store_true",
        help="refuse AgileRL's old spellings of keys (e.g. replay_buffer.memory_size), which "
        "are otherwise read under their new names with a warning",
    )
    validate.set_defaults(handler=_validate)

    schema = commands.add_parser(
        "schema", help="print (or write) a schema as one self-contained file"
    )
    schema.add_argument("--spec", default=MANIFEST, help=f"schema title (default {MANIFEST})")
    schema.add_argument("-o", "--output", help="write to this file instead of stdout")
    schema.set_defaults(handler=_schema)

    init = commands.add_parser(
        "init", help="write a starter manifest that editors complete at once"
    )
    init.add_argument("algorithm", metavar="ALGO", help="registered algorithm name, e.g. DQN")
    init.add_argument("--env", help="environment name (default: one that suits the algorithm)")
    init.add_argument(
        "-o",
        "--output",
        help="file to write (default: <algo>-<env>.yaml, e.g. ppo-cartpole-v1.yaml)",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(handler=_init)

    train = commands.add_parser(
        "train",
        help="train a population from a manifest (progress, summaries, best agent, plot)",
    )
    train.add_argument("manifest", metavar="MANIFEST")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a manifest value (dotted key, YAML value), validated like the file; "
        "repeatable, e.g. --set training.max_steps=20000",
    )
    train.add_argument("--device", default="cpu", help="torch device (default cpu)")
    train.add_argument(
        "--out",
        help="output directory (default runs/<manifest name>): checkpoint, best "
        "agent, final manifest, fitness plot, history",
    )
    train.add_argument(
        "--checkpoint-path", help="run checkpoint file (default <out>/checkpoint.pt)"
    )
    train.add_argument(
        "--checkpoint-steps",
        type=int,
        help="steps per agent between checkpoints (default: every generation)",
    )
    train.add_argument(
        "--resume",
        nargs="?",
        const=True,
        metavar="CHECKPOINT",
        help="continue from a run checkpoint (default: the run's checkpoint path)",
    )
    train.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier run in the output directory: delete its outputs and "
        "checkpoint first (other files stay); without it such a run is refused",
    )
    _threads_option(train)
    train.add_argument(
        "--processes",
        type=_positive,
        default=1,
        metavar="N",
        help="split the population over N processes on this machine (torchrun; the same "
        "as `torchrun --standalone --nproc-per-node N -m agilerl train ...` or "
        "`accelerate launch --num_processes N -m agilerl train ...`)",
    )
    train.add_argument(
        "--tensorboard",
        metavar="DIR",
        help="write TensorBoard event files to DIR every generation (training."
        f"tensorboard_log_dir; needs {DISTRIBUTION}[tensorboard])",
    )
    train.add_argument(
        "--wandb",
        metavar="PROJECT",
        help="log every generation to this Weights & Biases project (training.wandb."
        f"project; needs {DISTRIBUTION}[wandb]; WANDB_MODE=offline keeps it on this machine)",
    )
    train.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar or summaries; one final line says where the outputs are",
    )
    train.set_defaults(handler=_train)

    evaluate = commands.add_parser(
        "evaluate",
        help="run a saved agent for some episodes: mean and spread of the return, a video",
    )
    evaluate.add_argument("agent", metavar="AGENT", help="agent file, e.g. runs/ppo/best_agent.pt")
    where = evaluate.add_mutually_exclusive_group()
    where.add_argument(
        "--env",
        metavar="ID",
        help="Gymnasium environment id (default: the one the agent file records)",
    )
    where.add_argument(
        "--manifest",
        metavar="FILE",
        help="take the environment (entry point, config, wrappers) from a manifest",
    )
    evaluate.add_argument(
        "--trust-agent-code",
        action="store_true",
        help="build the environment the agent file records even where it names code "
        "(an entry point, wrappers, a path or module) outside the installed environment "
        "packages: only for files from someone you trust",
    )
    evaluate.add_argument(
        "--episodes", type=int, default=10, metavar="N", help="episodes (default 10)"
    )
    evaluate.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="episode i resets with seed S+i (default 0)",
    )
    evaluate.add_argument(
        "--stochastic",
        action="store_true",
        help="sample actions from the policy (default: deterministic, the most likely)",
    )
    evaluate.add_argument(
        "--video",
        metavar="FILE",
        help="record the first episode: .gif, or .mp4 (needs the video extra)",
    )
    evaluate.add_argument(
        "--max-episode-steps",
        type=int,
        metavar="N",
        help="cut longer episodes (for environments without a time limit)",
    )
    evaluate.add_argument("--device", default="cpu", help="torch device (default cpu)")
    evaluate.add_argument("--format", choices=["text", "json"], default="text")
    _threads_option(evaluate)
    evaluate.set_defaults(handler=_evaluate)

    dataset = commands.add_parser("dataset", help="offline datasets (HDF5) for CQN")
    dataset_commands = dataset.add_subparsers(dest="dataset_command", required=True)
    collect = dataset_commands.add_parser(
        "collect",
        help="record transitions of a Gymnasium environment (random or a trained agent) in "
        "an HDF5 dataset",
    )
    collect.add_argument(
        "source",
        metavar="MANIFEST_OR_ENV",
        help="a manifest (its environment section) or a Gymnasium id, e.g. CartPole-v1",
    )
    collect.add_argument("-o", "--output", required=True, metavar="FILE", help="e.g. data.h5")
    collect.add_argument(
        "--steps", type=_positive, required=True, metavar="N", help="transitions to record"
    )
    collect.add_argument(
        "--policy",
        default="random",
        metavar="random|AGENT",
        help="random (default), or an agent file (e.g. runs/dqn/best_agent.pt) acting greedily",
    )
    collect.add_argument(
        "--epsilon",
        type=_fraction,
        metavar="E",
        help="with an agent: the share of random actions (default 0)",
    )
    collect.add_argument(
        "--seed", type=int, default=0, metavar="S", help="reset and action seed (default 0)"
    )
    _threads_option(collect)
    collect.set_defaults(handler=_dataset_collect)

    llm = commands.add_parser("llm", help="LLM fine-tuning helpers")
    llm_commands = llm.add_subparsers(dest="llm_command", required=True)
    tiny = llm_commands.add_parser(
        "tiny",
        help="build a tiny random causal LM, its tokenizer, toy datasets and a reward file "
        "in DIR (offline, seconds) for the LLM manifests, examples and tests",
    )
    tiny.add_argument("directory", metavar="DIR")
    tiny.add_argument("--seed", type=int, default=0, help="weights and data seed (default 0)")
    tiny.add_argument(
        "--force", action="store_true", help="overwrite the files of an earlier llm tiny there"
    )
    tiny.set_defaults(handler=_llm_tiny)
    return parser


def _one_line_warnings() -> None:
    """Print a :class:`~agilerl.user_code.UserCodeWarning` (it names the manifest field
    already) as one ``agilerl: warning:`` line, not Python's file, line and source;
    every other warning as Python prints it."""
    import warnings

    from agilerl.user_code import UserCodeWarning

    python_format = warnings.formatwarning
    if getattr(python_format, "one_line", False):
        return  # installed by an earlier call in this process

    def formatwarning(message: Any, category: Any, *args: Any, **kwargs: Any) -> str:
        if issubclass(category, UserCodeWarning):
            return f"agilerl: warning: {message}\n"
        return python_format(message, category, *args, **kwargs)

    formatwarning.one_line = True  # type: ignore[attr-defined]
    warnings.formatwarning = formatwarning


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as given (to relaunch it)
    _one_line_warnings()
    from agilerl.time_limit import TimeLimitSettingError, limit_seconds

    try:
        # The time limit for user code: every command that calls user code runs under it,
        # so a bad setting is refused once, here, before anything runs.
        limit_seconds()
    except TimeLimitSettingError as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    try:
        status = args.handler(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at interpreter exit
    except BrokenPipeError:
        return _stdout_closed()
    return status


#: The exit status of a command whose reader went away: a process killed by SIGPIPE
#: (what ``cmd | head`` does to a C program) ends with 128 + 13 in the shell.
EXIT_STDOUT_CLOSED = 141


def _stdout_closed() -> int:
    """End quietly once the reader of stdout is gone (``agilerl evaluate ... | head``).
    Python ignores SIGPIPE, so the write raised BrokenPipeError instead; what is still
    buffered would raise again when the interpreter flushes stdout on exit, so stdout is
    pointed at the null device first (the recipe of Python's signal documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_STDOUT_CLOSED


if __name__ == "__main__":
    sys.exit(main())
