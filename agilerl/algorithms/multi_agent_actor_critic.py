"""What IPPO, MADDPG and MATD3 share: per-group networks, batches per group, masks,
activity, mutation per group, evaluation.

Networks. Each algorithm names its per-group *roles* (``actor``, ``critic``, ...); the
network of role ``r`` for group ``g`` is the attribute ``"r/g"`` (e.g. ``actor/speaker``),
its target ``"r_target/g"`` and optimisers ``"<name>/g"``. The family layer's
``eval_networks`` / ``target_networks`` / ``optimizer_specs`` are set per instance from
these, so checkpoints, clones and optimiser rebuilds work unchanged.

Batches per group. The agents of a group share its networks: their batches (``[N, ...]``
per agent, Dict observations as trees) are concatenated member by member into one
``[members * N, ...]`` batch, acted on in one forward pass, and split back per agent.

Observations with an ``action_mask`` key (a Dict observation space holding one) give the
mask to the agent; the networks are built on the space without that key. A mask in
``infos[agent]["action_mask"]`` takes precedence. An agent marked inactive
(``infos[agent]["active"]`` False) still gets an action (the environment ignores it);
the learners leave its rows out of every loss.

Mutation. An architecture or activation mutation is named ``"<group>:<network
mutation>"``: it changes the group's actor and is replayed, with the same seed, on every
other network of the group that has it (its critics); the targets of the changed networks
are rebuilt from them, and the optimisers of the group (only) start afresh. Parameter
noise perturbs every group's actor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from pydantic import BaseModel

from agilerl.algorithms.core.evolvable import ACTIVATION_MUTATION, LAYER_MUTATIONS, perturb_weights
from agilerl.algorithms.core.multi_agent import MultiAgentRLAlgorithm, PerAgent
from agilerl.algorithms.core.rl_algorithm import SpecT, network_spec
from agilerl.components.observations import map_tree, tree_leaves
from agilerl.modules.multi_input import is_image_space
from agilerl.networks.base import EvolvableNetwork, preprocess

MASK_KEY = "action_mask"


def policy_space(space: spaces.Space) -> spaces.Space:
    """The observation space a policy reads: a Dict space without its action mask."""
    if isinstance(space, spaces.Dict) and MASK_KEY in space.spaces:
        return spaces.Dict({k: v for k, v in space.spaces.items() if k != MASK_KEY})
    return space


def concat_tree(items: list[Any]) -> Any:
    """Batches of one structure concatenated along the batch dimension, leaf by leaf."""
    if len(items) == 1:
        return items[0]

    def cat(*leaves: Any) -> Any:
        if any(torch.is_tensor(x) for x in leaves):
            return torch.cat([torch.as_tensor(x) for x in leaves])
        return np.concatenate([np.asarray(x) for x in leaves])

    return map_tree(cat, items[0], *items[1:])


def rows_of(tree: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of every leaf of a batch."""
    return map_tree(lambda x: x[start:stop], tree)


def section_dict(net_config: Any) -> dict[str, Any]:
    """A manifest ``network`` section (or spec, or dict, or None) as a plain dict."""
    if net_config is None:
        return {}
    if isinstance(net_config, BaseModel):
        return net_config.model_dump(exclude_unset=False)
    if isinstance(net_config, Mapping):
        return dict(net_config)
    raise TypeError(f"net_config must be a network section or spec, got {net_config!r}")


def section_for_space(net_config: Any, space: spaces.Space) -> dict[str, Any]:
    """The network section as it applies to a network reading ``space``.

    One section serves every group of a team, and it usually describes an MLP (the
    vector observations most agents have). For an image observation an MLP section's
    encoder gives way to the inferred CNN; for a Dict or Tuple observation it becomes the
    multi-input encoder's MLP for the vector parts. Any other encoder is used as given
    (and refused by the network when it cannot read the space)."""
    data = section_dict(net_config)
    encoder = data.get("encoder_config")
    if isinstance(encoder, BaseModel):
        encoder = encoder.model_dump()
    arch = data.get("arch") or (encoder or {}).get("arch")
    structured = isinstance(space, (spaces.Dict, spaces.Tuple))
    if arch not in (None, "mlp") or not (structured or is_image_space(space)):
        return data
    data = {k: v for k, v in data.items() if k not in ("arch", "encoder_config")}
    if structured and encoder:
        mlp = {k: v for k, v in encoder.items() if k != "arch"}
        data["encoder_config"] = {"arch": "multiinput", "vector_space_mlp": True, "mlp_config": mlp}
    return data


