"""This project beside Stable-Baselines3 on the standard tasks, at equal budgets.

Usage::

    python benchmarks/standard_tasks.py TASK [TASK ...] [--steps 200000] [--seeds 0,1,2]
        [--sb3-python /path/to/sb3/venv/bin/python] [--runs single,population,sb3]
        [--evo-steps N]
        [--out benchmarks/results] [--plot-only]

Tasks (:data:`TASKS`): ``ppo-lunarlander``, ``ppo-halfcheetah``, ``ppo-hopper``,
``td3-halfcheetah``, ``td3-hopper``, ``ddpg-halfcheetah``, ``ddpg-hopper``, ``ppo-breakout``,
``dqn-pong``; each is a manifest of ``configs/benchmarks/`` (its hyperparameters and where
they came from are in its comments).

For every task and seed, three runs of ``--steps`` environment steps per agent:

* ``single``: this project, the manifest with one agent and no HPO;
* ``population``: this project, the manifest as written (a population with HPO: it
  spends population x steps in all);
* ``sb3``: Stable-Baselines3 with the same hyperparameters, translated from the manifest
  (:data:`SB3_TRANSLATIONS`; what cannot be the same is said there), run by
  ``benchmarks/sb3_side.py`` in SB3's own venv (``--sb3-python``; SB3 is never a
  dependency of this project). Make one with ``python3 -m venv /tmp/sb3 &&
  /tmp/sb3/bin/pip install torch==2.13.0 && /tmp/sb3/bin/pip install stable-baselines3
  'gymnasium[box2d,mujoco,atari]' opencv-python-headless``.

Each run is evaluated every ``evo_steps`` of the manifest (this project: at its
generations' end, the agents' own evaluation; SB3: the same number of deterministic
episodes on a separate environment). SB3 runs in a subprocess beside this project's
runs: one torch thread each, the two cores of a small machine both busy.

Writes ``OUT/TASK/results.json`` (every curve: environment steps per agent, the
evaluation return, training seconds) and ``OUT/TASK/curves.png`` (mean and spread over
the seeds against environment steps per agent, and against environment steps in all),
and prints a table of final returns (mean and standard deviation over seeds) and wall
times. Each generation of this project's runs prints a line (steps per agent, best and
mean fitness, seconds) to stderr. ``--plot-only`` redraws from ``results.json``.

Runs are added to what ``OUT/TASK/results.json`` already holds: a seed run again replaces
that seed's curve of the same run, and the others are kept, so ``--seeds 2 --runs
population`` adds one population seed to a task measured before (and ``--out`` elsewhere
then merges nothing). The budget must be the one the file was measured at; ``--fresh``
starts the file anew.

The published budgets (1M steps for LunarLander and MuJoCo, 10M for Atari) take hours per
seed on two cores; run them with ``--steps 1000000`` on a larger machine, one task per
process.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agilerl.files.atomic import write_text
from agilerl.training.callbacks import Callback

if TYPE_CHECKING:
    from agilerl.training.state import RunState

HERE = Path(__file__).parent
CONFIGS = HERE.parent / "configs" / "benchmarks"


@dataclass(frozen=True)
class Task:
    manifest: str  #: file of configs/benchmarks
    published: str  #: the published figure, for context (source, budget)


#: The published figures are RL Zoo's (rl-baselines3-zoo benchmark.md: one trained agent,
#: deterministic evaluation; MuJoCo v3 and Atari NoFrameskip-v4, LunarLander-v2), for
#: context only: another version of each task, a longer budget, one run.
TASKS = {
    "ppo-lunarlander": Task(
        "ppo_lunarlander.yaml", "RL Zoo PPO, LunarLander-v2, 1M steps: 242 +- 32"
    ),
    "ppo-halfcheetah": Task(
        "ppo_halfcheetah.yaml", "RL Zoo PPO, HalfCheetah-v3, 1M steps: 5,819 +- 664"
    ),
    "ppo-hopper": Task("ppo_hopper.yaml", "RL Zoo PPO, Hopper-v3, 1M steps: 2,410 +- 10"),
    "td3-halfcheetah": Task(
        "td3_halfcheetah.yaml", "RL Zoo TD3, HalfCheetah-v3, 1M steps: 9,656 +- 970"
    ),
    "td3-hopper": Task("td3_hopper.yaml", "RL Zoo TD3, Hopper-v3, 1M steps: 3,606 +- 4"),
    "ddpg-halfcheetah": Task(
        "ddpg_halfcheetah.yaml", "RL Zoo has no DDPG on MuJoCo; its TD3, HalfCheetah-v3, 1M: 9,656"
    ),
    "ddpg-hopper": Task(
        "ddpg_hopper.yaml", "RL Zoo has no DDPG on MuJoCo; its TD3, Hopper-v3, 1M: 3,606"
    ),
    "ppo-breakout": Task("ppo_breakout.yaml", "RL Zoo PPO, BreakoutNoFrameskip-v4, 10M: 398 +- 33"),
    "dqn-pong": Task("dqn_pong.yaml", "RL Zoo DQN, PongNoFrameskip-v4, 10M: 20.6 +- 0.6"),
}


# -- Stable-Baselines3's hyperparameters, translated from a manifest ----------------------
def _layers(network: dict[str, Any]) -> tuple[list[int], str]:
    """This project's MLP network (encoder, latent, head) as SB3's ``net_arch`` list and
    activation: the same hidden layers in the same order. A linear latent (the
    encoder's ``output_activation: Identity``) composes with the head's first layer, so
    it is no layer of its own."""
    encoder = network.get("encoder_config", {})
    head = network.get("head_config", {})
    if network.get("arch") == "cnn":
        # SB3's CnnPolicy: the Nature CNN to 512 features (this project's latent), then
        # net_arch: the head's hidden layers
        return list(head.get("hidden_size", [64])), "relu"
    latent = (
        []
        if str(encoder.get("output_activation")).lower() == "identity"
        else [network.get("latent_dim", 32)]
    )
    hidden = [*encoder.get("hidden_size", [64]), *latent, *head.get("hidden_size", [64])]
    activation = str(encoder.get("activation", "ReLU")).lower()
    return hidden, activation


#: Evaluation episodes at least (this project evaluates ``eval_loop`` rounds of one
#: episode per environment copy; SB3 the same number of episodes).
EVAL_EPISODES = 5


def _eval_loop(doc: dict[str, Any]) -> int:
    copies = int(doc["environment"].get("num_envs", 1))
    return max(int(doc.get("training", {}).get("eval_loop", 1)), -(-EVAL_EPISODES // copies))


def _ppo(doc: dict[str, Any]) -> dict[str, Any]:
    algo, env = doc["algorithm"], doc["environment"]
    n_envs = int(env.get("num_envs", algo.get("num_envs", 1)))
    hidden, activation = _layers(doc.get("network", {}))
    normalize = algo.get("normalize")
    return {
        "algo": "PPO",
        "n_envs": n_envs,
        "kwargs": {
            "n_steps": int(algo.get("learn_step", 2048)) // n_envs,
            "batch_size": int(algo.get("batch_size", 128)),
            "n_epochs": int(algo.get("update_epochs", 4)),
            "learning_rate": float(algo.get("lr", 1e-4)),
            "gamma": float(algo.get("gamma", 0.99)),
            "gae_lambda": float(algo.get("gae_lambda", 0.95)),
            "clip_range": float(algo.get("clip_coef", 0.2)),
            "ent_coef": float(algo.get("ent_coef", 0.01)),
            "vf_coef": float(algo.get("vf_coef", 0.5)),
            "max_grad_norm": float(algo.get("max_grad_norm", 0.5)),
        },
        "policy_kwargs": {"net_arch": {"pi": hidden, "vf": hidden}, "activation": activation},
        "normalize": None
        if not normalize
        else {
            "norm_obs": bool(normalize.get("observation", True)),
            "norm_reward": bool(normalize.get("reward", True)),
        },
    }


def _update_rate(learn_step: int, n_envs: int) -> dict[str, int]:
    """One update every ``learn_step`` env steps as SB3's ``train_freq`` (vector steps of
    ``n_envs`` copies between updates) and ``gradient_steps`` (updates each time)."""
    return {
        "train_freq": max(1, learn_step // n_envs),
        "gradient_steps": max(1, n_envs // learn_step),
    }


def _actor_critic(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def translate(doc: dict[str, Any]) -> dict[str, Any]:
        algo, env, training = doc["algorithm"], doc["environment"], doc.get("training", {})
        n_envs = int(env.get("num_envs", 1))
        hidden, activation = _layers(doc.get("network", {}))
        kwargs = {
            # SB3 has one learning rate for actor and critic: the critic's (the one
            # that sets the pace of the TD updates).
            "learning_rate": float(algo.get("lr_critic", 1e-3)),
            "batch_size": int(algo.get("batch_size", 64)),
            "gamma": float(algo.get("gamma", 0.99)),
            "tau": float(algo.get("tau", 0.005)),
            "buffer_size": int(doc.get("replay_buffer", {}).get("max_size", 1_000_000)),
            "learning_starts": int(training.get("learning_delay", 0)),
            **_update_rate(int(algo.get("learn_step", 1)), n_envs),
        }
        if name == "TD3":  # SB3's DDPG has no delayed actor (TD3 with policy_delay 1)
            kwargs["policy_delay"] = int(algo.get("policy_freq", 2))
        return {
            "algo": name,
            "n_envs": n_envs,
            "kwargs": kwargs,
            "policy_kwargs": {"net_arch": hidden, "activation": activation},
            "action_noise": float(algo.get("expl_noise", 0.1)),
        }

    return translate


def _dqn(doc: dict[str, Any]) -> dict[str, Any]:
    algo, env, training = doc["algorithm"], doc["environment"], doc.get("training", {})
    n_envs = int(env.get("num_envs", 1))
    hidden, activation = _layers(doc.get("network", {}))
    eps_start = float(training.get("eps_start", 1.0))
    eps_end = float(training.get("eps_end", 0.1))
    # This project's epsilon decays by eps_decay per vector step; SB3's falls linearly
    # over exploration_fraction of the run: the fraction where this one reaches eps_end,
    # above 1 when the run ends before that (SB3's schedule then never gets there either).
    decay_steps = n_envs * math.log(eps_end / eps_start) / math.log(training["eps_decay"])
    learn_step = int(algo.get("learn_step", 4))
    return {
        "algo": "DQN",
        "n_envs": n_envs,
        "kwargs": {
            "learning_rate": float(algo.get("lr", 1e-4)),
            "batch_size": int(algo.get("batch_size", 64)),
            "gamma": float(algo.get("gamma", 0.99)),
            "buffer_size": int(doc.get("replay_buffer", {}).get("max_size", 100_000)),
            "learning_starts": int(training.get("learning_delay", 0)),
            **_update_rate(int(algo.get("learn_step", 4)), n_envs),
            # this project's soft update of tau at every learning step: SB3 updates the
            # target once per vector step, as many of ours at once
            "tau": 1 - (1 - float(algo.get("tau", 0.001))) ** max(1, n_envs // learn_step),
            "target_update_interval": learn_step,
            "exploration_initial_eps": eps_start,
            "exploration_final_eps": eps_end,
            "exploration_fraction": decay_steps / int(training["max_steps"]),
        },
        "policy_kwargs": {"net_arch": hidden, "activation": activation},
    }


#: Algorithm -> its translation into SB3's keyword arguments. Not the same in SB3: one
#: learning rate for actor and critic; DDPG without a delayed actor or target smoothing;
#: this project's networks are an encoder, a latent layer and a head (the translation
#: keeps their hidden layers); SB3's Atari CNN policy is not translated (SB3's own
#: ``CnnPolicy`` with its defaults runs there).
SB3_TRANSLATIONS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "PPO": _ppo,
    "TD3": _actor_critic("TD3"),
    "DDPG": _actor_critic("DDPG"),
    "DQN": _dqn,
}


# -- runs ---------------------------------------------------------------------------------
def _manifest(task: Task, steps: int, evo_steps: int | None) -> dict[str, Any]:
    """The task's manifest with the run's budget (and evaluation interval, if given)."""
    from agilerl.files.documents import load_document

    doc = copy.deepcopy(load_document(CONFIGS / task.manifest)[0])
    training = doc.setdefault("training", {})
    training["max_steps"] = steps
    if evo_steps is not None:
        training["evo_steps"] = evo_steps
    return doc


def best_and_mean(record: dict[str, Any]) -> tuple[float, float]:
    """A generation's best and mean fitness over its agents."""
    fitness = [a["fitness"] for a in record["agents"]]
    return max(fitness), float(np.mean(fitness))


