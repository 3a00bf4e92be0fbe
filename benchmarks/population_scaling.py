"""What cohorts buy: a population trained as one against one agent at a time.

Usage: ``python benchmarks/population_scaling.py [--algo dqn|ppo|rainbow|td3|ippo|maddpg|matd3]
[--steps 2000] [--pops 1,4,8,16,32] [--width 128] [--reference-steps 10000]
[--skip-reference]``.

Two tables, one torch thread, environments in this process (CartPole natively
vectorised, Pendulum and MPE synchronously), the same seed for both paths:

1. **Scaling** (``--algo dqn``: DQN on CartPole-v1, the reference manifest
   ``benchmarks/agilerl_dqn_cartpole.yaml``; ``--algo ppo``: PPO on CartPole-v1,
   ``benchmarks/agilerl_ppo_cartpole.yaml``; ``--algo rainbow``: RainbowDQN on
   CartPole-v1 with prioritised and n-step replay, ``configs/rainbow_dqn.yaml``;
   ``--algo td3``: TD3 on Pendulum-v1, ``configs/td3.yaml``; ``--algo ippo``: IPPO teams
   on MPE's speaker-listener, ``configs/ippo.yaml``, 8 copies each in this process (give
   ``--steps`` of at least its ``learn_step``, 2048: a turn collects whole rollouts);
   ``--algo maddpg`` / ``matd3``: MADDPG / MATD3 teams on speaker-listener,
   ``configs/maddpg.yaml`` / ``configs/matd3.yaml``, 8 copies each in this process;
   each manifest's hyperparameters and network, its layers
   ``--width`` wide where given, evolution off so the population stays one cohort): for
   each population size, the wall time of one generation of ``--steps`` env steps per
   agent and the training env steps per second of the whole population, cohorts on and
   off, and the ratio.
2. **The manifest itself** (population 4, its mutations on, ``--reference-steps`` per
   agent): training env steps per second with cohorts on and off, and the cohorts each
   generation formed (architecture and activation mutations split a population into
   cohorts of its shapes).

"Training env steps per second" counts the training steps of every agent over the run's
wall time (evaluation included in the wall time, as ``benchmarks/reference_cartpole.py``
and the reference's own figure count it).
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import torch

import agilerl.cohorts.learners as learners
from agilerl.documents import load_document
from agilerl.trainer import LocalTrainer

HERE = Path(__file__).parent
#: ``--algo`` -> the manifest it times (its environment, hyperparameters and network).
MANIFESTS = {
    "dqn": HERE / "agilerl_dqn_cartpole.yaml",
    "ppo": HERE / "agilerl_ppo_cartpole.yaml",
    "rainbow": HERE.parent / "configs" / "rainbow_dqn.yaml",
    "td3": HERE.parent / "configs" / "td3.yaml",
    "ippo": HERE.parent / "configs" / "ippo.yaml",
    "maddpg": HERE.parent / "configs" / "maddpg.yaml",
    "matd3": HERE.parent / "configs" / "matd3.yaml",
}


def _document(
    algo: str, steps: int, pop: int, cohorts: bool, evolve: bool, width: int | None = None
) -> dict:
    document = copy.deepcopy(load_document(MANIFESTS[algo])[0])
    if width is not None:
        network = document["network"]
        network["latent_dim"] = width
        network["encoder_config"]["hidden_size"] = [width]
        network["head_config"]["hidden_size"] = [width]
    document["environment"]["sync"] = True
    training = document["training"]
    # No early stop at a target score: every run trains its whole budget.
    training.update(
        max_steps=steps, pop_size=pop, cohorts=cohorts, seed=42, eval_steps=500, target_score=None
    )
    training["evo_steps"] = min(training["evo_steps"], steps)
    if not evolve:
        training["hpo"] = False
    return document


def _train(document: dict, device: str) -> tuple[float, int, list[list[int]]]:
    """Wall seconds, training env steps of all agents, the cohorts of each generation."""
    formed: list[list[int]] = []
    real = learners.form_cohorts

    def recording(agents, enabled=True):
        groups = real(agents, enabled)
        formed.append([len(group) for group in groups])
        return groups

    learners.form_cohorts = recording
    try:
        trainer = LocalTrainer.from_manifest(document, device=device)
        started = time.perf_counter()
        population, _ = trainer.train(verbose=False)[:2]
        wall = time.perf_counter() - started
    finally:
        learners.form_cohorts = real
    return wall, sum(int(agent.steps) for agent in population), formed


def _described(document: dict) -> str:
    """The algorithm, environment and layer widths of ``document``."""
    network = document["network"]
    layers = [*network["encoder_config"]["hidden_size"], network["latent_dim"]]
    layers += network["head_config"]["hidden_size"]
    return (
        f"{document['algorithm']['name']}, {document['environment']['name']}, layers "
        f"{'/'.join(map(str, layers))}"
    )


def scaling(algo: str, steps: int, pops: list[int], width: int | None, device: str) -> None:
    print(
        f"{_described(_document(algo, steps, 1, True, False, width))}, one generation of "
        f"{steps:,} env steps per agent, evolution off"
    )
    print(f"{'pop':>4} | {'one at a time':>22} | {'cohorts':>22} | speed-up")
    base = None
    for pop in pops:
        cells = []
        for cohorts in (False, True):
            wall, trained, _ = _train(_document(algo, steps, pop, cohorts, False, width), device)
            cells.append((wall, trained / wall))
        (off_wall, off_rate), (on_wall, on_rate) = cells
        base = base or on_wall
        print(
            f"{pop:>4} | {off_wall:7.1f} s {off_rate:8,.0f} st/s | {on_wall:7.1f} s "
            f"{on_rate:8,.0f} st/s | {off_wall / on_wall:4.2f}x  (cohort wall = "
            f"{on_wall / base:4.1f}x that of pop {pops[0]})"
        )


def reference(algo: str, steps: int, device: str) -> None:
    print(f"\n{MANIFESTS[algo].name} itself, population 4, {steps:,} env steps per agent")
    for cohorts in (False, True):
        wall, trained, formed = _train(_document(algo, steps, 4, cohorts, evolve=True), device)
        shapes = " ".join("+".join(map(str, sizes)) for sizes in formed)
        print(
            f"cohorts {'on ' if cohorts else 'off'}: {trained / wall:8,.0f} training env "
            f"steps/s ({wall:.1f} s); cohort sizes per generation: {shapes}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=sorted(MANIFESTS), default="dqn")
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--pops", default="1,4,8,16,32")
    parser.add_argument("--width", type=int, default=None, help="default: the manifest's")
    parser.add_argument("--reference-steps", type=int, default=10_000)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--device", default="cpu", help="where the agents live (cuda: a GPU)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    _train(
        _document(args.algo, 200, 2, True, evolve=False), args.device
    )  # imports, first calls: untimed
    scaling(args.algo, args.steps, [int(p) for p in args.pops.split(",")], args.width, args.device)
    if not args.skip_reference:
        reference(args.algo, args.reference_steps, args.device)


if __name__ == "__main__":
    main()
