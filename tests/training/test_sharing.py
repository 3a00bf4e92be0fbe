"""ExperienceSharing and the buffers' turns: a turn leaves a buffer exactly as it was; an
agent sees the generation's start and its own rows only; merged journals give the same
buffer (every tensor, position, size, priority and sum-tree node) however the slots were
grouped into processes, for uniform, prioritised, n-step, multi-agent and bandit buffers,
with the ring wrapping inside a turn and a turn larger than the buffer; checkpoints."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest
import torch

from agilerl.components.n_step_replay import NStepReplayBuffer
from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay import Replay
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.components.sum_tree import SumTree
from agilerl.families.bandits.memory import BanditMemory
from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer
from agilerl.training.sharing import ExperienceSharing

MAX_SIZE = 16
ENVS = 3  # rows per vector step: never a divisor of MAX_SIZE, so batches straddle the seam
GAMMA = 0.9


class FakeAgent:
    """What Replay needs of an agent; records every batch it learnt from, and gives
    priorities drawn from the global generator (seeded per turn, as evolve does)."""

    name = "Fake"
    batch_size = 4
    gamma = GAMMA
    beta = 0.4
    prior_eps = 1e-6
    learns_n_step = True
    learns_from_priorities = True

    def __init__(self) -> None:
        self.steps = 0
        self.seen: list[torch.Tensor] = []

    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        self.seen.append(torch.cat([batch["reward"].flatten(), batch["obs"].flatten()]))
        if "n_step" in batch:
            self.seen.append(batch["n_step"]["reward"].clone())
        return {}

    def learn_prioritized(self, batch: dict[str, Any]) -> tuple[dict[str, float], Any]:
        self.learn(batch)
        self.seen.append(batch["weights"].clone())
        return {}, torch.rand(batch["indices"].numel()) * 5


class ReplayCase:
    """A single-agent loop's buffers behind a Replay: one vector step of ENVS rows per step
    (episodes end at random, so n-step sums stop early), a learning step whenever a batch
    is held, the n-step buffer flushed at the end of every run."""

    def __init__(self, memory: ReplayBuffer, n_step: bool) -> None:
        self.memory = memory
        self.n_step_memory = NStepReplayBuffer(MAX_SIZE, 3, GAMMA) if n_step else None
        self.replay = Replay.of(memory, self.n_step_memory)
        self.buffers = (memory, self.n_step_memory)

    def run(self, steps: int) -> list[torch.Tensor]:
        agent = FakeAgent()
        for _ in range(steps):
            obs = torch.randn(ENVS, 2)
            action = torch.randint(0, 4, (ENVS,))
            reward = torch.randn(ENVS)
            terminated, truncated = torch.rand(ENVS) < 0.2, torch.rand(ENVS) < 0.2
            self.replay.add(obs, action, reward, obs + 1, terminated, truncated)
            if len(self.replay) >= agent.batch_size:
                self.replay.learn(agent)
        self.replay.end_turn()
        return agent.seen


class MultiAgentCase:
    """MADDPG's buffer: rows of two agents, one absent at random, with masks for one."""

    def __init__(self) -> None:
        self.memory = MultiAgentReplayBuffer(MAX_SIZE)
        self.buffers = (self.memory,)

    def run(self, steps: int) -> list[torch.Tensor]:
        seen = []
        for _ in range(steps):
            ids = ("a", "b")
            obs = {i: torch.randn(ENVS, 2) for i in ids}
            self.memory.add(
                obs,
                {i: torch.randn(ENVS, 1) for i in ids},
                {i: torch.randn(ENVS) for i in ids},
                {i: o + 1 for i, o in obs.items()},
                {i: torch.zeros(ENVS, dtype=torch.bool) for i in ids},
                {"a": torch.ones(ENVS, dtype=torch.bool), "b": torch.rand(ENVS) < 0.5},
                {"a": torch.rand(ENVS, 3) < 0.5},
                {"a": torch.rand(ENVS, 3) < 0.5},
            )
            seen.append(self.memory.sample(4)["reward"]["b"])
        return seen


class BanditCase:
    """A bandit population's memory: one pull at a time."""

    def __init__(self) -> None:
        self.memory = BanditMemory(MAX_SIZE)
        self.buffers = (self.memory,)

    def run(self, steps: int) -> list[torch.Tensor]:
        seen = []
        for _ in range(steps):
            self.memory.add_pull(torch.randn(5), float(torch.rand(())))
            seen.append(self.memory.sample(4)["context"])
        return seen