class GenerationLines(Callback):
    """Prints each generation's line to stderr: the runs are otherwise silent (no progress
    bar beside SB3's process) and take up to an hour each."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.perf_counter()

    def line(self, record: dict[str, Any]) -> str:
        best, mean = best_and_mean(record)
        return (
            f"{self.label}: {int(record['steps']):,} steps per agent, best {best:.1f}, "
            f"mean {mean:.1f}, "
            f"{time.perf_counter() - self.started:,.0f} s"
        )

    def on_generation(self, state: RunState) -> None:
        print(self.line(state.history[-1]), file=sys.stderr, flush=True)


def ours(
    task: Task, seed: int, steps: int, population: bool, evo_steps: int | None = None
) -> dict[str, Any]:
    """This project's run: the curve of its best agent (steps per agent, fitness) and of
    its population's mean, and the training seconds."""
    import torch

    from agilerl.trainer import LocalTrainer

    torch.set_num_threads(1)
    doc = _manifest(task, steps, evo_steps)
    training = doc["training"]
    training.update(seed=seed, target_score=None, eval_loop=_eval_loop(doc))
    if not population:
        training.update(pop_size=1, hpo=False)
    trainer = LocalTrainer.from_manifest(doc)
    label = f"{task.manifest} seed {seed} {'population' if population else 'single'}"
    started = time.perf_counter()
    trainer.train(verbose=False, callbacks=[GenerationLines(label)])
    wall = time.perf_counter() - started
    assert trainer.state is not None
    history = trainer.state.history
    return {
        "steps": [int(r["steps"]) for r in history],
        "best": [best_and_mean(r)[0] for r in history],
        "mean": [best_and_mean(r)[1] for r in history],
        "agents": int(training.get("pop_size", 1)) if population else 1,
        "seconds": wall,
    }


