"""Experiment tracking: the algorithms' learn metrics, the per-generation history, the
TensorBoard event files and W&B's offline run read back with their own readers, the
trainer drawing the fitness plot with the algorithm's main loss, and the pre-flight
refusing a tracker whose package is absent."""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import pytest
import torch
from gymnasium import spaces
from support import ROOT

from agilerl.algorithms import DQN, PPO
from agilerl.cli import main
from agilerl.components.exploration import EpsilonSchedule
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.models.env import GymEnvSpec
from agilerl.trainer import LocalTrainer
from agilerl.training.preflight import PreflightError
from agilerl.training.tracking import MeanMetrics, scalars, texts

#: A few hundred steps per agent: two agents, two or three generations, seconds.
PPO_SMALL = [
    "--set", "training.max_steps=384",
    "--set", "training.evo_steps=128",
    "--set", "training.pop_size=2",
    "--set", "training.eval_steps=40",
    "--set", "algorithm.learn_step=64",
    "--set", "algorithm.batch_size=32",
    "--set", "algorithm.update_epochs=2",
    "--set", "environment.num_envs=2",
]  # fmt: skip
PPO_TAGS = ["loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"]


def _dqn_trainer(tmp_path: Path, **training) -> LocalTrainer:
    return LocalTrainer.from_manifest(
        {
            "algorithm": {"name": "DQN", "batch_size": 32, "learn_step": 4},
            "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
            "training": {
                "max_steps": 400,
                "evo_steps": 200,
                "pop_size": 2,
                "eval_steps": 40,
                "seed": 3,
                **training,
            },
            "replay_buffer": {"max_size": 2000},
            "mutation": {},
            "selection_strategy": {},
        }
    )


