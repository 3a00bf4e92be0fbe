"""Each module of ``agilerl`` has a test file of its own name, where its tests are found
without a search: ``agilerl/<folders>/<module>.py`` is tested by
``tests/<folders>/test_<module>.py`` (tests/README.md). A module without one is on
:data:`ALLOWED`, a short list where each entry says why, or, until its tests are
renamed or written, on :data:`NOT_YET`, which may only shrink.

In the spirit of ``tests/test_import_graph.py``: the layout is read from the files, so a
module added without its test file, or a test file renamed away from its module, fails
here with the path it should have.
"""

from __future__ import annotations

from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "agilerl"
TESTS = ROOT / "tests"

#: Modules with no test file of their own name, and why none is needed. A name ending in
#: ``.*`` stands for every module of that package. Keep it short (under 25 entries): a
#: module with behaviour of its own gets its test file instead.
ALLOWED: dict[str, str] = {
    # one registration line each (``register()(DQNSpec)``) over a generated class;
    # tests/models/test_algorithm_specs.py checks every registered spec
    "agilerl.models.algorithms.*": "registration of a generated spec",
    # the distribution's version string; tests/resources/test_distribution.py reads it
    "agilerl.version": "one attribute read from the installed metadata",
    # type aliases the generated manifest class points at (customTypePath): no behaviour
    "agilerl.models.sections": "type aliases only",
    # the public home of generated classes; tests/models/test_run_specs.py judges them
    "agilerl.models.training": "re-exports of generated classes",
    # two exception classes; tests/training/test_finite.py asserts DivergedError's fields
    "agilerl.training.errors": "exception classes only",
    # typing.Protocol classes the loop is typed against; pyright checks them, not pytest
    "agilerl.algorithms.core.protocols": "protocols only",
}

#: Modules whose tests are not yet under their own name (issue 49 started the renaming):
#: most are exercised by a test file named after a neighbour (the algorithms' through
#: tests/algorithms and tests/cohorts, ``agilerl llm`` through tests/llm/test_llm_tiny.py,
#: the families' pre-flights through tests/training/test_preflight.py),
#: some only through runs. This list may only shrink: give a module its test file and
#: delete its line here (the test below insists).
NOT_YET: frozenset[str] = frozenset(
    {
        # agilerl.algorithms
        "agilerl.algorithms.cispo",
        # agilerl.algorithms.core
        "agilerl.algorithms.core.evolvable",
        "agilerl.algorithms.core.llm",
        "agilerl.algorithms.core.llm_sampling",
        "agilerl.algorithms.core.multi_agent",
        "agilerl.algorithms.core.population",
        "agilerl.algorithms.core.rl_algorithm",
        # agilerl.algorithms
        "agilerl.algorithms.cqn",
        "agilerl.algorithms.ddpg",
        "agilerl.algorithms.dpo",
        "agilerl.algorithms.grpo",
        "agilerl.algorithms.gspo",
        "agilerl.algorithms.hyperparameters",
        "agilerl.algorithms.ippo",
        "agilerl.algorithms.llm_ppo",
        "agilerl.algorithms.llm_reinforce",
        "agilerl.algorithms.maddpg",
        "agilerl.algorithms.matd3",
        "agilerl.algorithms.multi_agent_actor_critic",
        "agilerl.algorithms.neural_bandit",
        "agilerl.algorithms.neural_ts",
        "agilerl.algorithms.neural_ucb",
        "agilerl.algorithms.sft",
        "agilerl.algorithms.td3",
        # agilerl.cli
        "agilerl.cli.llm",
        # agilerl.cohorts
        "agilerl.cohorts.team_views",
        "agilerl.cohorts.views",
        # agilerl.components
        "agilerl.components.action_noise",
        "agilerl.components.exploration",
        "agilerl.components.observations",
        "agilerl.components.on_policy",
        "agilerl.components.replay",
        "agilerl.components.sum_tree",
        # agilerl.distributed
        "agilerl.distributed.group",
        "agilerl.distributed.launcher",
        "agilerl.distributed.liveness",
        # agilerl.families.bandits
        "agilerl.families.bandits.preflight",
        # agilerl.families
        "agilerl.families.base",
        "agilerl.families.context",
        # agilerl.families.llm
        "agilerl.families.llm.family",
        "agilerl.families.llm.preflight",
        "agilerl.families.llm.setup",
        # agilerl.families.multi_agent
        "agilerl.families.multi_agent.cohort_envs",
        "agilerl.families.multi_agent.family",
        "agilerl.families.multi_agent.preflight",
        # agilerl.families.offline
        "agilerl.families.offline.collect",
        "agilerl.families.offline.family",
        # agilerl.families.single_agent
        "agilerl.families.single_agent.evaluation",
        "agilerl.families.single_agent.family",
        "agilerl.families.single_agent.preflight",
        "agilerl.families.single_agent.scoring",
        # agilerl.files
        # agilerl.hpo
        "agilerl.hpo.mutation",
        "agilerl.hpo.placement",
        "agilerl.hpo.selections",
        "agilerl.hpo.tournament",
        # agilerl.llm
        "agilerl.llm.adapters",
        "agilerl.llm.batches",
        "agilerl.llm.data_parallel",
        "agilerl.llm.hub",
        "agilerl.llm.models",
        "agilerl.llm.rewards",
        "agilerl.llm.sampling",
        "agilerl.llm.tiny",
        "agilerl.llm.value_head",
        # agilerl.models
        "agilerl.models.algo",
        "agilerl.models.core_schemas",
        "agilerl.models.env_base",
        "agilerl.models.hpo",
        "agilerl.models.limits",
        "agilerl.models.manifest_base",
        "agilerl.models.validation",
        # agilerl.modules
        "agilerl.modules.base",
        "agilerl.modules.cnn",
        "agilerl.modules.lstm",
        "agilerl.modules.mlp",
        "agilerl.modules.multi_input",
        "agilerl.modules.simba",
        "agilerl.modules.stacked",
        # agilerl.networks
        "agilerl.networks.base",
        # agilerl
        # agilerl.testing
        "agilerl.testing.cooperative",
        "agilerl.testing.multiturn",
        "agilerl.testing.partial_observability",
        "agilerl.testing.scaled",
        "agilerl.testing.transitions",
        # agilerl.training
        "agilerl.training.facade_kwargs",
        "agilerl.training.run_checkpoint",
    }
)