class MultiAgentActorCritic(MultiAgentRLAlgorithm):
    """Base of IPPO, MADDPG and MATD3 (module docstring)."""

    #: Network roles every group has, the actor first (its mutations are replayed on the rest).
    roles: ClassVar[tuple[str, ...]] = ("actor",)
    #: Target role -> the role it follows.
    target_roles: ClassVar[Mapping[str, str]] = {}
    #: Optimiser name -> (roles it trains, learning-rate attribute).
    optimizer_roles: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {}

    def __init__(
        self,
        observation_spaces: Mapping[str, spaces.Space],
        action_spaces: Mapping[str, spaces.Space],
        index: int = 0,
        **options: Any,
    ) -> None:
        super().__init__(observation_spaces, action_spaces, index, **options)
        torch_compiler = getattr(self, "torch_compiler", None)  # a spec field of all three
        if torch_compiler is not None:
            # Mutations rebuild the networks between generations, and every rebuild would
            # compile again: refused plainly rather than accepted and ignored.
            raise ValueError(
                f"torch_compiler: {torch_compiler!r} is not supported by {self.name} (its "
                "networks are rebuilt by every architecture mutation); set it to null"
            )
        self.torch_compiler = None
        #: Agent id -> its group.
        self.group_of = {a: g for g, members in self.groups.items() for a in members}
        #: Group -> the observation space its networks read (no action mask).
        self.policy_spaces = {g: policy_space(self.group_space(g)) for g in self.groups}
        # The network tables are per instance here, named after this team's groups; the base
        # class declares them ClassVar as every single-agent algorithm fixes them per class.
        self.eval_networks = tuple(  # pyright: ignore[reportAttributeAccessIssue]
            self.net_name(r, g) for g in self.groups for r in self.roles
        )
        self.target_networks = {  # pyright: ignore[reportAttributeAccessIssue]
            self.net_name(t, g): self.net_name(s, g)
            for g in self.groups
            for t, s in self.target_roles.items()
        }
        self.optimizer_specs = {  # pyright: ignore[reportAttributeAccessIssue]
            self.net_name(o, g): (tuple(self.net_name(r, g) for r in roles), lr)
            for g in self.groups
            for o, (roles, lr) in self.optimizer_roles.items()
        }
        #: Mean return per group of the last :meth:`test` (the team's is its fitness).
        self.group_fitness: dict[str, float] = {}

    # -- networks -------------------------------------------------------------------------
    @staticmethod
    def net_name(role: str, group: str) -> str:
        return f"{role}/{group}"

    def net(self, role: str, group: str) -> Any:
        return getattr(self, self.net_name(role, group))

    def group_network_spec(
        self, spec_cls: type[SpecT], space: spaces.Space, section: Any = None
    ) -> SpecT:
        """The spec of a ``spec_cls`` network reading ``space``, from the network section
        (``section`` replaces the agent's ``net_config``)."""
        section = self.net_config if section is None else section
        return network_spec(spec_cls, space, section_for_space(section, space))

    def build_network(self, cls: type[EvolvableNetwork], what: str, *args: Any) -> Any:
        """``cls(*args)`` on the agent's device; an encoder that cannot read the space is
        a ValueError naming the network and the space."""
        try:
            return cls(*args).to(self.device)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"network: {what} observes {args[0]}, which the network section's encoder "
                f"cannot read ({err}); describe an MLP (or no arch) to have image and Dict "
                "observations get a CNN / multi-input encoder"
            ) from None

    # -- batches per group ----------------------------------------------------------------
    def present(self, obs: PerAgent, group: str) -> list[str]:
        """The members of ``group`` that have a batch in ``obs``."""
        return [a for a in self.groups[group] if a in obs]

    def group_obs(self, obs: PerAgent, members: list[str]) -> Any:
        """The members' observations as one preprocessed batch (mask key dropped)."""
        space = self.policy_spaces[self.group_of[members[0]]]
        parts = []
        for agent in members:
            value = obs[agent]
            if isinstance(value, Mapping) and MASK_KEY in value:
                value = {k: v for k, v in value.items() if k != MASK_KEY}
            parts.append(value)
        return preprocess(concat_tree(parts), space, self.device)

    def group_mask(
        self, obs: PerAgent, infos: PerAgent | None, members: list[str]
    ) -> torch.Tensor | None:
        """The members' action masks ``[members * N, n]`` (True: allowed) from ``infos``
        or a Dict observation's ``action_mask``; None when none has one. A member with
        none gets every action allowed."""
        found = []
        for agent in members:
            mask = None
            if infos is not None and isinstance(infos.get(agent), Mapping):
                mask = infos[agent].get(MASK_KEY)
            if mask is None and isinstance(obs[agent], Mapping):
                mask = obs[agent].get(MASK_KEY)
            found.append(mask)
        if all(m is None for m in found):
            return None
        rows = leading(obs[members[0]])
        given = [
            None if m is None else torch.as_tensor(m).to(self.device).bool().reshape(rows, -1)
            for m in found
        ]
        width = next(m.shape[1] for m in given if m is not None)
        full = torch.ones((rows, width), dtype=torch.bool, device=self.device)
        return torch.cat([full if m is None else m for m in given])

    # -- mutation per group ---------------------------------------------------------------
    def group_networks(self, group: str) -> list[str]:
        return [self.net_name(r, group) for r in self.roles]

    def _group_mutations(self, keep: Any) -> list[str]:
        return [
            f"{g}:{name}"
            for g in self.groups
            for name in self.net("actor", g).mutation_methods()
            if keep(name.split(".")[-1])
        ]

    def architecture_mutations(self, new_layer: bool | None = None) -> list[str]:
        def keep(last: str) -> bool:
            if last == ACTIVATION_MUTATION:
                return False
            return new_layer is None or (last in LAYER_MUTATIONS) == new_layer

        return self._group_mutations(keep)

    def mutate_architecture(self, name: str, seed: int) -> dict[str, Any]:
        group, sep, method = name.partition(":")
        if not sep or group not in self.groups:
            raise ValueError(
                f"{self.name}: mutation {name!r} names no group; expected '<group>:<mutation>' "
                f"with a group of {sorted(self.groups)}"
            )
        return self._replay_on_group(group, method, seed)

    def mutate_activation(self, rng: np.random.Generator) -> dict[str, Any]:
        names = self._group_mutations(lambda last: last == ACTIVATION_MUTATION)
        if not names:
            return {}
        name = names[int(rng.integers(len(names)))]
        return self.mutate_architecture(name, int(rng.integers(2**31)))

    def _replay_on_group(self, group: str, method: str, seed: int) -> dict[str, Any]:
        self._unlink_networks()
        names = self.group_networks(group)
        info = getattr(self, names[0]).mutate(method, np.random.default_rng(seed))
        if not info:
            self._link_networks()
            return {}
        changed = {names[0]}
        for attr in names[1:]:
            net = getattr(self, attr)
            if method in net.mutation_methods():
                net.mutate(method, np.random.default_rng(seed))
                changed.add(attr)
        self._networks_changed(changed)
        return info

    def _networks_changed(self, changed: set[str]) -> None:
        """Rebuild the targets of the ``changed`` networks and the optimisers training
        any of them; the other optimisers keep their state."""
        self._link_networks()
        for target, source in self.target_networks.items():
            if source in changed:
                setattr(self, target, getattr(self, source).clone())
        kept = {
            attr: getattr(self, attr)
            for attr, (nets, _) in self.optimizer_specs.items()
            if not changed & set(nets)
        }
        self.build_optimizers()
        for attr, optimizer in kept.items():
            setattr(self, attr, optimizer)

    def mutate_parameters(self, rng: np.random.Generator, mutation_sd: float) -> int:
        changed = sum(perturb_weights(self.net("actor", g), rng, mutation_sd) for g in self.groups)
        self._sync_targets()
        return changed

    # -- evaluation -----------------------------------------------------------------------
    def test(
        self, env: Any, max_steps: int | None = None, loop: int = 1, seed: Any = None
    ) -> float:
        """Mean team return (every agent's rewards summed) of ``loop`` rounds of the first
        episode of each sub-environment of a vectorised parallel ``env``, acting with
        :meth:`get_action`; ``max_steps`` cuts an episode short. The mean per group (its
        agents' rewards summed) is left in :attr:`group_fitness`. Appends the team's to
        ``fitness`` and counts the steps taken in ``eval_steps_taken`` (whether
        ``max_steps`` cut an episode in ``eval_cut``)."""
        num_envs = env.num_envs
        team: list[np.ndarray] = []
        per_group: dict[str, list[np.ndarray]] = {g: [] for g in self.groups}
        taken, cut = 0, False
        with torch.no_grad():
            for round_ in range(loop):
                obs, infos = env.reset(seed=None if seed is None else seed + round_ * num_envs)
                self.episodes_ended(np.ones(num_envs, dtype=bool))
                totals = {a: np.zeros(num_envs) for a in self.agent_ids}
                done = np.zeros(num_envs, dtype=bool)
                steps = 0
                while not done.all() and (max_steps is None or steps < max_steps):
                    actions = self.get_action(obs, infos)
                    obs, rewards, terminated, truncated, infos = env.step(actions)
                    for agent, reward in rewards.items():
                        if agent in totals:
                            totals[agent] += np.where(done, 0.0, np.asarray(reward, float))
                    ended = episode_ended(infos, terminated, truncated, num_envs)
                    self.episodes_ended(ended)
                    done |= ended
                    steps += 1
                taken += steps * num_envs
                cut |= not done.all()
                # sum() from an array of zeros, not its int 0: the same values, an array type
                team.append(sum(totals.values(), np.zeros(num_envs)))
                for g, members in self.groups.items():
                    per_group[g].append(sum((totals[a] for a in members), np.zeros(num_envs)))
        self.eval_steps_taken, self.eval_cut = taken, cut
        self.group_fitness = {g: float(np.mean(np.concatenate(v))) for g, v in per_group.items()}
        fitness = float(np.mean(np.concatenate(team)))
        self.fitness.append(fitness)
        return fitness


