"""Every developer task is a nox session: ``nox -l`` lists them, ``nox`` runs the checks."""

from __future__ import annotations

from pathlib import Path

import nox
import tomllib

nox.options.sessions = ["lint", "schemas", "codegen_check", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
NODE_DIR = "codegen/node"
# pip must take the CPU build that lies on this machine's disk; if torch were left to
# dependency resolution it could pull a multi-GB CUDA build instead.
TORCH = "torch==2.13.0"
HEAVY = ("torch", "gymnasium")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def install_project(session: nox.Session, *, engine: bool) -> None:
    """Install agilerl with its dev tools; the torch engine (with the LLM and multi-agent
    stacks its tests cover) only when ``engine``."""
    if engine:
        session.install(TORCH)
        session.install("-e", ".[dev,atari,box2d,llm,multiagent,offline]")
        return
    # Spec-only sessions skip the heavy engine dependencies (read from pyproject.toml,
    # so the list is never written twice).
    light = [dep for dep in _project()["dependencies"] if not dep.startswith(HEAVY)]
    session.install(*light, *_project()["optional-dependencies"]["dev"])
    session.install("--no-deps", "-e", ".")


def install_node(session: nox.Session) -> None:
    session.run("npm", "ci", "--prefix", NODE_DIR, "--no-audit", "--no-fund", external=True)


#: One worker per core (pytest-xdist); ``--dist loadgroup`` keeps the tests of one
#: ``xdist_group`` on one worker. Options given after ``--`` come later and win
#: (``nox -s tests -- -n 0`` runs serially, ``-- -m "not slow"`` is the fast tier).
PARALLEL = ("-n", "auto", "--dist", "loadgroup")
#: One BLAS/OpenMP thread per process: the workers (and the ranks the distributed tests
#: start) already use every core; more threads each only contend for them.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite, in parallel, including the Node (ajv) cross-language checks."""
    install_project(session, engine=True)
    install_node(session)
    session.run(
        "pytest", *PARALLEL, *session.posargs, env={"AGILERL_REQUIRE_NODE": "1", **ONE_THREAD}
    )


@nox.session
def typecheck(session: nox.Session) -> None:
    """pyright over the training loops and the algorithm base classes ([tool.pyright] in
    pyproject.toml; it resolves imports in this session's virtualenv, .nox/typecheck)."""
    install_project(session, engine=True)
    # Pinned: each pyright release may add checks, which would fail the session with no
    # change here.
    session.install("pyright==1.1.414")
    session.run("pyright", *session.posargs)


@nox.session
def codegen(session: nox.Session) -> None:
    """Regenerate generated/ from schemas/ (options live in pyproject.toml)."""
    install_project(session, engine=False)
    session.run("python", "-m", "codegen.lint")
    session.run("datamodel-codegen")


@nox.session
def codegen_check(session: nox.Session) -> None:
    """Fail when generated/ differs from what schemas/ generate (hand edits, stale files)."""
    install_project(session, engine=False)
    session.run("datamodel-codegen", "--check")


@nox.session
def schemas(session: nox.Session) -> None:
    """Lint the schemas: our checks, the meta-schema, and ajv strict-mode compilation."""
    install_project(session, engine=False)
    install_node(session)
    session.run("python", "-m", "codegen.lint")
    session.run(
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


@nox.session
def example(session: nox.Session) -> None:
    """The main job on the default example: train the CartPole PPO manifest (runs/ppo/)."""
    install_project(session, engine=True)
    session.run("agilerl", "train", "configs/ppo.yaml", *session.posargs)


@nox.session
def benchmark(session: nox.Session) -> None:
    """Manifests validated per second, network forward time, CartPole training figures."""
    install_project(session, engine=True)
    session.run("python", "benchmarks/validate_manifests.py")
    session.run("python", "benchmarks/network_forward.py")
    session.run("python", "benchmarks/train_cartpole.py", *session.posargs)
