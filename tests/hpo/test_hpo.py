"""Evolutionary HPO: tournament selection and mutations on real agents."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms import DQN
from agilerl.algorithms.hyperparameters import RLParameter
from agilerl.hpo import Mutations, TournamentSelection

OBS = spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = spaces.Discrete(2)
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}


def population(n=4, **kwargs):
    torch.manual_seed(0)
    return [DQN(OBS, ACT, i, net_config=NET, seed=i, **kwargs) for i in range(n)]


def batch(n=32):
    g = np.random.default_rng(0)
    return {
        "obs": torch.as_tensor(g.uniform(-1, 1, (n, 4)), dtype=torch.float32),
        "action": torch.as_tensor(g.integers(2, size=n)),
        "reward": torch.ones(n),
        "next_obs": torch.as_tensor(g.uniform(-1, 1, (n, 4)), dtype=torch.float32),
        "done": torch.zeros(n),
    }


def optimiser_params_match(agent):
    held = {id(p) for group in agent.optimizer.param_groups for p in group["params"]}
    return held == {id(p) for p in agent.actor.parameters()}


def test_tournament_with_elitism_keeps_the_fittest_agent_in_slot_0():
    pop = population()
    for agent, fit in zip(pop, [1.0, 9.0, 3.0, 2.0], strict=True):
        agent.fitness.append(fit)
    selection = TournamentSelection(tournament_size=2, elitism=True, population_size=4, rand_seed=0)
    elite, new = selection.select(pop)
    assert elite is new[0] and new[0].index == 1 and new[0].fitness[-1] == 9.0
    x = torch.zeros(3, 4)
    assert torch.equal(new[0].actor(x), pop[1].actor(x))  # same weights, a copy
    assert new[0].actor is not pop[1].actor
    assert [a.index for a in new[1:]] == [4, 5, 6]  # fresh, increasing indices


def test_a_tournament_of_the_whole_population_always_picks_the_best():
    pop = population()
    for agent, fit in zip(pop, [1.0, 2.0, 7.0, 3.0], strict=True):
        agent.fitness.append(fit)
    selection = TournamentSelection(
        tournament_size=50, elitism=False, population_size=4, rand_seed=1
    )
    _, new = selection.select(pop)
    assert [a.fitness[-1] for a in new] == [7.0] * 4


def test_zero_weight_kinds_are_never_drawn_and_hyperparameters_stay_in_range():
    hp = {"lr": RLParameter(1e-4, 2e-4), "batch_size": RLParameter(16, 40)}
    pop = population(hp_config=hp, lr=1.5e-4, batch_size=32)
    mutations = Mutations(
        no_mutation=0, architecture=0, parameters=0, activation=0, rl_hp=1, rand_seed=0
    )
    unchanged = 0
    for _ in range(30):
        before = [(agent.lr, agent.batch_size, agent.learn_step) for agent in pop]
        mutations.mutation(pop)
        for agent, values in zip(pop, before, strict=True):
            name = agent.mut.removeprefix("None (").split()[0]
            assert name in {"lr", "batch_size", "learn_step"}
            # a value clipped back to where it was is no mutation, never "a->a"
            changed = (agent.lr, agent.batch_size, agent.learn_step) != values
            assert agent.mut.startswith("None (") is not changed, agent.mut
            unchanged += not changed
            assert 1e-4 <= agent.lr <= 2e-4 and 16 <= agent.batch_size <= 40
            assert isinstance(agent.batch_size, int)
            assert agent.optimizer.param_groups[0]["lr"] == agent.lr  # lr took effect
    assert unchanged > 0  # the narrow lr range pins it at a bound often


def test_the_mutation_before_training_never_draws_none():
    pop = population()
    heavy_none = Mutations(no_mutation=50, architecture=0, parameters=1, rl_hp=0, rand_seed=0)
    heavy_none.mutation(pop, pretraining=True)
    assert [agent.mut.split()[0] for agent in pop] == ["params"] * 4
    heavy_none.mutation(pop)  # after a generation "none" is drawn by its weight again
    assert any(agent.mut == "None" for agent in pop)
    only_none = Mutations(no_mutation=1, architecture=0, parameters=0, rl_hp=0, rand_seed=0)
    only_none.mutation(pop, pretraining=True)  # nothing else to draw: nothing changes
    assert [agent.mut for agent in pop] == ["None"] * 4


def test_elite_slot_is_left_alone():
    pop = population()
    before = [p.clone() for p in pop[0].actor.parameters()]
    Mutations(no_mutation=0, architecture=1, parameters=1, rl_hp=1, rand_seed=0).mutation(
        pop, skip_first=True
    )
    assert pop[0].mut == "None (elite)"
    assert all(torch.equal(a, b) for a, b in zip(before, pop[0].actor.parameters(), strict=True))
    assert all(agent.mut != "None (elite)" for agent in pop[1:])


@pytest.mark.parametrize("new_layer", [True, False])
def test_architecture_mutations_keep_training_working(new_layer):
    agent = population(1)[0]
    names = agent.architecture_mutations(new_layer=new_layer)
    assert names
    for seed, name in enumerate(names):
        before = agent.actor.spec.model_dump()
        info = agent.mutate_architecture(name, seed)
        if info:
            assert agent.actor.spec.model_dump() != before
        assert agent.actor_target.spec == agent.actor.spec  # the target follows
        assert optimiser_params_match(agent)
        loss = agent.learn(batch())["td_loss"]
        assert np.isfinite(loss)


def test_parameter_mutation_changes_weights_and_the_target_follows():
    agent = population(1)[0]
    before = [p.clone() for p in agent.actor.parameters()]
    changed = agent.mutate_parameters(np.random.default_rng(0), mutation_sd=0.1)
    after = list(agent.actor.parameters())
    assert changed > 0 and any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    x = torch.zeros(2, 4)
    assert torch.equal(agent.actor(x), agent.actor_target(x))


def test_activation_mutation_switches_an_activation():
    agent = population(1)[0]
    info = agent.mutate_activation(np.random.default_rng(0))
    activations = {
        agent.actor.spec.encoder_config.activation,
        agent.actor.spec.head_config.activation,
    }
    assert info["activation"] in activations
    assert np.isfinite(agent.learn(batch())["td_loss"])


def test_unknown_mutable_hyperparameter_is_a_clear_error():
    with pytest.raises(ValueError, match=r"hp_config.ent_coef: DQN has no numeric hyperparameter"):
        population(1, hp_config={"ent_coef": {"min": 0.0, "max": 1.0}})