def leading(batch: Any) -> int:
    """The batch size of a batch (its first leaf's leading dimension)."""
    return int(np.shape(tree_leaves(batch)[0])[0])


def episode_ended(
    infos: PerAgent, terminated: PerAgent, truncated: PerAgent, num_envs: int
) -> np.ndarray:
    """Sub-environments whose episode ended at this step: the vector env's
    ``infos["__final__"]["ended"]``, else those where every agent is done."""
    final = infos.get("__final__") if isinstance(infos, Mapping) else None
    if final is not None and "ended" in final:
        return np.asarray(final["ended"], dtype=bool).reshape(num_envs)
    done = [np.logical_or(terminated[a], truncated[a]) for a in terminated]
    return np.logical_and.reduce(done).reshape(num_envs) if done else np.ones(num_envs, bool)


def masked_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the rows whose weight is 1 (0 when there is none)."""
    return (values * weights).sum() / weights.sum().clamp(min=1.0)


def active_rows(infos_or_batch: Any, agent: str, rows: int, device: Any) -> torch.Tensor:
    """The float activity ``[rows]`` of an agent: 1 where it acted (default all)."""
    found = infos_or_batch.get(agent) if isinstance(infos_or_batch, Mapping) else None
    if found is None:
        return torch.ones(rows, device=device)
    return (
        torch.as_tensor(np.asarray(found) if not torch.is_tensor(found) else found)
        .to(device=device, dtype=torch.float32)
        .reshape(rows)
    )