def _event_scalars(log_dir: Path) -> tuple[dict[str, dict[int, float]], list[str]]:
    """``{tag: {step: value}}`` and the text tags of TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    reader = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "tensors": 0})
    reader.Reload()
    tags = reader.Tags()
    found = {t: {e.step: e.value for e in reader.Scalars(t)} for t in tags["scalars"]}
    return found, [t.removesuffix("/text_summary") for t in tags["tensors"]]


# -- the metrics protocol ----------------------------------------------------------------
def test_mean_metrics_averages_each_metric_over_the_calls_that_reported_it():
    log = MeanMetrics()
    log.add({"loss": 1.0, "q": 4.0})
    log.add({"loss": 3.0})
    assert log.means() == {"loss": 2.0, "q": 4.0}
    assert MeanMetrics().means() == {}


def test_dqn_learn_reports_its_declared_metrics():
    obs, act = spaces.Box(-1, 1, (3,)), spaces.Discrete(2)
    agent = DQN(obs, act, net_config={"encoder_config": {"hidden_size": [8]}}, seed=0)
    batch = {
        "obs": torch.rand(16, 3),
        "action": torch.randint(0, 2, (16,)),
        "reward": torch.rand(16),
        "next_obs": torch.rand(16, 3),
        "done": torch.zeros(16),
    }
    with torch.no_grad():
        q_taken = agent.actor(batch["obs"]).gather(1, batch["action"][:, None])
    metrics = agent.learn(batch)
    assert set(metrics) == set(DQN.learn_metrics) and DQN.main_loss in metrics
    assert metrics["q_mean"] == pytest.approx(float(q_taken.mean()), rel=1e-5)


def test_ppo_learn_reports_its_declared_metrics():
    env = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2, sync=True))
    agent = PPO(env.single_observation_space, env.single_action_space, learn_step=32, seed=0)
    obs, info = env.reset(seed=0)
    agent.collect_rollouts(env, obs, info)
    metrics = agent.learn()
    env.close()
    assert set(metrics) == set(PPO.learn_metrics) and PPO.main_loss in metrics
    assert all(math.isfinite(v) for v in metrics.values())


def test_a_record_flattens_into_tags_once_for_every_backend():
    record = {
        "steps": 100,
        "env_steps_per_s": 500.0,
        "agents": [
            {
                "index": 0, "fitness": 10.0, "train_score": None, "metrics": {"td_loss": 0.5},
                "mutable": {"lr": 0.001}, "env_steps_per_s": 400.0, "mutation": "None",
                "hyperparameters": {"lr": 0.001, "double": False},
            },
            {
                "index": 3, "fitness": 20.0, "train_score": 15.0,
                "metrics": {"td_loss": math.nan}, "mutable": {"lr": 0.002},
                "env_steps_per_s": 600.0, "mutation": "lr", "hyperparameters": {"lr": 0.002},
            },
        ],
    }  # fmt: skip
    assert scalars(record) == {
        "eval/best_fitness": 20.0,
        "eval/mean_fitness": 15.0,
        "time/env_steps_per_s": 500.0,
        "eval/fitness/agent_0": 10.0,
        "train/td_loss/agent_0": 0.5,  # no training score: no episode ended
        "hyperparameters/lr/agent_0": 0.001,
        "time/env_steps_per_s/agent_0": 400.0,
        "eval/fitness/agent_1": 20.0,
        "rollout/train_score/agent_1": 15.0,  # a NaN loss is left out, not plotted
        "hyperparameters/lr/agent_1": 0.002,
        "time/env_steps_per_s/agent_1": 600.0,
    }
    words = texts(record)
    assert words["mutation/agent_1"] == "agent 3: lr"  # the slot's line names the agent
    assert json.loads(words["hyperparameters/agent_0"]) == {"lr": 0.001, "double": False}


# -- TensorBoard ----------------------------------------------------------------------------
def test_tensorboard_flag_writes_every_generation_and_agent(tmp_path, capsys):
    pytest.importorskip("tensorboard", reason="tensorboard not installed (agilespec[tensorboard])")
    out, log_dir = tmp_path / "run", tmp_path / "tb"
    args = [str(ROOT / "configs/ppo.yaml"), *PPO_SMALL, "--out", str(out)]
    rc = main(["train", *args, "--tensorboard", str(log_dir), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    history = json.loads((out / "history.json").read_text())
    found, text_tags = _event_scalars(log_dir)

    assert len(history) == 3
    steps = [r["steps"] for r in history]
    for slot in range(2):
        who = f"agent_{slot}"
        for name in PPO_TAGS:
            assert f"train/{name}/{who}" in found
        for tag in ("eval/fitness", "time/env_steps_per_s"):
            assert sorted(found[f"{tag}/{who}"]) == steps
        # A training score only where an episode ended in the generation.
        scored = [r["steps"] for r in history if r["agents"][slot]["train_score"] is not None]
        assert scored and sorted(found[f"rollout/train_score/{who}"]) == scored
        for name in ("lr", "batch_size", "learn_step"):
            assert f"hyperparameters/{name}/{who}" in found
        assert {f"mutation/{who}", f"hyperparameters/{who}"} <= set(text_tags)
        for record in history:
            agent, step = record["agents"][slot], record["steps"]
            # The event files hold what history.json holds (float32 in the event file).
            assert found[f"eval/fitness/{who}"][step] == pytest.approx(agent["fitness"])
            assert found[f"train/value_loss/{who}"][step] == pytest.approx(
                agent["metrics"]["value_loss"], rel=1e-6
            )
            assert found[f"hyperparameters/lr/{who}"][step] == pytest.approx(
                agent["mutable"]["lr"], rel=1e-6
            )
            assert agent["metrics"]["updates"] >= 1  # learn ran and reported
    best = {r["steps"]: max(a["fitness"] for a in r["agents"]) for r in history}
    assert found["eval/best_fitness"] == pytest.approx(best)
    assert "manifest" in text_tags
    # The evolved manifest does not send a run of it into this run's event files.
    assert "tensorboard_log_dir" not in (out / "manifest.yaml").read_text()


def test_dqn_tensorboard_reports_td_loss_mean_q_and_epsilon(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard not installed (agilespec[tensorboard])")
    trainer = _dqn_trainer(tmp_path, tensorboard_log_dir=str(tmp_path / "tb"))
    trainer.train(verbose=False)
    found, _ = _event_scalars(tmp_path / "tb")
    history = trainer.state.history
    for record in history:
        step = record["steps"]
        epsilon = EpsilonSchedule().at(step - 2, 2)  # its last step
        for slot, agent in enumerate(record["agents"]):
            metrics = agent["metrics"]
            assert set(metrics) == {"td_loss", "q_mean", "epsilon"}
            assert metrics["epsilon"] == pytest.approx(epsilon)
            for name, value in metrics.items():
                assert found[f"train/{name}/agent_{slot}"][step] == pytest.approx(value, rel=1e-6)


def test_tracking_settings_may_change_when_a_run_resumes(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard not installed (agilespec[tensorboard])")
    first = _dqn_trainer(tmp_path, max_steps=200, checkpoint_path=str(tmp_path / "ckpt.pt"))
    first.train(verbose=False)
    resumed = _dqn_trainer(
        tmp_path,
        checkpoint_path=str(tmp_path / "ckpt.pt"),
        tensorboard_log_dir=str(tmp_path / "tb"),
    )
    resumed.resume_from_checkpoint = tmp_path / "ckpt.pt"
    resumed.train(verbose=False)
    found, _ = _event_scalars(tmp_path / "tb")
    assert sorted(found["eval/best_fitness"]) == [400]  # the generation this run trained


# -- Weights & Biases ------------------------------------------------------------------------
def _wandb_records(path: Path):
    """The records of a W&B run file (``run-<id>.wandb``): a LevelDB-style log (32 KiB
    blocks of chunks: checksum, length, type) after a 7-byte ``:W&B`` header, each record
    a ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic) == (b":W&B", 0xBEE1), "not a W&B run file"
    block, pos, pending = 32768, 7, b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a chunk header
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk  # full/first, middle/last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


