"""What a replay buffer section builds (agilerl/models/replay_base.py): AgileRL's
``ReplayBufferSpec.init_buffer`` and ``init_n_step_buffer``, the engine's buffers of each
algorithm, and the combinations an algorithm cannot use refused naming the key."""

from __future__ import annotations

from typing import Any

import pytest

from agilerl.models import (
    CQNSpec,
    DDPGSpec,
    DQNSpec,
    IPPOSpec,
    MADDPGSpec,
    MATD3Spec,
    NeuralTSSpec,
    NeuralUCBSpec,
    PPOSpec,
    RainbowDQNSpec,
    ReplayBufferSpec,
    TD3Spec,
    dump_manifest,
    parse_manifest,
)

#: A small valid manifest (AgileRL's own sections and names).
MANIFEST = {
    "algorithm": {"name": "DQN", "lr": 0.001},
    "environment": {"name": "CartPole-v1", "num_envs": 4},
    "training": {"max_steps": 2000, "evo_steps": 500},
}


def _engine_classes() -> dict[str, type]:
    from agilerl.components.n_step_replay import NStepReplayBuffer
    from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
    from agilerl.components.replay_buffer import ReplayBuffer
    from agilerl.families.bandits.memory import BanditMemory
    from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer

    return {
        "uniform": ReplayBuffer,
        "per": PrioritizedReplayBuffer,
        "n_step": NStepReplayBuffer,
        "bandit": BanditMemory,
        "multi_agent": MultiAgentReplayBuffer,
    }


#: Algorithm -> the main buffer a plain section gives it (None: it keeps no replay).
MAIN_BUFFERS = [
    (DQNSpec, "uniform"),
    (RainbowDQNSpec, "uniform"),
    (DDPGSpec, "uniform"),
    (TD3Spec, "uniform"),
    (PPOSpec, None),
    (CQNSpec, "uniform"),
    (NeuralUCBSpec, "bandit"),
    (NeuralTSSpec, "bandit"),
    (IPPOSpec, None),
    (MADDPGSpec, "multi_agent"),
    (MATD3Spec, "multi_agent"),
]


@pytest.mark.parametrize(
    ("algorithm", "kind"), MAIN_BUFFERS, ids=lambda v: getattr(v, "__name__", v)
)
def test_init_buffer_per_algorithm(algorithm: type, kind: str | None) -> None:
    spec = ReplayBufferSpec(max_size=500)
    memory = spec.init_buffer(algorithm(), device="cpu")
    if kind is None:
        assert memory is None
        return
    assert type(memory) is _engine_classes()[kind]
    assert memory.max_size == 500
    assert str(memory.device) == "cpu"
    assert len(memory) == 0
    assert spec.init_n_step_buffer(algorithm()) is None


def test_per_buffer_gives_prioritised_replay() -> None:
    memory = ReplayBufferSpec(per_buffer=True, per_buffer_args={"alpha": 0.7}).init_buffer(
        RainbowDQNSpec()
    )
    assert type(memory) is _engine_classes()["per"]
    assert memory.alpha == 0.7


def test_n_step_buffer_is_a_side_buffer() -> None:
    spec = ReplayBufferSpec(n_step_buffer=True, n_step_buffer_args={"n_step": 4})
    algorithm = RainbowDQNSpec(n_step=4, gamma=0.9)
    assert type(spec.init_buffer(algorithm)) is _engine_classes()["uniform"]
    side = spec.init_n_step_buffer(algorithm)
    assert type(side) is _engine_classes()["n_step"]
    assert (side.n_step, side.gamma) == (4, 0.9)


def test_per_and_n_step_give_both() -> None:
    spec = ReplayBufferSpec(per_buffer=True, n_step_buffer=True)
    assert type(spec.init_buffer(RainbowDQNSpec())) is _engine_classes()["per"]
    assert type(spec.init_n_step_buffer(RainbowDQNSpec())) is _engine_classes()["n_step"]


@pytest.mark.parametrize(
    ("section", "algorithm", "where"),
    [
        ({"per_buffer": True}, DQNSpec(), "replay_buffer.per_buffer"),
        ({"n_step_buffer": True}, DQNSpec(), "replay_buffer.n_step_buffer"),
        (
            {"n_step_buffer": True, "n_step_buffer_args": {"n_step": 5}},
            RainbowDQNSpec(n_step=3),
            "replay_buffer.n_step_buffer_args.n_step",
        ),
    ],
)
def test_init_buffer_refuses_what_the_algorithm_cannot_use(
    section: dict, algorithm: Any, where: str
) -> None:
    for method in ("init_buffer", "init_n_step_buffer"):
        with pytest.raises(ValueError, match=where):
            getattr(ReplayBufferSpec(**section), method)(algorithm)


def test_init_buffer_wants_a_spec_instance() -> None:
    with pytest.raises(TypeError, match="algo_spec"):
        ReplayBufferSpec().init_buffer(DQNSpec)


def test_standard_buffer_is_accepted_and_changes_nothing() -> None:
    spec = ReplayBufferSpec(standard_buffer=False)
    assert type(spec.init_buffer(DQNSpec())) is _engine_classes()["uniform"]
    assert dump_manifest(parse_manifest({**MANIFEST, "replay_buffer": {"standard_buffer": False}}))[
        "replay_buffer"
    ] == {"standard_buffer": False}
