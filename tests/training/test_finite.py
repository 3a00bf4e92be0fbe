"""A run whose learn metrics or fitness become NaN or infinite stops (agilerl.training.finite,
agilerl.training.evolution): the message names the generation, the agent and the figure,
``agilerl train`` exits 1 with that one line, nothing claiming a result is written, and
the last checkpoint is the last good generation's. ``history.json`` is strict JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agilerl.cli import main
from agilerl.trainer import LocalTrainer
from agilerl.training.errors import DivergedError
from agilerl.training.evolution import _refuse_non_finite, _weights_finite
from agilerl.training.finite import first_non_finite, json_safe
from agilerl.training.run_checkpoint import load_run

#: What a finished run writes beside its checkpoint; a diverged run writes none of them.
RESULTS = ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png", "history.json")
NETWORK = {
    "arch": "mlp",
    "latent_dim": 8,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
#: A tiny environment whose rewards become NaN after ``poison_after`` steps of one copy.
POISON_ENV = """
import gymnasium as gym
import numpy as np


class PoisonedRewards(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, poison_after=0):
        self.poison_after, self.steps, self.t = poison_after, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        self.steps += 1
        self.t += 1
        reward = float("nan") if self.steps > self.poison_after else float(action)
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, reward, False, self.t >= 10, {}
"""


def strict_json(text: str) -> object:
    """``json.loads`` that refuses the bare NaN / Infinity Python's json would accept."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def record(index: int, fitness: float = 1.0, score: float | None = 2.0, **metrics: float):
    return {"index": index, "fitness": fitness, "train_score": score, "metrics": metrics}


# --- the check --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [record(0, loss=0.5), record(7, loss=math.nan)],
            "generation 3: agent 7 (slot 1) reported loss = nan: training diverged",
        ),
        ([record(4, fitness=math.nan)], "generation 3: agent 4 (slot 0) reported fitness = nan"),
        (
            [record(2, score=-math.inf)],
            "generation 3: agent 2 (slot 0) reported train_score = -inf",
        ),
        (  # an evaluation figure beside the learn metrics (a multi-agent group's fitness)
            [record(0), record(1, **{"fitness/speaker": math.inf})],
            "generation 3: agent 1 (slot 1) reported fitness/speaker = inf",
        ),
    ],
)
def test_the_first_non_finite_figure_stops_the_run_naming_agent_generation_figure(records, message):
    with pytest.raises(DivergedError) as err:
        _refuse_non_finite(records, 3)
    assert str(err.value).startswith(message)
    assert err.value.generation == 3


def test_non_finite_weights_behind_finite_figures_stop_the_run():
    # the figures are means over the turn: the last update can leave NaN weights behind
    with pytest.raises(DivergedError) as err:
        _refuse_non_finite([record(0), {**record(5, loss=0.1), "_weights_finite": False}], 2)
    assert str(err.value).startswith(
        "generation 2: agent 5 (slot 1) holds non-finite network weights after its turn: "
        "training diverged"
    )
    assert err.value.figure == "weights"


def test_a_turn_records_whether_the_weights_are_finite():
    import torch

    class Agent:
        def __init__(self, value):
            self.weights = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(value)]

        def network_parameters(self):
            return self.weights

    assert _weights_finite(Agent(torch.zeros(2)))
    assert not _weights_finite(Agent(torch.tensor([0.0, math.inf])))
    assert not _weights_finite(Agent(torch.tensor([math.nan])))


def test_finite_figures_and_missing_scores_pass():
    _refuse_non_finite([record(0, score=None, loss=1e30), record(1, fitness=-1e9)], 0)


def test_figures_of_every_numeric_kind_are_checked():
    import numpy as np
    import torch

    for value in (math.nan, np.float32("nan"), np.array(np.inf), torch.tensor(float("nan"))):
        with pytest.raises(DivergedError, match="reported loss = "):
            _refuse_non_finite([record(0, loss=value)], 0)
    _refuse_non_finite([record(0, loss=torch.tensor(1.0), flag=True, note="nan")], 0)


def test_json_safe_maps_every_non_finite_number_to_null():
    import numpy as np

    tree = {"a": [1.0, math.nan, {"b": np.float32("inf")}], "c": "nan", "d": True, "e": None}
    assert json_safe(tree) == {"a": [1.0, None, {"b": None}], "c": "nan", "d": True, "e": None}
    assert first_non_finite(tree) == ("a.1", tree["a"][1])


# --- through agilerl train ---------------------------------------------------------------


def write_manifest(directory: Path, algorithm: dict, environment: dict, **training) -> Path:
    document = {
        "version": 1,
        "algorithm": {"name": "DQN", "batch_size": 32, "learn_step": 1, **algorithm},
        "environment": {"num_envs": 2, "sync": True, **environment},
        "network": NETWORK,
        "training": {
            "pop_size": 2,
            "evo_steps": 200,
            "eval_steps": 20,
            "learning_delay": 0,
            "seed": 0,
            **training,
        },  # fmt: skip
    }
    path = directory / "m.yaml"
    path.write_text(json.dumps(document))
    return path