#: Folders of tests/ that mirror no package of agilerl: data, shared helpers, and the
#: tests of the repository's other parts (docs/, codegen/, schemas/).
NOT_PACKAGES = {"data", "support", "docs", "codegen", "schemas"}
#: Data folders still beside the tests that read them, to move under tests/data/ once
#: the work editing those tests has landed (issue 49).
DATA_NOT_YET = {"corpus", "agilerl_manifests", "manifest_corpus"}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name; a package's ``__init__`` and
    ``__main__`` hold re-exports and the entry point, tested through what they name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        found[".".join(path.relative_to(ROOT).with_suffix("").parts)] = path
    return found


def _test_file(path: Path) -> Path:
    """Where the tests of ``agilerl/<folders>/<module>.py`` live."""
    relative = path.relative_to(PACKAGE)
    return TESTS / relative.parent / f"test_{path.stem}.py"


def _allowed(name: str) -> bool:
    return name in ALLOWED or any(
        pattern.endswith(".*") and name.startswith(pattern[:-1]) for pattern in ALLOWED
    )


MODULES = _modules()


def test_every_module_has_its_test_file_or_a_reason():
    missing = [
        f"{name}: {_test_file(path).relative_to(ROOT)}"
        for name, path in MODULES.items()
        if not _test_file(path).exists() and not _allowed(name) and name not in NOT_YET
    ]
    assert not missing, "modules without their test file (or an ALLOWED reason):\n" + "\n".join(
        missing
    )


def test_the_lists_name_only_modules_that_lack_a_test_file():
    """An entry for a module that is gone, or that has its test file now, is deleted."""
    stale = [
        name
        for name in [*(n for n in ALLOWED if not n.endswith(".*")), *NOT_YET]
        if name not in MODULES or _test_file(MODULES[name]).exists()
    ]
    patterns = [
        pattern
        for pattern in ALLOWED
        if pattern.endswith(".*") and not any(m.startswith(pattern[:-1]) for m in MODULES)
    ]
    assert not stale + patterns, f"delete from ALLOWED/NOT_YET: {stale + patterns}"
    assert not set(ALLOWED) & NOT_YET


def test_the_allow_list_stays_short():
    assert len(ALLOWED) < 25


def test_test_folders_mirror_the_package():
    """Every folder of tests/ is a package folder of agilerl, or one of the few others;
    data lives under tests/data/."""
    strays = []
    for folder in sorted(p for p in TESTS.rglob("*") if p.is_dir()):
        relative = folder.relative_to(TESTS)
        if relative.parts[0] in NOT_PACKAGES | DATA_NOT_YET:
            continue
        if any(part == "__pycache__" or part.startswith(".") for part in relative.parts):
            continue  # caches python and tools leave (bytecode, .hypothesis, .pytest_cache)
        if not (PACKAGE / relative).is_dir():
            strays.append(str(relative))
    assert not strays, f"tests/ folders with no agilerl/ package of that path: {strays}"
