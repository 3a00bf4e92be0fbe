"""Checkpoint files: data only (loading never runs code), atomic writes, exact round
trips, and every damaged, foreign or malformed file refused with a message that says
what is wrong and where (file, key path)."""

import builtins
import copy
import io
import json
import math
import os
import re
import struct

import numpy as np
import pytest
import safetensors.torch
import torch
from gymnasium import spaces

from agilerl.algorithms import DQN, PPO, RLAlgorithm
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.files import checkpoints
from agilerl.files.checkpoints import CheckpointError
from agilerl.trainer import LocalTrainer
from agilerl.training.run_checkpoint import (
    HISTORY_RECORD,
    RUN_LAYOUT,
    load_run,
    manifest_differences,
)
from agilerl.training.state import RunState

NET = {"encoder_config": {"arch": "mlp", "hidden_size": [8]}, "head_config": {"hidden_size": [8]}}

#: A run small enough to train in about a second, with every part a checkpoint holds:
#: a population, HPO operators, a replay buffer.
TINY_RUN = {
    "algorithm": {"name": "DQN", "batch_size": 16, "lr": 1e-3, "learn_step": 4},
    "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
    "network": {"arch": "mlp", "latent_dim": 8, **NET},
    "training": {"max_steps": 100, "evo_steps": 50, "pop_size": 2, "eval_steps": 20, "seed": 5},
    "mutation": {"rand_seed": 1},
    "selection_strategy": {"tournament_size": 2, "elitism": True},
    "replay_buffer": {"max_size": 500},
}


