"""The family layer: agent protocols, the trainer's table, build_algorithm as the one
way to build, constructor defaults equal to schema defaults, the evaluation callback,
and the multi-agent and LLM contracts."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from gymnasium import spaces

import agilerl.algorithms
from agilerl.algorithms.core.evolvable import EvolvableAlgorithm
from agilerl.algorithms.core.llm import LLMAlgorithm
from agilerl.algorithms.core.multi_agent import MultiAgentRLAlgorithm, agent_group
from agilerl.algorithms.core.protocols import EvolvingAgent
from agilerl.families import FAMILIES, family_for
from agilerl.families.base import Family
from agilerl.files import checkpoints
from agilerl.hpo import Mutations, TournamentSelection
from agilerl.models.base import AgentType, AlgorithmNotAvailableError
from agilerl.models.networks import QNetworkSpec
from agilerl.models.registry import ALGO_REGISTRY
from agilerl.networks.networks import QNetwork
from agilerl.trainer import LocalTrainer
from agilerl.training.evolution import RunConfig, Turns, each_alone, evolve, one_by_one
from agilerl.training.state import RunState

BOX = spaces.Box(-1.0, 1.0, (3,), np.float32)


def _spec_and_class(name: str) -> tuple[type, type]:
    return ALGO_REGISTRY.get(name).spec_cls, getattr(agilerl.algorithms, name)


@pytest.mark.parametrize("name", agilerl.algorithms.NAMES)
def test_every_algorithm_is_an_evolving_agent_of_its_family(name):
    spec_cls, algo_cls = _spec_and_class(name)
    assert issubclass(algo_cls, EvolvableAlgorithm)
    assert spec_cls.agent_type in FAMILIES  # an implemented algorithm has a family row
    # The default mutable hyperparameters all exist on the algorithm: a default that
    # names nothing would silently mutate nothing.
    constructor = inspect.signature(algo_cls).parameters
    missing = [n for n in algo_cls.default_mutable if n not in constructor]
    assert not missing, f"{name}.default_mutable names {missing}, which it does not have"


def test_dqn_satisfies_the_agent_protocol():
    agent = agilerl.algorithms.DQN(BOX, spaces.Discrete(2), seed=0)
    assert isinstance(agent, EvolvingAgent)
    assert not isinstance(object(), EvolvingAgent)


def test_every_agent_type_has_one_family_keyed_by_its_own_type():
    assert set(FAMILIES) == set(AgentType)
    for agent_type, family in FAMILIES.items():
        assert isinstance(family, Family) and family.agent_type is agent_type


def test_an_agent_type_without_a_family_is_refused_naming_the_algorithm(monkeypatch):
    monkeypatch.delitem(FAMILIES, AgentType.OfflineAgent)
    spec = ALGO_REGISTRY.get("CQN").spec_cls
    with pytest.raises(AlgorithmNotAvailableError, match="CQN is a .*no family"):
        family_for(spec.model_construct())  # only its type and name are read


def test_the_trainer_builds_every_agent_through_build_algorithm(monkeypatch):
    trainer = LocalTrainer(
        "DQN", "CartPole-v1", {"pop_size": 2, "max_steps": 32, "evo_steps": 32, "seed": 3}
    )
    calls = []
    original = type(trainer.algorithm).build_algorithm

    def recording(self, *args, **kwargs):
        calls.append(kwargs)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(trainer.algorithm), "build_algorithm", recording)
    population, _ = trainer.train(verbose=False)
    # The pre-flight estimate builds one on the meta device first, the same way.
    assert [(call["index"], call["device"].type) for call in calls] == [
        (0, "meta"),
        (0, "cpu"),
        (1, "cpu"),
    ]
    assert all(call["observation_space"].shape == (4,) for call in calls)
    assert [a.index for a in population] == [0, 1]


def test_evolve_takes_fitness_and_steps_from_the_evaluation_callback():
    population = [agilerl.algorithms.DQN(BOX, spaces.Discrete(2), i, seed=i) for i in range(3)]
    evaluated = []

    def train_agent(agent, slot, budget, state):
        agent.steps += budget
        return budget, [], {}

    def evaluate_agent(agent, slot, state):
        # A fitness that is no episode return: the agent's index (the last one is best).
        evaluated.append((state.generation, slot))
        agent.fitness.append(float(agent.index))
        return float(agent.index), 7

    state = RunState(seed=1)
    final, fitnesses = evolve(
        population,
        Turns(one_by_one(train_agent), each_alone(evaluate_agent)),
        RunConfig(
            max_steps=20,
            evo_steps=10,
            selection=TournamentSelection(2, True, 3, rand_seed=0),
            mutation=Mutations(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, rand_seed=0),
            state=state,
            verbose=False,
        ),
    )
    assert evaluated == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    first, second = ([a["fitness"] for a in g["agents"]] for g in state.history)
    assert first == [0.0, 1.0, 2.0]
    # Selection used the callback's fitness: the elite (index 2) kept slot 0, the clones
    # got new indices 3 and 4, which the callback then scored.
    assert [a["index"] for a in state.history[1]["agents"]] == [2, 3, 4] and second == [2, 3, 4]
    assert final[0].index == 2 and fitnesses == [2.0, 3.0, 4.0]
    assert state.best["fitness"] == 4.0 and state.best["index"] == 4
    # Evaluation steps counted as the callback reported them: 3 agents x (10 + 7) each.
    assert state.history[0]["env_steps"] == 3 * 17


# -- the multi-agent contract -------------------------------------------------------------
class _TwoGroupAgent(MultiAgentRLAlgorithm):
    """The smallest multi-agent algorithm: one Q-network per group."""

    init_args = ("lr",)
    eval_networks = ("speaker", "listener")
    optimizer_specs = {"optimizer": (("speaker", "listener"), "lr")}

    def __init__(self, observation_spaces, action_spaces, index=0, *, lr=1e-3, **kwargs):
        kwargs.pop("hp_config", None)
        super().__init__(observation_spaces, action_spaces, index, **kwargs)
        self.lr = lr
        spec = QNetworkSpec.model_validate(
            {
                "encoder_config": {"arch": "mlp", "hidden_size": [8]},
                "head_config": {"hidden_size": [8]},
            }
        )
        for group in ("speaker", "listener"):
            obs, act = self.group_space(group), self.group_space(group, "action")
            setattr(self, group, QNetwork(obs, act, spec))
        self.finish_init()


SPEAKERS = {"speaker_0": BOX, "speaker_1": BOX, "listener_0": spaces.Box(0, 1, (5,))}
ACTIONS = {"speaker_0": spaces.Discrete(3), "speaker_1": spaces.Discrete(3)}
ACTIONS["listener_0"] = spaces.Discrete(5)


def test_agent_ids_group_by_prefix():
    assert agent_group("speaker_0") == "speaker"
    assert agent_group("team_blue_12") == "team_blue"
    assert agent_group("adversary") == "adversary"
    assert agent_group("_3") == "_3"
    agent = _TwoGroupAgent(SPEAKERS, ACTIONS)
    assert agent.groups == {"speaker": ["speaker_0", "speaker_1"], "listener": ["listener_0"]}
    assert agent.group_space("listener").shape == (5,)


def test_multi_agent_spaces_are_checked_by_agent_id():
    with pytest.raises(ValueError, match=r"no action space for \['listener_0'\]"):
        _TwoGroupAgent(SPEAKERS, {k: v for k, v in ACTIONS.items() if k != "listener_0"})
    different = {**SPEAKERS, "speaker_1": spaces.Box(-1.0, 1.0, (4,), np.float32)}
    with pytest.raises(ValueError, match="'speaker_0' and 'speaker_1' form group 'speaker'"):
        _TwoGroupAgent(different, ACTIONS)
    with pytest.raises(TypeError, match=r"observation_spaces\['speaker_0'\]"):
        _TwoGroupAgent({**SPEAKERS, "speaker_0": "a box"}, ACTIONS)


def test_a_multi_agent_agent_round_trips_through_the_checkpoint_format(tmp_path, monkeypatch):
    monkeypatch.setattr(agilerl.algorithms, "NAMES", (*agilerl.algorithms.NAMES, "_TwoGroup"))
    monkeypatch.setattr(agilerl.algorithms, "_TwoGroup", _TwoGroupAgent, raising=False)
    agent = _TwoGroupAgent(SPEAKERS, ACTIONS, index=4, seed=0)
    agent.fitness.append(1.5)
    path = tmp_path / "team.pt"
    agent.save_checkpoint(path)
    state = checkpoints.load(path, kind="agent")
    rebuilt = _TwoGroupAgent.from_state_dict(state)
    assert rebuilt.index == 4 and rebuilt.fitness == [1.5]
    assert rebuilt.observation_spaces == SPEAKERS and rebuilt.groups == agent.groups
    for group in ("speaker", "listener"):
        for key, value in getattr(agent, group).state_dict().items():
            torch.testing.assert_close(getattr(rebuilt, group).state_dict()[key], value)
    state["observation_spaces"] = {"speaker_0": 3}
    with pytest.raises(checkpoints.CheckpointError, match=r"observation_spaces"):
        _TwoGroupAgent.from_state_dict(state)


# -- the LLM contract ---------------------------------------------------------------------
def test_llm_agents_mutate_hyperparameters_but_never_their_architecture(tiny_llm):
    agent = agilerl.algorithms.SFT(
        pretrained_model_name_or_path=str(tiny_llm / "model"),
        lr=1e-4,
        hp_config={"lr": {"min": 1e-5, "max": 1e-3}},
    )
    assert isinstance(agent, LLMAlgorithm)
    mutations = Mutations(rand_seed=0)
    assert mutations.apply(agent, "architecture") == "None (fixed architecture)"
    assert mutations.apply(agent, "activation") == "None (fixed activation)"
    assert mutations.apply(agent, "parameters") == "params (0 weights)"
    described = mutations.apply(agent, "rl_hp")
    assert described.startswith("lr ") and agent.lr != 1e-4
    with pytest.raises(ValueError, match="no architecture mutation"):
        agent.mutate_architecture("encoder.add_layer", 0)
