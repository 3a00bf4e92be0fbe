"""``environment.vectorize``: the choice table, its refusals (exact messages), the line
``agilerl validate`` prints and the worker processes a run counts."""

import json
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from agilerl.cli import main
from agilerl.models.env import GymEnvSpec, OfflineEnvSpec
from agilerl.vectorize import (
    VECTORISATIONS,
    VectorizeError,
    describe_vectorize,
    native_ids,
    resolve_vectorize,
)

NATIVE_IDS = "CartPole-v0, CartPole-v1"


def kind(**fields):
    return resolve_vectorize(GymEnvSpec(**{"name": "CartPole-v1", **fields})).kind


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "native"),  # unset: native where the environment has it ...
        ({"sync": True}, "native"),  # ... whatever sync says
        ({"vectorize": "native"}, "native"),
        ({"vectorize": "sync"}, "sync"),
        ({"vectorize": "sync", "sync": True}, "sync"),  # the two agree
        ({"vectorize": "async"}, "async"),
        ({"vectorize": "native", "sync": False}, "native"),  # false is the default: silent
        ({"name": "Pendulum-v1"}, "async"),  # unset and not native: as sync says
        ({"name": "Pendulum-v1", "sync": True}, "sync"),
        ({"name": "phys2d/CartPole-v1"}, "async"),  # a vector entry point without a row reset
        ({"wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"]}, "async"),
        ({"wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"], "sync": True}, "sync"),
        ({"entrypoint": "envs.py:make", "sync": True}, "sync"),
        ({"name": "NotRegistered-v0"}, "async"),  # building it reports the unknown name
    ],
)
def test_the_choice(fields, expected):
    assert kind(**fields) == expected


def test_the_offline_section_chooses_alike():
    spec = OfflineEnvSpec(name="CartPole-v1", dataset_path="data.h5", vectorize="sync")
    assert resolve_vectorize(spec).kind == "sync"
    assert resolve_vectorize(spec.model_copy(update={"vectorize": None})).kind == "native"


def test_only_async_runs_worker_processes():
    assert {name: v.workers for name, v in VECTORISATIONS.items()} == {
        "native": False,
        "sync": False,
        "async": True,
    }


def test_native_ids_are_those_with_a_row_reset():
    assert ", ".join(native_ids()) == NATIVE_IDS


REFUSALS = {
    "no native environment": (
        {"name": "Pendulum-v1", "vectorize": "native"},
        "environment.vectorize: 'native' is not available: 'Pendulum-v1' has no native vector "
        f"environment here (those that do: {NATIVE_IDS}); use 'sync' or 'async'",
    ),
    "an entry point": (
        {"name": "grid", "entrypoint": "envs.py:make", "vectorize": "native"},
        "environment.vectorize: 'native' is not available: environment.entrypoint envs.py:make "
        "builds one environment at a time; only a registered Gymnasium id with a vector entry "
        "point steps its copies at once; use 'sync' or 'async'",
    ),
    "wrappers": (
        {"wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"], "vectorize": "native"},
        "environment.vectorize: 'native' is not available: environment.wrappers wrap one "
        "environment each, and a native environment is every copy at once; use 'sync' or 'async'",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refusal_is_one_line_naming_the_field(case):
    fields, message = REFUSALS[case]
    with pytest.raises(VectorizeError) as err:
        kind(**fields)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        (
            {},
            "environment: CartPole-v1, 8 copies, vectorised natively (vectorize: native, the default)",
        ),
        (
            {"vectorize": "native", "num_envs": 1},
            "environment: CartPole-v1, 1 copy, vectorised natively (vectorize: native)",
        ),
        (
            {"vectorize": "sync", "num_envs": 2},
            "environment: CartPole-v1, 2 copies, in this process by SyncVectorEnv (vectorize: sync)",
        ),
        (
            {"name": "Pendulum-v1", "num_envs": 1_000},
            "environment: Pendulum-v1, 1,000 copies, one worker process each by AsyncVectorEnv "
            "(vectorize: async, the default)",
        ),
    ],
)
def test_the_line_validate_prints(fields, line):
    assert (
        describe_vectorize(GymEnvSpec(**{"name": "CartPole-v1", "num_envs": 8, **fields})) == line
    )


def manifest(tmp_path, **environment):
    path = tmp_path / "run.yaml"
    doc = {
        "algorithm": {"name": "DQN"},
        "environment": {"name": "CartPole-v1", "num_envs": 8, **environment},
    }
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def test_validate_says_how_the_copies_run(tmp_path, capsys):
    path = manifest(tmp_path)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}: valid (DQN on CartPole-v1)",
        "  environment: CartPole-v1, 8 copies, vectorised natively (vectorize: native, the default)",
    ]
    assert main(["validate", "--format", "json", str(path)]) == 0
    entry = json.loads(capsys.readouterr().out)[str(path)]
    assert entry["environment"] == out[1].strip()


def test_validate_refuses_what_a_run_would_refuse(tmp_path, capsys):
    path = manifest(tmp_path, name="Pendulum-v1", vectorize="native")
    message = REFUSALS["no native environment"][1]
    assert main(["validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{path}: {message}\n"
    assert main(["validate", "--format", "json", str(path)]) == 1
    entry = json.loads(capsys.readouterr().out)[str(path)]
    assert entry == {"valid": False, "errors": [{"message": message}]}


@pytest.mark.parametrize("vectorize", ["native", "async"])
def test_sync_beside_a_vectorize_that_decides_is_the_schemas_refusal(vectorize, capsys, tmp_path):
    because = (
        f'environment.sync: sync must not be true when vectorize is "{vectorize}": sync: true '
        "asks for SyncVectorEnv, and vectorize decides how the copies run; leave sync out "
        "(found True)"
    )
    with pytest.raises(ValidationError, match="sync must not be true when vectorize is"):
        GymEnvSpec(name="CartPole-v1", sync=True, vectorize=vectorize)
    path = manifest(tmp_path, sync=True, vectorize=vectorize)  # one line of JSON
    assert main(["validate", str(path)]) == 1
    located = [line.strip() for line in capsys.readouterr().err.splitlines() if because in line]
    assert len(located) == 1 and located[0].startswith(f"{path}:1:")
    assert GymEnvSpec(name="CartPole-v1", sync=True, vectorize="sync").sync  # they agree


def test_workers_are_counted_by_the_choice():
    from agilerl.families.single_agent.family import gym_env_workers

    for vectorize, workers in (("native", 0), ("sync", 0), ("async", 3)):
        ctx = SimpleNamespace(environment=GymEnvSpec(name="CartPole-v1", vectorize=vectorize))
        assert gym_env_workers(ctx, SimpleNamespace(num_envs=3)) == workers  # pyright: ignore[reportArgumentType]


def test_a_run_refuses_it_in_one_line(tmp_path, capsys):
    path = manifest(tmp_path, name="Pendulum-v1", vectorize="native")
    path.write_text(path.read_text().replace('"DQN"', '"TD3"'))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"agilerl: {REFUSALS['no native environment'][1]}"