CASES = {
    "uniform": lambda: ReplayCase(ReplayBuffer(MAX_SIZE), n_step=False),
    "prioritised": lambda: ReplayCase(PrioritizedReplayBuffer(MAX_SIZE, alpha=0.6), False),
    "n-step": lambda: ReplayCase(ReplayBuffer(MAX_SIZE), n_step=True),
    "n-step prioritised": lambda: ReplayCase(PrioritizedReplayBuffer(MAX_SIZE, 0.6), True),
    "multi-agent": MultiAgentCase,
    "bandit": BanditCase,
}
#: (vector steps before the generation, vector steps per turn): from an empty buffer; a
#: partly filled one whose turns wrap around the ring; a full one; turns of more rows
#: than the buffer holds.
SCHEDULES = {"empty": (0, 4), "wraps": (3, 4), "full": (7, 3), "turn > buffer": (2, 13)}


def _prefilled(case: str, schedule: str) -> Any:
    setup = CASES[case]()
    torch.manual_seed(7)
    setup.run(SCHEDULES[schedule][0])
    return setup


def _turn(setup: Any, sharing: ExperienceSharing, slot: int, steps: int) -> list[torch.Tensor]:
    torch.manual_seed(1000 + slot)  # as evolve seeds every turn from (seed, generation, slot)
    sharing.begin_turn(slot)
    seen = setup.run(steps)
    sharing.end_turn(slot)
    return seen


def _state(buffer: ReplayBuffer, whole: bool = True) -> dict[str, Any]:
    """Everything a buffer holds: its checkpoint state (the filled rows), every storage
    tensor whole (with ``whole``: also the rows beyond the filled ones), and a prioritised
    buffer's priorities and every sum-tree node."""
    state: dict[str, Any] = {"checkpoint": buffer.state_dict()}
    if whole:
        state["storage"] = buffer._storage
    if isinstance(buffer, PrioritizedReplayBuffer):
        state["priorities"] = buffer._priorities
        state["tree"] = (buffer._tree._sum, buffer._tree._min)
    if isinstance(buffer, NStepReplayBuffer):
        state["pending"] = buffer.pending
    return state