def sb3_args(task: Task, seed: int, steps: int, evo_steps: int | None = None) -> dict[str, Any]:
    """The JSON argument of ``sb3_side.py`` for this task and run (its docstring)."""
    doc = _manifest(task, steps, evo_steps)
    args = SB3_TRANSLATIONS[doc["algorithm"]["name"]](doc)
    training, environment = doc["training"], doc["environment"]
    eval_episodes = _eval_loop(doc) * int(environment.get("num_envs", 1))
    atari = environment.get("atari")
    args.update(
        env=environment["name"],
        env_kwargs=environment.get("config") or {},
        atari=None if atari is None else {"frame_stack": int(atari.get("frame_stack", 4))},
        steps=steps,
        seed=seed,
        eval_every=int(training.get("evo_steps", 10_000)),
        eval_episodes=eval_episodes,
    )
    return args


def sb3(
    task: Task, seed: int, steps: int, python: str, evo_steps: int | None = None
) -> subprocess.Popen[str]:
    """SB3's run, started: ``sb3_side.py`` in SB3's venv (read with :func:`sb3_curve`)."""
    args = sb3_args(task, seed, steps, evo_steps)
    return subprocess.Popen(
        [python, str(HERE / "sb3_side.py"), json.dumps(args)],
        stdout=subprocess.PIPE,
        text=True,
    )