@pytest.mark.slow
def test_wandb_offline_run_holds_the_same_metrics(tmp_path, monkeypatch, capsys):
    pytest.importorskip("wandb", reason="wandb not installed (agilespec[wandb])")
    monkeypatch.setenv("WANDB_MODE", "offline")  # nothing leaves the machine
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    out = tmp_path / "run"
    args = [str(ROOT / "configs/ppo.yaml"), *PPO_SMALL, "--out", str(out), "--quiet"]
    rc = main(["train", *args, "--wandb", "agilerl-test"])
    assert rc == 0, capsys.readouterr().err
    history = json.loads((out / "history.json").read_text())
    (run_file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    logged, config = {}, {}
    for record in _wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = {
                i.key or "/".join(i.nested_key): json.loads(i.value_json)
                for i in record.history.item
            }
            logged[record.history.step.num] = items
        elif kind == "run":  # the run's settings, its config among them
            assert record.run.project == "agilerl-test"
            config.update({i.key: json.loads(i.value_json) for i in record.run.config.update})
    assert sorted(logged) == [r["steps"] for r in history]
    for record in history:
        row = logged[record["steps"]]
        for slot, agent in enumerate(record["agents"]):
            assert row[f"eval/fitness/agent_{slot}"] == pytest.approx(agent["fitness"])
            for name in PPO_TAGS:
                assert row[f"train/{name}/agent_{slot}"] == pytest.approx(agent["metrics"][name])
            assert row[f"mutation/agent_{slot}"] == f"agent {agent['index']}: {agent['mutation']}"
    assert config["algorithm"]["name"] == "PPO"  # the manifest is the run's config
    assert config["training"]["wandb"] == {"project": "agilerl-test"}  # what --wandb set
    assert "agilerl-test" in (out / "manifest.yaml").read_text()  # a project is kept


def test_a_tracker_that_cannot_start_is_one_clear_line(tmp_path, monkeypatch, capsys):
    import dataclasses

    from agilerl.training import tracking

    def no_login(settings, config):
        raise RuntimeError("api_key not configured (no-tty)")

    wandb_row = dataclasses.replace(tracking.BACKENDS[1], package="json", open=no_login)
    monkeypatch.setattr(tracking, "BACKENDS", (tracking.BACKENDS[0], wandb_row))
    args = [str(ROOT / "configs/ppo.yaml"), *PPO_SMALL, "--out", str(tmp_path / "run")]
    rc = main(["train", *args, "--wandb", "p"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert (
        "agilerl: training.wandb: Weights & Biases logging could not start: RuntimeError: "
        "api_key not configured (no-tty)"
    ) in err


# -- refused before the first step -----------------------------------------------------------
@pytest.mark.parametrize(
    ("package", "training", "field"),
    [
        ("tensorboard", {"tensorboard_log_dir": "tb"}, "tensorboard_log_dir"),
        ("wandb", {"wandb": {"project": "p", "mode": "offline"}}, "wandb"),
    ],
)
def test_a_tracker_without_its_package_is_refused_before_the_first_step(
    tmp_path, monkeypatch, package, training, field
):
    monkeypatch.setitem(sys.modules, package, None)  # importlib finds no such package
    if "tensorboard_log_dir" in training:
        training = {"tensorboard_log_dir": str(tmp_path / "tb")}
    trainer = _dqn_trainer(tmp_path, **training)
    with pytest.raises(PreflightError) as err:
        trainer.train(verbose=False, output_dir=tmp_path / "out")
    assert f"training.{field}:" in str(err.value)
    assert f"pip install 'agilespec[{package}]'" in str(err.value)
    assert trainer.state is None and not (tmp_path / "out" / "checkpoint.pt").exists()
    assert not (tmp_path / "tb").exists()


def test_cli_names_the_extra_when_tensorboard_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    args = [str(ROOT / "configs/ppo.yaml"), *PPO_SMALL, "--out", str(tmp_path / "run")]
    rc = main(["train", *args, "--tensorboard", str(tmp_path / "tb")])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert "training.tensorboard_log_dir: TensorBoard logging needs the tensorboard" in err
    assert "pip install 'agilespec[tensorboard]'" in err


def test_tensorboard_directory_that_is_a_file_is_refused(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard not installed (agilespec[tensorboard])")
    (tmp_path / "tb").write_text("not a directory")
    trainer = _dqn_trainer(tmp_path, tensorboard_log_dir=str(tmp_path / "tb"))
    with pytest.raises(PreflightError, match=r"training.tensorboard_log_dir: .* not a directory"):
        trainer.train(verbose=False)


# -- the plot of a run (the figure itself: tests/training/test_report.py) --------------------
def test_trainer_plots_the_algorithms_main_loss(tmp_path, monkeypatch):
    from agilerl.training import report

    drawn = []

    def recording(history, title, loss=None, measure="mean return", step_unit="?"):
        fig = real(history, title, loss, measure, step_unit)
        drawn.append((loss, [ax.get_ylabel() for ax in fig.axes], fig.axes[-1].get_xlabel()))
        return fig

    real = report.fitness_figure
    monkeypatch.setattr(report, "fitness_figure", recording)
    trainer = _dqn_trainer(tmp_path, max_steps=200)
    trainer.train(verbose=False, output_dir=tmp_path / "out")
    ((loss, labels, steps),) = drawn
    assert loss == "td_loss" and len(labels) == 3 and "td loss" in labels[2]
    assert steps == "environment steps per agent"  # the family's step unit
    assert (tmp_path / "out" / "fitness.png").read_bytes()[:4] == b"\x89PNG"
