"""Every developer task is a nox session: ``nox -l`` lists them, ``nox`` runs the checks."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nox
import tomllib

#: The default set (CI). ``docs`` is not in it: the tests build the same site strictly
#: (tests/docs/test_docs_build.py), and a second build only costs CI time.
nox.options.sessions = ["lint", "schemas", "codegen_check", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
NODE_DIR = "codegen/node"
# pip must take the CPU build that lies on this machine's disk; if torch were left to
# dependency resolution it could pull a multi-GB CUDA build instead.
TORCH = "torch==2.13.0"
HEAVY = ("torch", "gymnasium")
#: The extras the engine sessions install: every stack the tests cover (docs: the test
#: that builds the site, and `nox -s docs`).
ENGINE_EXTRAS = ".[dev,atari,box2d,llm,multiagent,offline,docs]"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@dataclass(frozen=True)
class SharedEnv:
    """A virtualenv under .nox/ that several sessions share. nox gives each session its
    own; the engine's (torch, transformers, ~2.2 GB) twice over, and the schema tooling's
    three times, ran CI out of disk. The sessions that use one are ``venv_backend="none"``
    and run its programs by path; each run brings its packages up to date (pip is quick
    when they already are), and ``rm -rf .nox/NAME`` starts it afresh."""

    name: str

    @property
    def path(self) -> Path:
        return ROOT / ".nox" / self.name

    def program(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def install(self, session: nox.Session, *requirement_groups: tuple[str, ...]) -> None:
        """Create the virtualenv if absent, then install each group in turn (torch first,
        on its own, so that no later resolution chooses it)."""
        if not (self.path / "bin" / "python").exists():
            session.run(sys.executable, "-m", "venv", str(self.path), external=True)
        for group in requirement_groups:
            session.run(self.program("python"), "-m", "pip", "install", "-q", *group, external=True)

    def run(self, session: nox.Session, program: str, *args: str, **env: str) -> None:
        """Run one of this virtualenv's programs, with it first on PATH (for the
        subprocesses the tests start: agilerl, torchrun)."""
        path = f"{self.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        session.run(
            self.program(program),
            *args,
            env={"VIRTUAL_ENV": str(self.path), "PATH": path, **env},
            external=True,
        )


#: torch, the package with the extras the tests cover, and pyright: typecheck, tests,
#: example and benchmark.
ENGINE = SharedEnv("engine")
#: The package without its engine dependencies, and the schema tooling: schemas, codegen,
#: codegen_check.
SPEC = SharedEnv("spec")


def install_engine(session: nox.Session) -> None:
    ENGINE.install(session, (TORCH,), ("-e", ENGINE_EXTRAS))


def install_spec(session: nox.Session) -> None:
    # Spec-only sessions skip the heavy engine dependencies (read from pyproject.toml,
    # so the list is never written twice).
    light = [dep for dep in _project()["dependencies"] if not dep.startswith(HEAVY)]
    tools = _project()["optional-dependencies"]["schema-tools"]
    SPEC.install(session, (*light, *tools), ("--no-deps", "-e", "."))


def install_node(session: nox.Session) -> None:
    session.run("npm", "ci", "--prefix", NODE_DIR, "--no-audit", "--no-fund", external=True)


#: One worker per core (pytest-xdist); ``--dist loadgroup`` keeps the tests of one
#: ``xdist_group`` on one worker. Options given after ``--`` come later and win
#: (``nox -s tests -- -n 0`` runs serially, ``-- -m "not slow"`` is the fast tier).
PARALLEL = ("-n", "auto", "--dist", "loadgroup")
#: The 25 slowest tests, printed at the end of every run: CI must stay under 30 minutes on
#: 2 cores, and this is where to look first when it creeps up.
SLOWEST = ("--durations=25",)
#: One BLAS/OpenMP thread per process: the workers (and the ranks the distributed tests
#: start) already use every core; more threads each only contend for them.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The test suite, in parallel, including the Node (ajv) cross-language checks. The
    playground's browser test runs where Chromium is installed and is skipped, saying
    so, where it is not; CI installs it and requires it (AGILERL_REQUIRE_BROWSER=1 in
    .ci/run)."""
    install_engine(session)
    install_node(session)
    ENGINE.run(
        session,
        "pytest",
        *PARALLEL,
        *SLOWEST,
        *session.posargs,
        AGILERL_REQUIRE_NODE="1",
        **ONE_THREAD,
    )


@nox.session(venv_backend="none")
def typecheck(session: nox.Session) -> None:
    """pyright, standard mode, over all of agilerl/ (generated/ is its generator's; see
    [tool.pyright] in pyproject.toml); it resolves imports in the engine's virtualenv,
    .nox/engine."""
    install_engine(session)
    # Pinned: each pyright release may add checks, which would fail the session with no
    # change here.
    ENGINE.install(session, ("pyright==1.1.414",))
    ENGINE.run(session, "pyright", *session.posargs)


@nox.session(venv_backend="none")
def codegen(session: nox.Session) -> None:
    """Regenerate generated/ from schemas/ (options live in pyproject.toml)."""
    install_spec(session)
    SPEC.run(session, "python", "-m", "codegen.lint")
    SPEC.run(session, "datamodel-codegen")


@nox.session(venv_backend="none")
def codegen_check(session: nox.Session) -> None:
    """Fail when generated/ differs from what schemas/ generate (hand edits, stale files)."""
    install_spec(session)
    SPEC.run(session, "datamodel-codegen", "--check")


@nox.session(venv_backend="none")
def schemas(session: nox.Session) -> None:
    """Lint the schemas: our checks, the meta-schema, and ajv strict-mode compilation."""
    install_spec(session)
    install_node(session)
    SPEC.run(session, "python", "-m", "codegen.lint")
    SPEC.run(
        session,
        "check-jsonschema",
        "--check-metaschema",
        *map(str, sorted(ROOT.glob("schemas/*.schema.json"))),
    )
    session.run(
        "node", f"{NODE_DIR}/validate.mjs", "--schemas", "schemas", "--compile-only", external=True
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting (generated/ is excluded; it is the generator's)."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


#: MkDocs' plugins print a banner about a future MkDocs 2 on every build; it says
#: nothing about this site.
QUIET_MKDOCS = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/ (mkdocs.yml): strict, so any warning (a
    broken link, a docstring griffe cannot read) fails the build. In the engine's
    virtualenv: the reference pages are generated from agilerl's own modules; the
    playground's bundle is built from codegen/node/ (npm)."""
    install_engine(session)
    install_node(session)
    ENGINE.run(
        session,
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        "site",
        *session.posargs,
        **QUIET_MKDOCS,
    )


@nox.session(venv_backend="none")
def example(session: nox.Session) -> None:
    """The main job on the default example: train the CartPole PPO manifest (runs/ppo/)."""
    install_engine(session)
    ENGINE.run(session, "agilerl", "train", "configs/ppo.yaml", *session.posargs)


@nox.session(venv_backend="none")
def benchmark(session: nox.Session) -> None:
    """Manifests validated per second, network forward time, CartPole training figures."""
    install_engine(session)
    ENGINE.run(session, "python", "benchmarks/validate_manifests.py")
    ENGINE.run(session, "python", "benchmarks/network_forward.py")
    ENGINE.run(session, "python", "benchmarks/train_cartpole.py", *session.posargs)