def _assert_same(a: Any, b: Any, where: str = "") -> None:
    """Equal structures with bit-identical tensors and arrays (same dtypes)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif torch.is_tensor(a):
        assert torch.is_tensor(b) and a.dtype == b.dtype and a.shape == b.shape, where
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, where
        assert np.array_equal(a, b), where
    else:
        assert a == b, where


def _assert_same_buffers(x: Any, y: Any, whole: bool = True) -> None:
    for a, b in zip(x.buffers, y.buffers, strict=True):
        if a is not None:
            _assert_same(_state(a, whole), _state(b, whole))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", CASES)
def test_merged_journals_give_the_same_buffer_however_the_slots_are_grouped(case, schedule):
    steps = SCHEDULES[schedule][1]
    one = _prefilled(case, schedule)  # slots 0-3 on one process
    first, second = copy.deepcopy(one), copy.deepcopy(one)  # {0, 1} and {2, 3} on two
    sharing = {id(s): ExperienceSharing(*s.buffers) for s in (one, first, second)}
    seen_one = {slot: _turn(one, sharing[id(one)], slot, steps) for slot in range(4)}
    seen_split = {slot: _turn(first, sharing[id(first)], slot, steps) for slot in (0, 1)}
    seen_split.update({slot: _turn(second, sharing[id(second)], slot, steps) for slot in (2, 3)})
    # Every agent learnt from exactly the same batches whichever agents ran before it.
    _assert_same(seen_one, seen_split)
    journals_one = sharing[id(one)].take()
    journals = {**sharing[id(first)].take(), **sharing[id(second)].take()}
    _assert_same(journals_one, journals)
    for setup in (one, first, second):
        sharing[id(setup)].merge(journals)
    _assert_same_buffers(one, first)
    _assert_same_buffers(one, second)
    # And the next generation goes on identically from any copy.
    again = {id(s): _turn(s, sharing[id(s)], 1, steps) for s in (one, first, second)}
    _assert_same(again[id(one)], again[id(first)])
    _assert_same(again[id(one)], again[id(second)])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", CASES)
def test_a_turn_leaves_every_buffer_exactly_as_it_was(case, schedule):
    setup = _prefilled(case, schedule)
    before = copy.deepcopy(setup)
    sharing = ExperienceSharing(*setup.buffers)
    journals = [_turn(setup, sharing, 0, SCHEDULES[schedule][1])]
    assert journals[0]  # the turn did sample and learn
    # Rows beyond the filled ones hold whatever the turn wrote there: no contents.
    _assert_same_buffers(before, setup, whole=False)
    for buffer, old in zip(setup.buffers, before.buffers, strict=True):
        if buffer is not None:
            assert (buffer._storage is None) == (old._storage is None)


def _rows(reward: float, count: int) -> dict[str, torch.Tensor]:
    obs = torch.arange(count, dtype=torch.float32)[:, None]
    return {
        "obs": obs,
        "action": torch.zeros(count, dtype=torch.int64),
        "reward": torch.full((count,), reward),
        "next_obs": obs,
        "done": torch.zeros(count),
    }


def test_an_agent_sees_the_generation_start_and_its_own_rows_only():
    memory = ReplayBuffer(100)
    memory.add(**_rows(-1.0, 10))  # what the generation starts from
    sharing = ExperienceSharing(memory)
    torch.manual_seed(0)
    for slot in range(3):
        sharing.begin_turn(slot)
        assert len(memory) == 10 and memory.position == 10
        memory.add(**_rows(float(slot), 5 + slot))
        drawn = set(memory.sample(2000)["reward"].tolist())
        assert drawn == {-1.0, float(slot)}  # never another slot's rows of the generation
        sharing.end_turn(slot)
    journals = sharing.take()
    assert sorted(journals) == [0, 1, 2] and sharing.take() == {}
    sharing.merge({slot: journals[slot] for slot in (2, 0, 1)})  # applied in slot order
    rewards = memory.state_dict()["data"]["reward"].tolist()
    assert rewards == [-1.0] * 10 + [0.0] * 5 + [1.0] * 6 + [2.0] * 7


def _per_with(priorities: list[float]) -> PrioritizedReplayBuffer:
    memory = PrioritizedReplayBuffer(10, alpha=1.0)
    memory.add(**_rows(0.0, len(priorities)))
    memory.update_priorities(np.arange(len(priorities)), np.array(priorities), prior_eps=0.0)
    return memory


def test_prioritised_merge_applies_old_row_priorities_in_slot_order_and_new_rows_at_max():
    memory = _per_with([1.0, 1.0, 1.0, 1.0])
    sharing = ExperienceSharing(memory)
    sharing.begin_turn(0)
    memory.update_priorities(np.array([0, 1, 0]), np.array([2.0, 3.0, 4.0]), prior_eps=0.0)
    sharing.end_turn(0)
    sharing.begin_turn(1)
    memory.add(**_rows(1.0, 2))  # slots 4, 5: this turn's own rows
    memory.update_priorities(np.array([1, 4]), np.array([5.0, 0.5]), prior_eps=0.0)
    assert memory.max_priority == 5.0
    sharing.end_turn(1)
    assert memory.max_priority == 1.0 and len(memory) == 4
    journals = sharing.take()
    old_rows = journals[1][0]["old_rows"]  # row 4 is the turn's own: not journalled
    _assert_same(old_rows, {"slots": np.array([1]), "priorities": np.array([5.0])})
    sharing.merge(journals)
    # Slot 0 gave row 0 its last update (4) and row 1 a 3, which slot 1's 5 replaced;
    # slot 1's own rows 4 and 5 enter at the max priority (5), not row 4's own 0.5.
    np.testing.assert_array_equal(memory.priorities(), [4.0, 5.0, 1.0, 1.0, 5.0, 5.0])
    assert memory.max_priority == 5.0


def test_a_prioritised_turn_into_empty_slots_leaves_them_unused_in_the_sum_tree():
    memory = _per_with([2.0, 3.0])
    fresh = _per_with([2.0, 3.0])
    sharing = ExperienceSharing(memory)
    sharing.begin_turn(0)
    memory.add(**_rows(1.0, 5))
    memory.update_priorities(np.arange(7), np.full(7, 0.5), prior_eps=0.0)
    sharing.end_turn(0)
    assert memory._tree.min == 2.0 and memory._tree.total == 5.0
    _assert_same(_state(memory, whole=False), _state(fresh, whole=False))


def test_sum_tree_clear_makes_leaves_unused_again():
    tree, fresh = SumTree(100), SumTree(100)
    tree.update([3, 50, 99], [1.0, 2.0, 3.0])
    fresh.update([50], [2.0])
    tree.clear([3, 99, 3])
    assert tree.total == 2.0 and tree.min == 2.0
    _assert_same((tree._sum, tree._min), (fresh._sum, fresh._min))


def test_journals_are_cpu_data_that_survive_pickling():
    setup = _prefilled("n-step prioritised", "wraps")
    twin = copy.deepcopy(setup)
    sharing, twin_sharing = ExperienceSharing(*setup.buffers), ExperienceSharing(*twin.buffers)
    _turn(setup, sharing, 0, 4)
    _turn(twin, twin_sharing, 0, 4)
    journals = sharing.take()
    for part in journals[0]:
        for leaf in part["rows"].values():
            assert leaf.device.type == "cpu"
    sharing.merge(pickle.loads(pickle.dumps(journals)))
    twin_sharing.merge(twin_sharing.take())
    _assert_same_buffers(setup, twin)


def test_a_checkpoint_after_the_merge_resumes_the_same_buffer():
    setup = _prefilled("n-step prioritised", "wraps")
    sharing = ExperienceSharing(*setup.buffers)
    for slot in range(2):
        _turn(setup, sharing, slot, 4)
    sharing.merge(sharing.take())
    resumed = CASES["n-step prioritised"]()
    resumed.memory.load_state_dict(setup.memory.state_dict())
    resumed.n_step_memory.load_state_dict(setup.n_step_memory.state_dict())
    _assert_same_buffers(setup, resumed)
    resumed_sharing = ExperienceSharing(*resumed.buffers)
    _assert_same(_turn(setup, sharing, 0, 4), _turn(resumed, resumed_sharing, 0, 4))
    sharing.merge(sharing.take())
    resumed_sharing.merge(resumed_sharing.take())
    _assert_same_buffers(setup, resumed)


def test_what_a_turn_would_undo_is_refused_while_it_is_open():
    memory = _per_with([1.0])
    saved = memory.state_dict()
    memory.begin_turn()
    for call in (
        memory.state_dict,
        lambda: memory.load_state_dict(saved),
        memory.clear,
        lambda: memory.merge([]),
        memory.begin_turn,
    ):
        with pytest.raises(RuntimeError, match="a turn is open"):
            call()
    memory.end_turn()
    with pytest.raises(RuntimeError, match="no turn is open"):
        memory.end_turn()


def test_sharing_refuses_turns_out_of_order_and_foreign_journals():
    memory, n_step = ReplayBuffer(8), NStepReplayBuffer(8, 2, GAMMA)
    sharing = ExperienceSharing(memory, None, n_step)
    assert sharing.buffers == (memory, n_step)
    sharing.begin_turn(0)
    with pytest.raises(RuntimeError, match="slot 0 is still open"):
        sharing.begin_turn(1)
    with pytest.raises(RuntimeError, match="open turn is that of slot 0"):
        sharing.end_turn(1)
    with pytest.raises(RuntimeError, match="still open"):
        sharing.take()
    sharing.end_turn(0)
    with pytest.raises(RuntimeError, match="slot 0 already had its turn"):
        sharing.begin_turn(0)
    with pytest.raises(ValueError, match="journal of slot 3 has 1 parts, one per buffer"):
        sharing.merge({3: [memory.state_dict()]})
    with pytest.raises(TypeError, match="shares replay buffers"):
        ExperienceSharing(object())


def test_an_n_step_turn_begins_and_ends_with_nothing_pending():
    memory, n_step = ReplayBuffer(8), NStepReplayBuffer(8, 3, GAMMA)
    sharing = ExperienceSharing(memory, n_step)
    step = (torch.zeros(2, 1), torch.zeros(2), torch.zeros(2), torch.zeros(2, 1))
    sharing.begin_turn(0)
    n_step.add(*step, torch.zeros(2, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="1 steps are pending.*flush"):
        sharing.end_turn(0)
    memory.store(n_step.flush())
    sharing.end_turn(0)
    n_step.add(*step, torch.zeros(2, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="pending"):
        sharing.begin_turn(1)
    assert memory._turn is None and n_step._turn is None  # nothing left half begun


def test_a_journal_from_a_buffer_of_another_size_is_refused():
    small, large = ReplayBuffer(4), ReplayBuffer(8)
    small.begin_turn()
    small.add(**_rows(0.0, 6))
    journal = small.end_turn()
    assert journal["written"] == 6 and journal["rows"]["reward"].shape == (4,)
    with pytest.raises(ValueError, match="journal of 6 rows holding 4 does not come from a "):
        large.merge([journal])
