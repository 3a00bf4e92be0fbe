"""The manifests the documentation shows are valid, and each algorithm page says what HPO
really mutates.

Pages show manifests as ```yaml blocks (the snippet test runs only Python and shell), so
nothing else would notice a field renamed in a schema or a default range that moved: a
block with a top-level ``algorithm`` is loaded as ``agilerl validate`` loads a file, and
an algorithm page's "What HPO mutates" table must name exactly the hyperparameters the
engine mutates (the class's defaults plus the ranges its example manifest adds).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support import ROOT

from agilerl.models.manifest import load_manifest

DOCS = ROOT / "docs"
_YAML = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def manifest_blocks() -> list[tuple[str, str]]:
    """``(page:line, text)`` of every YAML block that is a whole manifest."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in _YAML.finditer(text):
            data = yaml.safe_load(match.group(1))
            if isinstance(data, dict) and "algorithm" in data and "environment" in data:
                line = text.count("\n", 0, match.start()) + 2
                found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def test_the_pages_show_manifests():
    # one per algorithm page at least, so a change of fence cannot empty the test
    assert len(manifest_blocks()) >= 14


@pytest.mark.parametrize(("where", "text"), manifest_blocks(), ids=lambda v: v.split(":")[0])
def test_a_manifest_on_a_page_is_valid(where, text, tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text(text, encoding="utf-8")
    load_manifest(path)  # raises with every problem, located, if the page has drifted


#: algorithm page -> (engine class, its example manifest)
PAGES = {
    "dqn": ("DQN", "dqn"),
    "rainbow-dqn": ("RainbowDQN", "rainbow_dqn"),
    "ddpg": ("DDPG", "ddpg"),
    "td3": ("TD3", "td3"),
    "ppo": ("PPO", "ppo"),
    "cqn": ("CQN", "cqn"),
    "neural-ucb": ("NeuralUCB", "neural_ucb"),
    "neural-ts": ("NeuralTS", "neural_ts"),
    "ippo": ("IPPO", "ippo"),
    "maddpg": ("MADDPG", "maddpg"),
    "matd3": ("MATD3", "matd3"),
    "grpo": ("GRPO", "grpo"),
    "gspo": ("GSPO", "gspo"),
    "cispo": ("CISPO", "cispo"),
    "llm-reinforce": ("LLMREINFORCE", "llm_reinforce"),
    "llm-ppo": ("LLMPPO", "llm_ppo"),
    "dpo": ("DPO", "dpo"),
    "sft": ("SFT", "sft"),
}


def test_every_registered_algorithm_has_a_page():
    from agilerl.models import ALGO_REGISTRY

    assert sorted(ALGO_REGISTRY.names()) == sorted(cls for cls, _ in PAGES.values())


def mutated_on_page(page: str) -> set[str]:
    """The hyperparameters the page's "What HPO mutates" table lists."""
    text = (DOCS / "algorithms" / f"{page}.md").read_text(encoding="utf-8")
    section = text.split("## What HPO mutates", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", section, re.M))


@pytest.mark.parametrize("page", sorted(PAGES))
def test_an_algorithm_page_lists_what_hpo_mutates(page):
    import agilerl.algorithms as algorithms

    name, config = PAGES[page]
    cls = getattr(algorithms, name)
    manifest = yaml.safe_load((ROOT / "configs" / f"{config}.yaml").read_text())
    expected = set(cls.default_mutable) | set(manifest["mutation"]["rl_hp_selection"])
    assert mutated_on_page(page) == expected


@pytest.mark.parametrize("page", sorted(PAGES))
def test_an_algorithm_page_shows_its_own_algorithm(page):
    text = (DOCS / "algorithms" / f"{page}.md").read_text(encoding="utf-8")
    shown = [yaml.safe_load(m.group(1)) for m in _YAML.finditer(text)]
    assert [m["algorithm"]["name"] for m in shown if "algorithm" in m] == [PAGES[page][0]]
    assert Path(ROOT / "configs" / f"{PAGES[page][1]}.yaml").is_file()


def test_the_benchmark_plots_on_the_page_are_the_ones_the_runs_wrote():
    # docs/img holds copies (the site cannot reach benchmarks/): a rerun of
    # benchmarks/standard_tasks.py must be copied over, or this fails.
    plots = sorted((DOCS / "img").glob("ppo-*.png"))
    assert plots
    for plot in plots:
        written = ROOT / "benchmarks" / "results" / plot.stem / "curves.png"
        assert plot.read_bytes() == written.read_bytes(), f"{plot} differs from {written}"
