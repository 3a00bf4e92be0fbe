"""A cooperative PettingZoo ``ParallelEnv`` whose optimum is known: the cue game.

Two agents play ``horizon`` steps. At the start of an episode a *cue* (one of
``num_actions``) is drawn; ``seer_0`` sees it, ``blind_0`` does not: it sees only the
action the seer took on the previous step (and a flag on the first step, before the seer
has acted). Every step both agents receive the same team reward: 1 when *both* chose the
cued action, else 0. The best team therefore has the seer name the cue and the blind
agent repeat what the seer did a step earlier: the first step is a guess for the blind
agent, every later one is certain. Fitness is the team's summed return (both agents'
rewards added), so:

* optimal team return: ``2 * (p_first + horizon - 1)``, ``p_first`` the blind agent's
  chance of guessing the cue on the first step (``1 / num_actions``, or ``1 / allowed``
  when an action mask rules some wrong actions out);
* a uniformly random team: ``2 * horizon * p_seer * p_blind`` (``1 / num_actions`` each,
  the blind agent's share again over its allowed actions).

:meth:`CueGameEnv.optimal_team_return` and :meth:`CueGameEnv.random_team_return` give
both, so tests read the answers from the environment rather than repeating them.

The awkward variant (``awkward=True``, or :func:`awkward_cue_game`) keeps the game and its
optimum but exercises what real environments do to a multi-agent engine:

* mixed observation spaces: a third agent, ``scout_0``, observes a small ``uint8`` image
  (the cue drawn as a bright column) while the others observe vectors;
* an agent that leaves mid-episode: the scout is terminated after ``horizon // 2`` steps
  and gives no observation after that (its actions never change the team reward);
* action masks: the blind agent's observation is a ``Dict`` with ``observation`` and
  ``action_mask`` (one wrong action ruled out each step), and the same mask is in its
  ``info``;
* integer agent ids (``integer_ids=True``): the agents are ``0`` (seer), ``1`` (blind)
  and ``2`` (scout).

This module imports only numpy, gymnasium and pettingzoo.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

#: The agents' names, in order; integer ids number them.
NAMES = ("seer_0", "blind_0", "scout_0")
#: Side of the scout's square image observation.
IMAGE_SIDE = 6


class CueGameEnv(ParallelEnv):
    """The cue game (see the module docstring)."""

    metadata = {"name": "cue_game_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(
        self,
        num_actions: int = 2,
        horizon: int = 4,
        *,
        awkward: bool = False,
        integer_ids: bool = False,
    ) -> None:
        if num_actions < 2 or (awkward and num_actions < 3):
            raise ValueError(
                f"num_actions: {num_actions}: the game needs 2 or more (3 or more when "
                "awkward: one wrong action is masked and two must remain)"
            )
        if horizon < 1:
            raise ValueError(f"horizon: {horizon}: an episode needs at least one step")
        self.num_actions = int(num_actions)
        self.horizon = int(horizon)
        self.awkward = bool(awkward)
        names = NAMES if awkward else NAMES[:2]
        ids: list[Any] = list(range(len(names))) if integer_ids else list(names)
        self.possible_agents = ids
        self._role = dict(zip(ids, names, strict=True))  # id -> "seer_0", ...
        k = self.num_actions
        blind = spaces.Box(0.0, 1.0, (k + 1,), np.float32)
        if awkward:
            blind = spaces.Dict({"observation": blind, "action_mask": spaces.MultiBinary(k)})
        observation = {
            "seer_0": spaces.Box(0.0, 1.0, (k,), np.float32),
            "blind_0": blind,
            "scout_0": spaces.Box(0, 255, (1, IMAGE_SIDE, max(IMAGE_SIDE, k)), np.uint8),
        }
        self._obs_spaces = {i: observation[self._role[i]] for i in ids}
        self._act_spaces = {i: spaces.Discrete(k) for i in ids}
        self.scout_leaves_at = max(1, self.horizon // 2)
        self.agents: list[Any] = []
        self._rng = np.random.default_rng()

    # -- the PettingZoo API -------------------------------------------------------------
    def observation_space(self, agent: Any) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: Any) -> spaces.Space:
        return self._act_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.cue = int(self._rng.integers(self.num_actions))
        self.t = 0
        self.last_seer_action: int | None = None
        self._draw_mask()
        return self._observations(), self._infos()

    def step(self, actions: dict[Any, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("step() after the episode ended: call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for live agents {missing}")
        seer, blind = self._id("seer_0"), self._id("blind_0")
        a_seer, a_blind = int(actions[seer]), int(actions[blind])
        if self.awkward and not self.mask[a_blind]:
            raise ValueError(f"blind agent took masked action {a_blind} (mask {self.mask})")
        reward = float(a_seer == self.cue and a_blind == self.cue)
        self.t += 1
        self.last_seer_action = a_seer
        acted = list(self.agents)
        truncated = self.t >= self.horizon
        terminations = {a: False for a in acted}
        truncations = {a: truncated for a in acted}
        if self.awkward:
            scout = self._id("scout_0")
            if scout in acted and self.t >= self.scout_leaves_at:
                terminations[scout] = True
        rewards = {a: reward for a in acted}
        self.agents = [a for a in acted if not (terminations[a] or truncations[a])]
        self._draw_mask()
        observations = self._observations(acted)
        infos = self._infos(acted)
        return observations, rewards, terminations, truncations, infos

    # -- the answers --------------------------------------------------------------------
    def _allowed(self) -> int:
        """Actions open to the blind agent each step."""
        return self.num_actions - 1 if self.awkward else self.num_actions

    def optimal_team_return(self) -> float:
        """Expected summed return of the best team, per episode (rewards of the seer and
        the blind agent; the scout's are the same team reward, so it adds its share over
        the steps it is present)."""
        per_step = [1.0 / self._allowed()] + [1.0] * (self.horizon - 1)
        return float(sum(per_step[t] * self._present(t) for t in range(self.horizon)))

    def random_team_return(self) -> float:
        """Expected summed return of a team acting uniformly at random (among the allowed
        actions), per episode."""
        p = (1.0 / self.num_actions) * (1.0 / self._allowed())
        return float(sum(p * self._present(t) for t in range(self.horizon)))

    def _present(self, t: int) -> int:
        """Agents present (and rewarded) at step ``t``."""
        scout = 1 if self.awkward and t < self.scout_leaves_at else 0
        return 2 + scout

    # -- internals ----------------------------------------------------------------------
    def _id(self, role: str) -> Any:
        return next(i for i, r in self._role.items() if r == role)

    def _draw_mask(self) -> None:
        """One wrong action is ruled out for the blind agent each step (awkward only)."""
        self.mask = np.ones(self.num_actions, dtype=np.int8)
        if self.awkward:
            wrong = [a for a in range(self.num_actions) if a != self.cue]
            self.mask[wrong[int(self._rng.integers(len(wrong)))]] = 0

    def _observations(self, who: list[Any] | None = None) -> dict[Any, Any]:
        k = self.num_actions
        out: dict[Any, Any] = {}
        # ``who``: the agents that just acted, each with its observation (the last one
        # for an agent done at this step); an agent that left earlier gets none.
        for agent in who if who is not None else self.agents:
            role = self._role[agent]
            if role == "seer_0":
                out[agent] = np.eye(k, dtype=np.float32)[self.cue]
            elif role == "blind_0":
                seen = np.zeros(k + 1, dtype=np.float32)
                seen[k if self.last_seer_action is None else self.last_seer_action] = 1.0
                if self.awkward:
                    out[agent] = {"observation": seen, "action_mask": self.mask.copy()}
                else:
                    out[agent] = seen
            else:
                image = np.zeros(self._obs_spaces[agent].shape, dtype=np.uint8)
                image[0, :, self.cue] = 255
                out[agent] = image
        return out

    def _infos(self, who: list[Any] | None = None) -> dict[Any, Any]:
        infos: dict[Any, Any] = {a: {} for a in (who if who is not None else self.agents)}
        blind = self._id("blind_0")
        if self.awkward and blind in infos and blind in self.agents:
            infos[blind]["action_mask"] = self.mask.copy()
        return infos


def cue_game(num_actions: int = 2, horizon: int = 4, integer_ids: bool = False) -> CueGameEnv:
    """The plain cue game: two agents, vector observations."""
    return CueGameEnv(num_actions, horizon, integer_ids=integer_ids)


def awkward_cue_game(
    num_actions: int = 3, horizon: int = 4, integer_ids: bool = False
) -> CueGameEnv:
    """The cue game with mixed observation spaces, an agent that leaves mid-episode and
    an action mask (see the module docstring)."""
    return CueGameEnv(num_actions, horizon, awkward=True, integer_ids=integer_ids)


#: PettingZoo's convention: a module's ``parallel_env`` builds its environment (so a
#: manifest may name ``agilerl.testing.cooperative`` as its environment).
parallel_env = cue_game
