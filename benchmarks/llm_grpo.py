"""GRPO and its kin (GSPO, CISPO, LLM-REINFORCE, LLM-PPO) on the tiny local model
(``configs/{grpo,gspo,cispo,llm_reinforce,llm_ppo}.yaml``, and GRPO in the tiny
multi-turn environment, ``configs/grpo_multiturn.yaml``): throughput and memory.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/llm_grpo.py [--steps 10] [--configs grpo gspo]

Builds the tiny assets (``agilerl.llm.tiny``) in a temporary directory, then trains each
manifest with a population of 4 and, for comparison, of 1, each in its own process (so
each peak resident memory is that run's alone). Prints, for each: prompts/s (multi-turn:
episodes/s, an episode starting from one prompt) and generated tokens/s over the training
steps (sampling, scoring and learning; not evaluation),
seconds per generation (training and test-split evaluation of every agent, selection,
mutation) and the process's peak resident memory. The population shares one base model,
so 4 agents should cost little more than 1 (four LoRA adapters and optimiser states).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


#: The manifests of ``configs/`` measured by default.
CONFIGS = ("grpo", "gspo", "cispo", "llm_reinforce", "llm_ppo", "grpo_multiturn")

#: Environment type -> (the environment's method that every training step calls once
#: with its sampled completions, and what it counts: (prompts, generated tokens) from
#: its arguments and result). A reasoning environment scores the completions of a batch
#: of prompts; a multi-turn one plays a batch of episodes, one start prompt each.
COUNTED = {
    "reasoning": (
        "rewards",
        lambda args, result: (len(args[0]), int(args[1].loss_mask.sum())),
    ),
    "multiturn": (
        "rollout",
        lambda args, result: (len(result.rewards), int(result.completions.loss_mask.sum())),
    ),
}


def one_run(directory: Path, pop_size: int, steps: int, config: str) -> dict[str, Any]:
    """Train ``configs/CONFIG.yaml`` in this process; the figures of that run."""
    from agilerl.families.llm import loop as llm_loop
    from agilerl.files.documents import load_document
    from agilerl.models.manifest import parse_manifest
    from agilerl.trainer import LocalTrainer

    counted = {"prompts": 0, "tokens": 0, "seconds": 0.0}
    # Only calls inside a training step count: evaluation calls the same method.
    training = {"now": False}
    doc, _ = load_document(directory / "configs" / f"{config}.yaml")
    env_type = doc["environment"].get("env_type", "reasoning")
    train_step = llm_loop.STEPS[env_type]
    method, count = COUNTED[env_type]

    def counting(call):  # every training step calls it once
        def counted_call(*args):
            result = call(*args)
            if training["now"]:
                prompts, tokens = count(args, result)
                counted["prompts"] += prompts
                counted["tokens"] += tokens
            return result

        return counted_call

    def timed_step(agent, env):  # the loop's own step, timed and counted
        if not getattr(env, "counted", False):
            setattr(env, method, counting(getattr(env, method)))
            env.counted = True
        started, training["now"] = time.perf_counter(), True
        try:
            return train_step(agent, env)
        finally:
            counted["seconds"] += time.perf_counter() - started
            training["now"] = False

    llm_loop.STEPS[env_type] = timed_step
    doc["training"].update(max_steps=steps, pop_size=pop_size)
    trainer = LocalTrainer.from_manifest(parse_manifest(doc), base_dir=directory / "configs")
    trainer.train(verbose=False)
    history = trainer.state.history
    return {
        "config": config,
        "pop_size": pop_size,
        "prompts_per_s": counted["prompts"] / counted["seconds"],
        "generated_tokens_per_s": counted["tokens"] / counted["seconds"],
        "seconds_per_generation": sum(r["seconds"] for r in history) / len(history),
        "generations": len(history),
        "best_test_reward": trainer.state.best_fitness,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="batches per agent")
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument(
        "--child", nargs=3, metavar=("DIR", "POP", "CONFIG"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        directory, pop, config = args.child
        print(json.dumps(one_run(Path(directory), int(pop), args.steps, config)))
        return
    from agilerl.llm.tiny import build_tiny_assets

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        shutil.copytree(ROOT / "configs", directory / "configs")
        build_tiny_assets(directory / "tiny-llm")
        results = {}
        for config in args.configs:
            for pop in (4, 1):
                command = [sys.executable, __file__, "--steps", str(args.steps)]
                out = subprocess.run(
                    [*command, "--child", str(directory), str(pop), config],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                results[config, pop] = json.loads(out.strip().splitlines()[-1])
    for (config, _), r in results.items():
        print(
            f"{config} population {r['pop_size']}: {r['prompts_per_s']:.1f} prompts/s, "
            f"{r['generated_tokens_per_s']:.0f} generated tokens/s in training; "
            f"{r['seconds_per_generation']:.2f} s per generation ({r['generations']} "
            f"generations); peak resident memory {r['peak_rss_mib']:.0f} MiB; best test "
            f"reward {r['best_test_reward']:.3f}"
        )
    for config in args.configs:
        four, one = results[config, 4], results[config, 1]
        print(
            f"{config} peak memory, population 4 against 1: {four['peak_rss_mib']:.0f} / "
            f"{one['peak_rss_mib']:.0f} MiB (+{four['peak_rss_mib'] - one['peak_rss_mib']:.0f} "
            "MiB for 3 more agents: the base model is shared)"
        )


if __name__ == "__main__":
    main()