def sb3_curve(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate()
    if process.returncode:
        raise RuntimeError(f"sb3_side.py failed with exit status {process.returncode}")
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {
        "steps": [line["steps"] for line in lines],
        "best": [line["mean"] for line in lines],
        "mean": [line["mean"] for line in lines],
        "agents": 1,
        "seconds": lines[-1]["seconds"] if lines else float("nan"),
    }


# -- figures ------------------------------------------------------------------------------
LABELS = {
    "single": "this project, one agent",
    "population": "this project, population with HPO (best agent)",
    "sb3": "Stable-Baselines3",
}


def _band(curves: list[dict[str, Any]], x_scale: int = 1) -> tuple[np.ndarray, ...]:
    """Mean and spread (min, max) over seeds on a common grid of steps."""
    grid = sorted({s for c in curves for s in c["steps"]})
    values = np.array([np.interp(grid, c["steps"], c["best"]) for c in curves])
    return np.asarray(grid) * x_scale, values.mean(0), values.min(0), values.max(0)


def plot(name: str, results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for run, curves in results["runs"].items():
        if not curves:
            continue
        agents = curves[0]["agents"]
        for ax, scale in zip(axes, (1, agents), strict=True):
            x, mean, low, high = _band(curves, scale)
            ax.plot(x, mean, label=f"{LABELS[run]} ({len(curves)} seeds)")
            ax.fill_between(x, low, high, alpha=0.2)
    axes[0].set_xlabel("environment steps per agent")
    axes[1].set_xlabel("environment steps in all (a population spends more)")
    axes[0].set_ylabel("evaluation return")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{name} ({results['published']}, for context)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(name: str, results: dict[str, Any]) -> str:
    rows = [
        f"{name}: final evaluation return over seeds (mean +- std), seconds per run (this "
        "project: the whole run, evaluations included; SB3: training only)"
    ]
    for run, curves in results["runs"].items():
        if not curves:
            continue
        finals = [c["best"][-1] for c in curves]
        spread = statistics.pstdev(finals) if len(finals) > 1 else 0.0
        seconds = np.mean([c["seconds"] for c in curves])
        each = ", ".join(f"seed {c['seed']}: {c['best'][-1]:.1f}" for c in curves)
        rows.append(
            f"  {LABELS[run]:<48} {np.mean(finals):10.1f} +- {spread:8.1f}   {seconds:8.0f} s"
            f"   ({each})"
        )
    rows.append(f"  published: {results['published']}")
    return "\n".join(rows)


# -- main ---------------------------------------------------------------------------------
RUNS = ("single", "population", "sb3")


def check_budget(earlier: dict[str, Any] | None, new: dict[str, Any]) -> None:
    """Refuse to add ``new`` to results measured at another task or budget."""
    if earlier is None or all(earlier.get(k) == new[k] for k in ("task", "steps", "evo_steps")):
        return
    raise SystemExit(
        "results.json of {} was measured at --steps {} --evo-steps {}, not {} / {}: "
        "give another --out, or --fresh to start it anew".format(
            new["task"],
            earlier.get("steps"),
            earlier.get("evo_steps"),
            new["steps"],
            new["evo_steps"],
        )
    )


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def merged(
    earlier: dict[str, Any] | None, new: dict[str, Any], fresh: bool = False
) -> dict[str, Any]:
    """``new`` added to the ``earlier`` results of the same task and budget: a curve of a
    (run, seed) measured again replaces the earlier one, every other curve is kept."""
    if earlier is None or fresh:
        return new
    check_budget(earlier, new)
    runs: dict[str, list[dict[str, Any]]] = {}
    for run in RUNS:
        curves = {c["seed"]: c for c in earlier["runs"].get(run, [])}
        curves.update({c["seed"]: c for c in new["runs"].get(run, [])})
        if curves:
            runs[run] = [curves[seed] for seed in sorted(curves)]
    seeds = sorted({c["seed"] for curves in runs.values() for c in curves})
    return {
        **earlier,
        **{k: v for k, v in new.items() if k != "runs"},
        "seeds": seeds,
        "runs": runs,
    }


def header(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The results of ``args``' runs of ``name`` before any has run."""
    task = TASKS[name]
    return {
        "task": name,
        "manifest": f"configs/benchmarks/{task.manifest}",
        "steps": args.steps,
        "evo_steps": args.evo_steps,
        "seeds": args.seeds,
        "published": task.published,
        "runs": {run: [] for run in RUNS if run in args.runs},
    }


def run_task(name: str, args: argparse.Namespace) -> dict[str, Any]:
    task = TASKS[name]
    results = header(name, args)
    for seed in args.seeds:
        started = (
            sb3(task, seed, args.steps, args.sb3_python, args.evo_steps)
            if "sb3" in args.runs
            else None
        )
        for run in ("single", "population"):
            if run in args.runs:
                population = run == "population"
                curve = ours(task, seed, args.steps, population, args.evo_steps)
                results["runs"][run].append({**curve, "seed": seed})
                print(f"{name} seed {seed} {run}: {curve['best'][-1]:.1f}", flush=True)
        if started is not None:
            curve = sb3_curve(started)
            results["runs"]["sb3"].append({**curve, "seed": seed})
            print(f"{name} seed {seed} sb3: {curve['best'][-1]:.1f}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("tasks", nargs="+", choices=sorted(TASKS))
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument(
        "--evo-steps",
        type=int,
        default=None,
        help="steps per agent between evaluations (both sides; this project's generation, "
        "so the population's HPO too); default: the manifest's evo_steps",
    )
    parser.add_argument("--runs", default="single,population,sb3")
    parser.add_argument("--sb3-python", default="/tmp/sb3venv/bin/python")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start OUT/TASK/results.json anew instead of adding these runs to it",
    )
    args = parser.parse_args()
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.runs = args.runs.split(",")
    for name in args.tasks:
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "results.json"
        earlier = _read(path)
        if args.plot_only:
            if earlier is None:
                raise SystemExit(f"--plot-only: {path} does not exist")
            results = earlier
        else:
            if not args.fresh:  # checked before the runs: a mismatch costs nothing
                check_budget(earlier, header(name, args))
            new = run_task(name, args)
            # Read again: another process may have added its seeds meanwhile (seeds are
            # run in parallel processes into one --out).
            results = merged(_read(path), new, args.fresh)
            # Atomic: a parallel process reading the file never sees half of it.
            write_text(path, json.dumps(results, indent=1))
        plot(name, results, folder / "curves.png")
        print(table(name, results))
        print(f"  curves: {folder / 'curves.png'}")


if __name__ == "__main__":
    sys.exit(main())
