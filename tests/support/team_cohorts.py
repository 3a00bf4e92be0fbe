"""What the team cohort tests (IPPO's, MADDPG's and MATD3's) share: a manifest of three
teams on the cue game, its pre-flight's ``training.cohorts`` line, and the cohorts a
manifest's run formed."""

from __future__ import annotations

from typing import Any

#: Small networks, the cue game's size.
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}


def cue_manifest(
    algorithm: dict[str, Any], steps: int, cohorts: bool = True, **sections: Any
) -> dict[str, Any]:
    """Three teams of ``algorithm`` on the cue game for two generations of ``steps // 2``,
    no mutation: they stay one cohort; ``sections`` added (a replay buffer)."""
    return {
        "version": 1,
        "algorithm": algorithm,
        "environment": {"name": "cue", "entrypoint": "agilerl.testing.cooperative:cue_game",
                        "num_envs": 4},
        "network": NET,
        "training": {"max_steps": steps, "evo_steps": steps // 2, "pop_size": 3,
                     "cohorts": cohorts, "seed": 1},
        **sections,
    }  # fmt: skip


def cohort_need(manifest: dict[str, Any]) -> Any:
    """The pre-flight's ``training.cohorts`` line of ``manifest`` (None without one)."""
    from agilerl.trainer import LocalTrainer

    needs = {n.field: n for n in LocalTrainer.from_manifest(manifest).preflight().needs}
    return needs.get("training.cohorts")


def trained_cohorts(
    monkeypatch: Any, learner: type, manifest: dict[str, Any], out: Any
) -> tuple[list[int], list[Any]]:
    """Train ``manifest`` as ``agilerl train`` does, into ``out``: the size of every
    cohort of more than one team ``learner`` was made for, and the trained population."""
    from agilerl.trainer import LocalTrainer

    sizes: list[int] = []
    real = learner.__init__

    def spy(self: Any, agents: Any, view: Any = None) -> None:
        if len(agents) > 1:  # a team alone learns through the same class, on its own view
            sizes.append(len(agents))
        real(self, agents, view)

    monkeypatch.setattr(learner, "__init__", spy)
    population, _ = LocalTrainer.from_manifest(manifest).train(verbose=False, output_dir=out)
    return sizes, population