def test_lr_1e300_trains_to_nan_and_agilerl_train_stops_with_one_line(tmp_path, capsys):
    manifest = write_manifest(
        tmp_path, {"lr": 1e300}, {"name": "CartPole-v1"}, max_steps=600, checkpoint_steps=200
    )
    out = tmp_path / "run"
    assert main(["train", str(manifest), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last == (
        "agilerl: generation 0: agent 0 (slot 0) reported td_loss = nan: training diverged, "
        "and the run stopped before selecting, recording or checkpointing this generation; "
        f"no checkpoint had been written yet ({out / 'checkpoint.pt'})"
    )
    assert not [name for name in RESULTS if (out / name).exists()]
    assert not (out / "checkpoint.pt").exists()  # generation 0 diverged: nothing to keep
    assert "finished" not in err


def test_nan_rewards_stop_the_run_and_keep_the_last_good_checkpoint(tmp_path, capsys):
    (tmp_path / "poison.py").write_text(POISON_ENV)
    environment = {
        "name": "Poisoned",
        "entrypoint": "poison.py:PoisonedRewards",
        "path": str(tmp_path),
        "config": {"poison_after": 400},  # steps of each copy: past the first generation
    }
    manifest = write_manifest(tmp_path, {}, environment, max_steps=2000)
    out = tmp_path / "run"
    assert main(["train", str(manifest), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "best ever nan" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("agilerl: generation ")
    generation = int(last.removeprefix("agilerl: generation ").partition(":")[0])
    assert generation >= 1, last  # the first generation was clean: there is a checkpoint
    assert " reported " in last and " = nan: training diverged" in last
    assert last.endswith(
        f"its last checkpoint, {out / 'checkpoint.pt'}, holds the generations before, unchanged"
    )
    assert not [name for name in RESULTS if (out / name).exists()]
    data = load_run(out / "checkpoint.pt")
    state = data["state"]
    assert state["generation"] == generation  # the generations before the diverged one
    assert len(state["history"]) == generation
    assert first_non_finite(state["history"]) is None
    assert math.isfinite(state["best"]["fitness"])


# --- history.json -----------------------------------------------------------------------


def test_history_json_is_strict_json_whatever_the_history_holds(tmp_path):
    trainer = LocalTrainer.from_manifest(
        json.loads(
            write_manifest(
                tmp_path, {}, {"name": "CartPole-v1"}, max_steps=200, pop_size=1
            ).read_text()
        )
    )
    trainer.train(verbose=False)
    assert trainer.state is not None
    # A figure the loop does not check (a hyperparameter) that is not finite.
    trainer.state.history[0]["agents"][0]["hyperparameters"]["lr"] = math.inf
    trainer.state.history[0]["agents"][0]["mutable"] = {"tau": math.nan}
    trainer.save_outputs(tmp_path / "out", verbose=False)
    history = strict_json((tmp_path / "out" / "history.json").read_text())
    assert history[0]["agents"][0]["hyperparameters"]["lr"] is None
    assert history[0]["agents"][0]["mutable"] == {"tau": None}


#: A PettingZoo wrapper that turns every reward into NaN.
NAN_REWARDS_WRAPPER = """
from pettingzoo.utils.wrappers import BaseParallelWrapper


class NaNRewards(BaseParallelWrapper):
    def step(self, actions):
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return obs, {a: float("nan") for a in rewards}, terminated, truncated, infos
"""


def test_nan_rewards_in_a_maddpg_team_stop_the_run_instead_of_best_ever_nan(tmp_path, capsys):
    (tmp_path / "nan_rewards.py").write_text(NAN_REWARDS_WRAPPER)
    document = {
        "version": 1,
        "algorithm": {"name": "MADDPG", "batch_size": 8, "learn_step": 8},
        "environment": {
            "name": "cue game",
            "entrypoint": "agilerl.testing.cooperative:cue_game",
            "wrappers": ["nan_rewards.py:NaNRewards"],
            "path": str(tmp_path),
            "num_envs": 2,
            "sync": True,
        },
        "training": {"max_steps": 32, "evo_steps": 16, "pop_size": 2, "seed": 1},
        "replay_buffer": {"max_size": 100},
    }
    manifest = tmp_path / "m.yaml"
    manifest.write_text(json.dumps(document))
    out = tmp_path / "run"
    assert main(["train", str(manifest), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "best ever nan" not in err and "Traceback" not in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            "agilerl: generation 0: agent 0 (slot 0) reported fitness = nan: training diverged"
        )
    )
    assert not [name for name in RESULTS if (out / name).exists()]