class RunsCode:
    """Unpickling this creates the file ``marker``: a stand-in for any command."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def torch_pickle(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def raw_file(tree, tensors=None) -> bytes:
    """A format-2 file with a correct header around an arbitrary (hostile) JSON tree."""
    data = json.dumps(tree).encode()
    blob = safetensors.torch.save(tensors or {})
    return checkpoints.frame(struct.pack("<Q", len(data)) + data + blob)


def dqn() -> DQN:
    return DQN(spaces.Box(-1, 1, (4,)), spaces.Discrete(2), net_config=NET, batch_size=4, seed=0)


def trained_dqn() -> DQN:
    agent = dqn()
    batch = {
        "obs": torch.randn(8, 4),
        "action": torch.randint(0, 2, (8,)),
        "reward": torch.randn(8),
        "next_obs": torch.randn(8, 4),
        "done": torch.zeros(8),
    }
    agent.learn(batch)  # optimiser state to save
    return agent


@pytest.fixture
def agent_file(tmp_path):
    path = tmp_path / "agent.pt"
    trained_dqn().save_checkpoint(path)
    return path


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "run.pt"
    LocalTrainer.from_manifest(copy.deepcopy(TINY_RUN)).train(verbose=False, checkpoint_path=path)
    return path


def resume(document, path):
    trainer = LocalTrainer.from_manifest(copy.deepcopy(document), resume_from_checkpoint=path)
    trainer.train(verbose=False)
    return trainer


# -- no code runs from a file ---------------------------------------------------------
def old_format_file(path, marker):
    """What the previous format wrote (header, torch pickle): here one that runs code."""
    payload = torch_pickle({"kind": "agent", "class": "DQN", "x": RunsCode(marker)})
    path.write_bytes(checkpoints.frame(payload, version=1))
    return payload


def test_the_old_format_payload_is_live_code(tmp_path):
    # The check below is only meaningful if unpickling this payload does run code.
    marker = tmp_path / "marker"
    payload = old_format_file(tmp_path / "old.pt", marker)
    torch.load(io.BytesIO(payload), weights_only=False)  # what the old loader did
    assert marker.exists()


@pytest.mark.parametrize(
    "entry_point",
    [
        lambda path: checkpoints.load(path),
        lambda path: RLAlgorithm.load(path),
        lambda path: DQN.load(path),
        lambda path: dqn().load_checkpoint(path),
        lambda path: resume(TINY_RUN, path),
    ],
    ids=["checkpoints.load", "RLAlgorithm.load", "DQN.load", "load_checkpoint", "resume"],
)
def test_an_old_format_pickle_is_refused_unread_on_every_entry_point(tmp_path, entry_point):
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pt"
    old_format_file(path, marker)
    with pytest.raises(CheckpointError, match=r"evil.pt: checkpoint format version 1 \(a torch"):
        entry_point(path)
    assert not marker.exists()


def smuggled_files(marker):
    """Every way of slipping a pickle (or a name to call) into a format-2 file."""
    evil = torch_pickle(RunsCode(marker))
    tree = {"kind": "agent"}
    data = json.dumps(tree).encode()
    return {
        "payload is a pickle": (checkpoints.frame(evil), "tree length"),
        "tensor part is a pickle": (
            checkpoints.frame(struct.pack("<Q", len(data)) + data + evil),
            "not a valid safetensors file",
        ),
        "a $reduce tag": (
            raw_file({"kind": "agent", "x": {"$reduce": ["builtins.open", [str(marker), "w"]]}}),
            "x: unknown tagged value '\\$reduce'",
        ),
        "a space naming a function": (
            raw_file({"kind": "agent", "x": {"$space": {"type": "builtins.open"}}}),
            "x: unknown space type 'builtins.open'",
        ),
        "an object numpy scalar": (
            raw_file({"kind": "agent", "x": {"$numpy": ["O", str(marker)]}}),
            "x: bad numpy scalar",
        ),
        "an agent class naming a function": (
            raw_file({"kind": "agent", "class": "__getattr__"}),
            "class: a '__getattr__' agent, not a RLAlgorithm",
        ),
    }


@pytest.mark.parametrize("case", list(smuggled_files("m")))
def test_nothing_smuggled_into_the_new_format_is_run(tmp_path, case):
    marker = tmp_path / "marker"
    data, message = smuggled_files(marker)[case]
    path = tmp_path / "evil.pt"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=message):
        RLAlgorithm.load(path)
    assert not marker.exists()


def test_a_network_class_in_the_file_is_never_looked_up(agent_file, tmp_path):
    tree = checkpoints.load(agent_file)
    tree["networks"]["actor"]["class"] = "EvolvableNetwork"  # importable, but not what DQN builds
    checkpoints.save(tree, tmp_path / "b.pt")
    with pytest.raises(CheckpointError, match="networks.actor.class: 'EvolvableNetwork', expected"):
        RLAlgorithm.load(tmp_path / "b.pt")


# -- exact round trips -----------------------------------------------------------------
def test_the_tree_codec_round_trips_every_type_it_holds(tmp_path):
    tree = {
        "kind": "run",
        "tensors": [torch.arange(6.0).view(2, 3).t(), torch.tensor(3), torch.zeros(0, 2)],
        "dtypes": [torch.ones(2, dtype=d) for d in (torch.bfloat16, torch.uint8, torch.bool)],
        "arrays": [np.arange(4, dtype=d) for d in ("uint16", "int8", "float16", "uint64")],
        "scalars": [np.float32(1.5), np.int64(-3), np.bool_(True)],
        "numbers": [2**100, -(2**60), float("nan"), float("inf"), 0.1, True, None],
        "tuples": (1, ("a", [2])),
        "keys": {0: "int key", (1, 2): "tuple key", "$dollar": "escaped", "plain": 1},
        "space": spaces.Dict(
            {
                "box": spaces.Box(-1, 2, (3,), dtype=np.float64),
                "discrete": spaces.Discrete(5, start=-2),
                "multi": spaces.MultiDiscrete([2, 3], start=[1, 0]),
                "bits": spaces.MultiBinary([2, 2]),
                "tuple": spaces.Tuple((spaces.Discrete(2),)),
            }
        ),
        "rng": np.random.default_rng(4).bit_generator.state,
    }
    back = checkpoints.load(checkpoints.save(tree, tmp_path / "t.pt"), kind="run")
    for saved, loaded in zip(
        tree["tensors"] + tree["dtypes"], back["tensors"] + back["dtypes"], strict=True
    ):
        assert torch.equal(saved, loaded) and saved.dtype == loaded.dtype
    for saved, loaded in zip(tree["arrays"], back["arrays"], strict=True):
        assert isinstance(loaded, np.ndarray) and loaded.dtype == saved.dtype
        np.testing.assert_array_equal(saved, loaded)
    assert [(type(s), s) for s in back["scalars"]] == [(type(s), s) for s in tree["scalars"]]
    assert back["numbers"][:2] == tree["numbers"][:2] and np.isnan(back["numbers"][2])
    assert back["numbers"][3:] == tree["numbers"][3:]
    assert back["tuples"] == tree["tuples"] and back["keys"] == tree["keys"]
    assert back["space"] == tree["space"] and back["rng"] == tree["rng"]


def test_what_no_checkpoint_can_hold_is_named_on_save(tmp_path):
    with pytest.raises(TypeError, match=r"parts\[1\].x: a checkpoint cannot hold a object"):
        checkpoints.save({"kind": "run", "parts": [1, {"x": object()}]}, tmp_path / "c.pt")
    with pytest.raises(TypeError, match="a: a checkpoint cannot hold a numpy array of object"):
        checkpoints.save({"a": np.array([None])}, tmp_path / "c.pt")
    assert not (tmp_path / "c.pt").exists()


@pytest.mark.parametrize("cls", [DQN, PPO])
def test_agent_round_trip_through_a_file_is_exact(tmp_path, cls):
    agent = cls(spaces.Box(-1, 1, (4,)), spaces.Discrete(3), net_config=NET, seed=2)
    agent.mutate_architecture(agent.architecture_mutations()[0], seed=1)
    agent.fitness, agent.steps = [1.0, float("nan")], 7
    agent.save_checkpoint(tmp_path / "a.pt")
    loaded = RLAlgorithm.load(tmp_path / "a.pt")
    again = loaded.state_dict()
    saved = agent.state_dict()
    assert type(loaded) is cls and loaded.hyperparameters() == agent.hyperparameters()
    for attr, net in saved["networks"].items():
        assert again["networks"][attr]["spec"] == net["spec"]
        assert all(
            torch.equal(v, again["networks"][attr]["state"][k]) for k, v in net["state"].items()
        )
    assert again["rng"] == saved["rng"] and again["hp_config"] == saved["hp_config"]
    assert loaded.steps == 7 and loaded.fitness[0] == 1.0 and np.isnan(loaded.fitness[1])
    assert loaded.rng.random() == agent.rng.random()  # the generator continues alike


def test_replay_buffer_with_tuple_and_dict_observations_round_trips(tmp_path):
    buffer = ReplayBuffer(6)
    for step in range(4):
        obs = {"a": np.full((2, 3), step, np.float32), "b": (np.arange(2) + step,)}
        buffer.add(obs, np.arange(2), np.ones(2), obs, np.zeros(2, bool))
    path = checkpoints.save(buffer.state_dict(), tmp_path / "b.pt")
    restored = ReplayBuffer(6)
    restored.load_state_dict(checkpoints.load(path))
    torch.manual_seed(0)
    first = buffer.sample(5)
    torch.manual_seed(0)
    second = restored.sample(5)
    assert torch.equal(first["obs"]["b"][0], second["obs"]["b"][0])
    assert torch.equal(first["next_obs"]["a"], second["next_obs"]["a"])
    assert len(restored) == len(buffer) and restored.position == buffer.position


def test_run_layout_names_every_run_state_field(run_file):
    assert set(RUN_LAYOUT["state"]) == set(RunState().to_dict())
    record = load_run(run_file)["state"]["history"][0]  # what the generation loop writes
    assert set(record) == set(HISTORY_RECORD)
    assert set(record["agents"][0]) == set(HISTORY_RECORD["agents"].item)


# -- missing, wrong or misshapen parts -----------------------------------------------------
def first_weight(tree):
    return next(iter(tree["networks"]["actor"]["state"]))


AGENT_DAMAGE = {
    "network missing": (
        lambda t: t["networks"].pop("actor"),
        r"agent2.pt: networks.actor: missing",
    ),
    "optimiser missing": (
        lambda t: t["optimizers"].pop("optimizer"),
        r"optimizers.optimizer: missing",
    ),
    "weight with the wrong shape": (
        lambda t: t["networks"]["actor"]["state"].__setitem__(first_weight(t), torch.zeros(3, 3)),
        r"networks.actor.state.encoder\S*: shape \(3, 3\), expected \(8, 4\)",
    ),
    "weight with the wrong dtype": (
        lambda t: t["networks"]["actor"]["state"].__setitem__(
            first_weight(t), torch.zeros(8, 4, dtype=torch.float64)
        ),
        r"dtype torch.float64, expected torch.float32",
    ),
    "weight missing": (
        lambda t: t["networks"]["actor"]["state"].pop(first_weight(t)),
        r"networks.actor.state.encoder\S*: missing",
    ),
    "weight the network has not": (
        lambda t: t["networks"]["actor"]["state"].__setitem__("extra", torch.zeros(1)),
        r"networks.actor.state.extra: not a weight of this network",
    ),
    "spec the schema refuses": (
        lambda t: t["networks"]["actor"]["spec"]["head_config"].__setitem__("hidden_size", [-1]),
        r"agent2.pt: networks.actor.spec.head_config.hidden_size: every item",
    ),
    "optimiser state misshapen": (
        lambda t: t["optimizers"]["optimizer"]["state"][0].__setitem__("exp_avg", torch.zeros(2)),
        r"optimizers.optimizer.state\[0\].exp_avg: shape \(2,\), expected \(8, 4\)",
    ),
    "optimiser state incomplete": (
        lambda t: t["optimizers"]["optimizer"]["state"][0].pop("exp_avg_sq"),
        r"optimizers.optimizer.state\[0\].exp_avg_sq: missing",
    ),
    "optimiser groups missing": (
        lambda t: t["optimizers"]["optimizer"].__setitem__("param_groups", []),
        r"optimizers.optimizer.param_groups: 0 parameter groups, expected 1",
    ),
    "optimiser setting of the wrong type": (
        lambda t: t["optimizers"]["optimizer"]["param_groups"][0].__setitem__("lr", "fast"),
        r"optimizers.optimizer.param_groups\[0\].lr: 'fast' is not like",
    ),
    "hyperparameter missing": (
        lambda t: t["hyperparameters"].pop("gamma"),
        r"hyperparameters.gamma: missing",
    ),
    "hyperparameter unknown": (
        lambda t: t["hyperparameters"].__setitem__("learn", 1),
        r"hyperparameters.learn: not a hyperparameter of DQN",
    ),
    "hyperparameter out of range": (
        lambda t: t["hyperparameters"].__setitem__("gamma", 5.0),
        r"cannot rebuild the DQN agent: DQN\(gamma=5.0\): must be >= 0 and <= 1",
    ),
    "metric of the wrong type": (
        lambda t: t["metrics"].__setitem__("steps", "many"),
        r"metrics.steps: expected an integer, found str",
    ),
    "unknown bit generator": (
        lambda t: t["rng"].__setitem__("bit_generator", "Evil"),
        r"rng.bit_generator: unknown bit generator 'Evil'",
    ),
    "bad generator state": (
        lambda t: t["rng"].__setitem__("state", "x"),
        r"rng: not a valid PCG64 state",
    ),
    "generator state of the wrong type": (
        lambda t: t["rng"].__setitem__("state", np.float32(1)),
        r"rng: not a valid PCG64 state",
    ),
    "optimiser parameter list not a list": (
        lambda t: t["optimizers"]["optimizer"]["param_groups"][0].__setitem__("params", 1.5),
        r"param_groups\[0\].params: 1.5, the network has \d+ parameters",
    ),
    "space of the wrong type": (
        lambda t: t.__setitem__("action_space", "Discrete(2)"),
        r"action_space: expected Space, found str",
    ),
    "unexpected top-level key": (
        lambda t: t.__setitem__("code", "import os"),
        r"code: unexpected key",
    ),
    "another algorithm": (
        lambda t: t.__setitem__("class", "PPO"),
        r"class: a 'PPO' agent, not a DQN",
    ),
    "an Adam lr of inf": (
        lambda t: t["optimizers"]["optimizer"]["param_groups"][0].__setitem__("lr", math.inf),
        r"optimizers.optimizer.param_groups\[0\].lr: inf is not a finite number$",
    ),
    "an Adam lr of nan": (
        lambda t: t["optimizers"]["optimizer"]["param_groups"][0].__setitem__("lr", math.nan),
        r"param_groups\[0\].lr: nan is not a finite number$",
    ),
    "a negative Adam lr": (
        lambda t: t["optimizers"]["optimizer"]["param_groups"][0].__setitem__("lr", -1.0),
        r"param_groups\[0\]: not a valid Adam setting: Invalid learning rate: -1.0$",
    ),
    "Adam betas outside [0, 1)": (
        lambda t: t["optimizers"]["optimizer"]["param_groups"][0].__setitem__("betas", (1.5, 0.9)),
        r"param_groups\[0\]: not a valid Adam setting: Invalid beta parameter at index 0: 1.5$",
    ),
    "a negative Adam step": (
        lambda t: t["optimizers"]["optimizer"]["state"][0].__setitem__("step", torch.tensor(-5.0)),
        r"optimizers.optimizer.state\[0\].step: -5.0 is negative$",
    ),
    "a nan in the Adam state": (
        lambda t: t["optimizers"]["optimizer"]["state"][0]["exp_avg_sq"].fill_(math.nan),
        r"optimizers.optimizer.state\[0\].exp_avg_sq: holds nan; every value must be finite$",
    ),
    "an inf weight": (
        lambda t: t["networks"]["actor"]["state"][first_weight(t)].fill_(math.inf),
        r"networks.actor.state.encoder\S*: holds inf; every value must be finite$",
    ),
    "negative steps": (
        lambda t: t["metrics"].__setitem__("steps", -3),
        r"agent2.pt: metrics.steps: -3 is negative; a count is 0 or more$",
    ),
}


@pytest.mark.parametrize("case", list(AGENT_DAMAGE))
def test_a_malformed_agent_file_is_refused_naming_the_key(agent_file, tmp_path, case):
    damage, message = AGENT_DAMAGE[case]
    tree = checkpoints.load(agent_file)
    damage(tree)
    bad = checkpoints.save(tree, tmp_path / "agent2.pt")  # correct header and checksum
    with pytest.raises(CheckpointError, match=message) as caught:
        DQN.load(bad)
    assert str(caught.value).startswith(f"{bad}: ")


def test_a_ppo_file_asking_for_what_cannot_work_is_refused(tmp_path):
    PPO(spaces.Box(-1, 1, (4,)), spaces.Discrete(2), net_config=NET).save_checkpoint(
        tmp_path / "ppo.pt"
    )
    tree = checkpoints.load(tmp_path / "ppo.pt")
    tree["hyperparameters"]["recurrent"] = True
    bad = checkpoints.save(tree, tmp_path / "bad.pt")
    # recurrent with the file's MLP encoder: no memory to carry
    message = "cannot rebuild the PPO agent: recurrent: true needs an LSTM encoder"
    with pytest.raises(CheckpointError, match=message):
        RLAlgorithm.load(bad)


def test_a_refused_load_leaves_the_agent_unchanged(agent_file, tmp_path):
    tree = checkpoints.load(agent_file)
    tree["optimizers"]["optimizer"]["state"][0]["exp_avg"] = torch.zeros(2)
    bad = checkpoints.save(tree, tmp_path / "bad.pt")
    agent = trained_dqn()
    before = agent.state_dict()
    with pytest.raises(CheckpointError, match="exp_avg: shape"):
        agent.load_checkpoint(bad)
    after = agent.state_dict()
    assert after["hyperparameters"] == before["hyperparameters"]
    assert all(
        torch.equal(v, after["networks"]["actor"]["state"][k])
        for k, v in before["networks"]["actor"]["state"].items()
    )


RUN_DAMAGE = {
    "agent network missing": (
        lambda t: t["agents"][0]["networks"].pop("actor"),
        r"run2.pt: agents\[0\].networks.actor: missing",
    ),
    "agent weight misshapen": (
        lambda t: t["agents"][1]["networks"]["actor_target"]["state"].__setitem__(
            first_weight(t["agents"][1]), torch.zeros(1)
        ),
        r"agents\[1\].networks.actor_target.state.encoder\S*: shape \(1,\)",
    ),
    "memory key missing": (lambda t: t.pop("memory"), r"run2.pt: memory: missing"),
    "memory absent for an off-policy run": (
        lambda t: t.__setitem__("memory", None),
        r"memory: the checkpoint holds none, this run needs one",
    ),
    "memory rows missing": (
        lambda t: t["memory"]["data"].__setitem__("reward", torch.zeros(3)),
        r"memory.data.reward: expected a tensor of \d+ rows, found \(3,\)",
    ),
    "memory field missing": (
        lambda t: t["memory"]["data"].pop("done"),
        r"memory.data.done: missing",
    ),
    "selection generator missing": (
        lambda t: t["selection"].pop("rng"),
        r"selection.rng: missing",
    ),
    "global torch RNG wrong": (
        lambda t: t["rng"].__setitem__("torch", torch.zeros(3, dtype=torch.uint8)),
        r"rng.torch: not a valid torch RNG state",
    ),
    "global numpy RNG wrong": (
        lambda t: t["rng"].__setitem__("numpy", ("MT19937",)),
        r"rng.numpy: not a valid numpy RNG state",
    ),
    "run state of the wrong type": (
        lambda t: t["state"].__setitem__("generation", "two"),
        r"state.generation: expected an integer, found str",
    ),
    "no agent": (lambda t: t.__setitem__("agents", []), r"agents: the checkpoint holds no agent"),
    "history record incomplete": (
        lambda t: t["state"]["history"][0]["agents"][1].pop("fitness"),
        r"state.history\[0\].agents\[1\].fitness: missing",
    ),
    "negative steps": (
        lambda t: t["state"].__setitem__("steps", -100),
        r"run2.pt: state.steps: -100 is negative; a count is 0 or more$",
    ),
    "a generation of 1e15": (
        lambda t: t["state"].__setitem__("generation", 10**15),
        r"run2.pt: state.generation: 1,000,000,000,000,000, but the history records 2 "
        r"generations \(every generation leaves one record\)$",
    ),
    "steps the history never reached": (
        lambda t: t["state"].__setitem__("steps", 10**12),
        r"state.steps: 1,000,000,000,000, but the last generation recorded 100$",
    ),
    "history out of order": (
        lambda t: t["state"]["history"][1].__setitem__("generation", 7),
        r"state.history\[1\].generation: 7, expected 1$",
    ),
    "steps going back": (
        lambda t: t["state"]["history"][1].__setitem__("steps", 1),
        r"state.history\[1\].steps: 1, fewer than the 50 before it$",
    ),
    "infinite seconds": (
        lambda t: t["state"].__setitem__("seconds", math.inf),
        r"state.seconds: inf is not a finite number$",
    ),
    "a best agent from the future": (
        lambda t: t["state"]["best"].__setitem__("generation", 9),
        r"state.best.generation: 9, a generation the run has not reached \(2 ran\)$",
    ),
    "an agent's Adam lr of inf": (
        lambda t: t["agents"][1]["optimizers"]["optimizer"]["param_groups"][0].__setitem__(
            "lr", math.inf
        ),
        r"run2.pt: agents\[1\].optimizers.optimizer.param_groups\[0\].lr: inf is not a finite",
    ),
    "an agent's negative steps": (
        lambda t: t["agents"][0]["metrics"].__setitem__("steps", -1),
        r"agents\[0\].metrics.steps: -1 is negative",
    ),
}


@pytest.mark.parametrize("case", list(RUN_DAMAGE))
def test_a_malformed_run_checkpoint_is_refused_naming_the_key(run_file, tmp_path, case):
    damage, message = RUN_DAMAGE[case]
    tree = checkpoints.load(run_file)
    damage(tree)
    bad = checkpoints.save(tree, tmp_path / "run2.pt")
    with pytest.raises(CheckpointError, match=message):
        resume(TINY_RUN, bad)


# -- damaged files: say what is wrong ----------------------------------------------------
def header_with_length(data: bytes, length: int) -> bytes:
    return data[:14] + struct.pack("<Q", length) + data[22:]


FRAME_DAMAGE = {
    "trailing junk": (lambda d: d + b"junk", r"4 bytes of trailing data after the payload"),
    "length field larger than the file": (
        lambda d: header_with_length(d, len(d) + 1000),
        r"corrupted length field: it gives \d+ bytes, larger than the file",
    ),
    "length field too small": (
        lambda d: header_with_length(d, len(d) - 64),
        r"corrupted length field: it gives \d+ bytes, smaller than the \d+-byte payload",
    ),
    "truncated": (
        lambda d: d[: len(d) // 2],
        r"damaged checkpoint \(truncated: \d+ of \d+ payload",
    ),
    "truncated inside the header": (lambda d: d[:30], r"truncated inside the header: 30 of 54"),
    "checksum mismatch": (
        lambda d: d[:-10] + bytes([d[-10] ^ 0xFF]) + d[-9:],
        r"checksum mismatch",
    ),
    "newer format": (lambda d: d[:13] + b"\x07" + d[14:], r"format version 7 is newer than"),
    "not a checkpoint": (lambda d: b"PK\x03\x04" + d, r"not an agilerl checkpoint \(bad header\)"),
    "empty file": (lambda d: b"", r"not an agilerl checkpoint"),
}


@pytest.mark.parametrize("case", list(FRAME_DAMAGE))
def test_damage_to_the_file_is_named(tmp_path, case):
    damage, message = FRAME_DAMAGE[case]
    path = checkpoints.save({"kind": "run", "w": torch.zeros(100)}, tmp_path / "c.pt")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError, match=message) as caught:
        checkpoints.load(path)
    assert str(caught.value).startswith(f"{path}: ")


#: The tree length and tree of a run file that holds nothing else.
RUN_TREE = struct.pack("<Q", 14) + b'{"kind":"run"}'
#: A safetensors header declaring a 4 GB tensor, with no byte of it after the header.
HUGE_TENSOR = b'{"0":{"dtype":"F32","shape":[1000000000],"data_offsets":[0,4000000000]}}'

PAYLOAD_DAMAGE = {
    "tree length beyond the payload": (
        checkpoints.frame(struct.pack("<Q", 10**6) + b"{}"),
        r"the tree length \(1000000 bytes\) is larger than the payload",
    ),
    "tree not JSON": (
        checkpoints.frame(struct.pack("<Q", 3) + b"{x}" + safetensors.torch.save({})),
        r"the tree is not valid JSON",
    ),
    "tensor the tree never names": (
        raw_file({"kind": "run"}, {"0": torch.zeros(1)}),
        r"tensors the tree never refers to",
    ),
    "tensor the file lacks": (
        raw_file({"kind": "run", "w": {"$tensor": "9"}}),
        r"w: refers to tensor '9', which the file does not hold",
    ),
    "tensor named twice": (
        raw_file({"kind": "run", "w": [{"$tensor": "0"}, {"$tensor": "0"}]}, {"0": torch.zeros(1)}),
        r"w\[1\]: refers to tensor '0' a second time",
    ),
    "nesting bomb": (
        raw_file({"kind": "run", "x": json.loads("[" * 150 + "]" * 150)}),
        r"nested more than 100 levels deep",
    ),
    "a tag beside other keys": (
        raw_file({"kind": "run", "w": {"$tuple": [], "more": 1}}),
        r"w: unknown tagged value",
    ),
    "a space with foreign fields": (
        raw_file({"kind": "run", "s": {"$space": {"type": "Discrete", "n": 2, "seed": 1}}}),
        r"s: a Discrete space needs the fields n, start",
    ),
    "an impossible space": (
        raw_file({"kind": "run", "s": {"$space": {"type": "Discrete", "n": -2, "start": 0}}}),
        r"s: not a valid Discrete space",
    ),
    "a huge $int": (raw_file({"kind": "run", "i": {"$int": "9" * 5000}}), r"i: bad \$int"),
    "a space type that is not a name": (
        raw_file({"kind": "run", "s": {"$space": {"type": {"$tuple": []}}}}),
        r"s: unknown space type",
    ),
    "a space too large for its dtype": (
        raw_file({"kind": "run", "s": {"$space": {"type": "Discrete", "n": 10**30, "start": 0}}}),
        r"s: not a valid Discrete space",
    ),
    "wrong kind": (raw_file({"kind": "agent"}), r"expected a run checkpoint, found 'agent'"),
    "tree length over the limit": (
        checkpoints.frame(struct.pack("<Q", 2**40) + b"{}"),
        r"the tree length \(1,099,511,627,776 bytes\) is more than a checkpoint's tree may "
        r"have \(67,108,864\)",
    ),
    "safetensors header length beyond the file": (
        checkpoints.frame(RUN_TREE + struct.pack("<Q", 2**60) + b"{}"),
        r"the tensor part is not a valid safetensors file",
    ),
    "safetensors tensor larger than its bytes": (
        checkpoints.frame(RUN_TREE + struct.pack("<Q", len(HUGE_TENSOR)) + HUGE_TENSOR),
        r"the tensor part is not a valid safetensors file",
    ),
}


@pytest.mark.parametrize("case", list(PAYLOAD_DAMAGE))
def test_a_malformed_payload_with_a_correct_header_is_named(tmp_path, case):
    data, message = PAYLOAD_DAMAGE[case]
    path = tmp_path / "c.pt"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=message):
        checkpoints.load(path, kind="run")


# -- bounded reads: sizes checked before anything is read whole ----------------------------
def _declaring(length: int) -> bytes:
    """A correct header declaring a payload of ``length`` bytes (whose checksum no
    payload will match: the size is refused first)."""
    return checkpoints.frame(b"")[:14] + struct.pack("<Q", length) + bytes(32)


@pytest.fixture
def four_gib_available(monkeypatch):
    """This process may read 2 GiB: the limit the tests meet, whatever the machine."""
    monkeypatch.setattr(checkpoints, "available_memory", lambda: 4 << 30)


def test_a_40_gib_sparse_file_is_refused_from_its_header(tmp_path, four_gib_available):
    path = tmp_path / "huge.pt"
    with open(path, "wb") as file:
        file.write(_declaring(40 << 30))
        file.truncate(54 + (40 << 30))  # sparse: no disk used
    with pytest.raises(CheckpointError) as caught:
        RLAlgorithm.load(path)
    assert str(caught.value) == (
        f"{path}: the file declares a payload of 42,949,672,960 bytes (40.0 GiB), more than "
        "this process may read (2,147,483,648 bytes (2.0 GiB): half the memory available)"
    )


def test_a_small_declared_payload_in_a_huge_file_is_refused_unread(tmp_path, four_gib_available):
    path = tmp_path / "padded.pt"
    with open(path, "wb") as file:
        file.write(_declaring(10))
        file.truncate(54 + (40 << 30))
    with pytest.raises(CheckpointError, match=r"the file holds a payload of 42,949,672,960"):
        checkpoints.load(path)


def test_agilerl_evaluate_refuses_a_sparse_file_in_one_line(tmp_path, capsys, four_gib_available):
    from agilerl.cli import main

    path = tmp_path / "huge.pt"
    with open(path, "wb") as file:
        file.write(_declaring(40 << 30))
        file.truncate(54 + (40 << 30))
    assert main(["evaluate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"agilerl: {path}: the file declares a payload of 42,949,672,960")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO (named pipe), not a checkpoint file"),
        (lambda p: os.symlink("/dev/zero", p), "is a character device, not a checkpoint file"),
    ],
    ids=["fifo-without-a-writer", "dev-zero"],
)
def test_a_file_that_is_not_a_regular_file_is_refused_unread(tmp_path, make, message):
    import signal

    path = tmp_path / "special.pt"
    make(path)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the read waited on the file"))
    signal.alarm(10)
    try:
        with pytest.raises(CheckpointError) as caught:
            checkpoints.load(path)
    finally:
        signal.alarm(0)
    assert str(caught.value) == f"{path}: {message}"


# -- absurd recorded sizes: measured on the meta device before anything is built -----------
def _edited(agent_file, tmp_path, edit):
    tree = checkpoints.load(agent_file)
    edit(tree)
    return checkpoints.save(tree, tmp_path / "absurd.pt")  # re-signed


#: The refusal of a layer too large to build: measured on the meta device against the
#: limit, never reserved on the host.
TOO_LARGE = (
    r"networks.actor: built from the recorded spaces and hyperparameters, the networks up "
    r"to this one need {0} bytes \([\d.]+ GiB\), more than this process may allocate "
    r"\(2,147,483,648 bytes \(2.0 GiB\): half the memory available\)$"
)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.__setitem__("action_space", spaces.Discrete(10**9)),
            TOO_LARGE.format("260,000,036,480"),
        ),
        (
            lambda t: t.__setitem__("observation_space", spaces.MultiBinary(10**9)),
            TOO_LARGE.format("256,000,035,976"),
        ),
        (
            lambda t: t.__setitem__("action_space", spaces.Discrete(10**7)),
            TOO_LARGE.format("2,600,036,480"),
        ),
        (
            lambda t: t["networks"]["actor"]["spec"]["encoder_config"].update(
                max_mlp_nodes=10**7, hidden_size=[10**7]
            ),
            r"networks.actor.state.encoder.linears.0.weight: shape \(8, 4\), expected "
            r"\(10000000, 4\)$",
        ),
    ],
    ids=["discrete-1e9-actions", "multibinary-1e9-observations", "discrete-1e7", "a-layer-of-1e7"],
)
def test_an_agent_file_implying_a_huge_allocation_is_refused_unbuilt(
    agent_file, tmp_path, four_gib_available, edit, message
):
    bad = _edited(agent_file, tmp_path, edit)
    with pytest.raises(CheckpointError) as caught:  # never torch's RuntimeError
        RLAlgorithm.load(bad)
    assert str(caught.value).startswith(f"{bad}: ")
    assert re.match(message, str(caught.value)[len(f"{bad}: ") :]), str(caught.value)


def test_the_size_check_leaves_torchs_generator_alone(agent_file, monkeypatch):
    """A load draws the same random numbers with the meta-device check as without it
    (a resumed run stays exact)."""

    def generator_after_load(sized_on_meta):
        monkeypatch.setattr(DQN, "sized_on_meta", sized_on_meta)
        torch.manual_seed(7)
        DQN.load(agent_file)
        return torch.get_rng_state()

    assert torch.equal(generator_after_load(True), generator_after_load(False))


def test_missing_and_directory_paths(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        checkpoints.load(tmp_path / "absent.pt")
    with pytest.raises(CheckpointError, match="is a directory"):
        checkpoints.load(tmp_path)


def test_a_failed_write_leaves_the_previous_checkpoint_and_no_temp_file(tmp_path, monkeypatch):
    path = checkpoints.save({"kind": "run", "generation": 1}, tmp_path / "c.pt")

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        checkpoints.save({"kind": "run", "generation": 2}, path)
    monkeypatch.undo()
    assert checkpoints.load(path)["generation"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


# -- resuming with a changed manifest ----------------------------------------------------
def changed(path, value):
    document = copy.deepcopy(TINY_RUN)
    *parents, key = path.split(".")
    node = document
    for part in parents:
        node = node[part]
    node[key] = value
    return document


@pytest.mark.parametrize(
    ("path", "value", "shown"),
    [
        ("replay_buffer.max_size", 600, "replay_buffer.max_size: checkpoint 500, this run 600"),
        ("algorithm.lr", 2e-3, "algorithm.lr: checkpoint 0.001, this run 0.002"),
        (
            "network.encoder_config.hidden_size",
            [16],
            "network.encoder_config.hidden_size: checkpoint [8], this run [16]",
        ),
        ("training.seed", 6, "training.seed: checkpoint 5, this run 6"),
        ("environment.num_envs", 3, "environment.num_envs: checkpoint 2, this run 3"),
        ("training.eval_loop", 2, "training.eval_loop: checkpoint 1, this run 2"),
    ],
)
def test_resume_refuses_a_changed_manifest_listing_the_difference(run_file, path, value, shown):
    with pytest.raises(CheckpointError, match="cannot resume") as caught:
        resume(changed(path, value), run_file)
    assert shown in str(caught.value)


def test_every_difference_is_listed_at_once():
    saved = copy.deepcopy(TINY_RUN)
    mine = changed("algorithm.lr", 0.5)
    mine["algorithm"]["gamma"] = 0.5
    mine["training"]["max_steps"] = 10**6  # the budget may change
    mine["training"]["checkpoint_path"] = "elsewhere.pt"
    assert manifest_differences(saved, mine) == [
        "algorithm.lr: checkpoint 0.001, this run 0.5",
        "algorithm.gamma: checkpoint not set, this run 0.5",
    ]


def test_a_raised_budget_still_resumes(run_file, tmp_path):
    document = changed("training.max_steps", 150)
    document["training"]["target_score"] = 1000.0
    trainer = resume(document, run_file)
    assert trainer.state.steps == 150 and load_run(run_file)["state"]["steps"] == 100


def test_a_drawn_seed_is_kept_on_resume(tmp_path):
    document = changed("training.seed", None)
    path = tmp_path / "run.pt"
    LocalTrainer.from_manifest(copy.deepcopy(document)).train(verbose=False, checkpoint_path=path)
    seed = load_run(path)["state"]["seed"]
    trainer = resume(document, path)  # the manifest still leaves the seed to the run
    assert trainer.training.seed == seed


def test_an_agent_file_is_a_header_a_json_tree_and_safetensors(agent_file):
    data = agent_file.read_bytes()
    assert data[:14] == b"AGILERL-CKPT\x00\x02"
    (tree_length,) = struct.unpack_from("<Q", data, 54)
    tree = json.loads(data[62 : 62 + tree_length])
    tensors = safetensors.torch.load(data[62 + tree_length :])
    assert tree["class"] == "DQN" and tree["networks"]["actor"]["state"]
    assert all(torch.is_tensor(t) for t in tensors.values()) and len(tensors) > 4
