"""Atari games from the manifest: ALE's ids registered on demand, and the preprocessing
``environment.atari`` describes (:class:`~agilerl.models.env.AtariPreprocessing`).

ale_py registers its ``ALE/...`` ids with Gymnasium only when ``gymnasium.register_envs
(ale_py)`` runs; :func:`register_namespace` does that the first time such an id is
looked up, and only where ale_py is installed (the atari extra), so nothing else pays
for importing it.

The preprocessing is the one of DQN's Nature paper as Stable-Baselines3's
``AtariWrapper`` and CleanRL apply it, innermost first: Gymnasium's
``AtariPreprocessing`` (no-op starts, frame skipping with a max over the last two
frames, resizing, grey scale), :class:`EpisodicLife`, :class:`FireReset`, Gymnasium's
``ClipReward`` and ``FrameStackObservation``. ``AtariPreprocessing`` has a
``terminal_on_life_loss`` of its own, but it restarts the whole game at the next reset;
:class:`EpisodicLife` continues it, as the published setups do.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import AtariPreprocessing, ClipReward, FrameStackObservation

#: Id namespaces whose environments a package registers with Gymnasium only when asked
#: (``gymnasium.register_envs(module)``): namespace -> that package.
REGISTERED_BY = {"ALE": "ale_py"}

_registered: set[str] = set()


def register_namespace(name: str) -> None:
    """Register the environments of id ``name``'s namespace (``ALE/Pong-v5``: ale_py's)
    with Gymnasium, once, where the package that has them is installed."""
    namespace = name.partition("/")[0] if "/" in name else ""
    module = REGISTERED_BY.get(namespace)
    if module is None or namespace in _registered or importlib.util.find_spec(module) is None:
        return
    gym.register_envs(importlib.import_module(module))
    _registered.add(namespace)


def ale_lives(env: gym.Env) -> int:
    """The lives left in the ALE game under ``env``."""
    return int(env.unwrapped.ale.lives())  # type: ignore[attr-defined]


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode (``terminated``) for the learner; the reset that
    follows continues the game with a no-op step, and only a game that is over is reset.
    The value of a state then never counts on lives still to come (DQN's Nature setup)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = bool(terminated or truncated)
        lives = ale_lives(self.env)
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> Any:
        # A seed asks for a new game: honour it whatever state the last one was in.
        if self.game_over or kwargs.get("seed") is not None:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)  # NOOP
            if terminated or truncated:  # the no-op ended the game after all
                obs, info = self.env.reset(**kwargs)
        self.game_over = False
        self.lives = ale_lives(self.env)
        return obs, info


class FireReset(gym.Wrapper):
    """FIRE (then action 2, as the published wrappers do) after each reset, for games
    that wait for it before they start (Breakout serves the ball on FIRE), and after a
    lost life that does not end the episode: whole games (no :class:`EpisodicLife`, as
    evaluation plays them) are served again as the learner's lives were. Under
    :class:`EpisodicLife` a lost life ends the episode and the reset presses FIRE."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0

    def reset(self, **kwargs: Any) -> Any:
        self.env.reset(**kwargs)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = ale_lives(self.env)
        return obs, info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = ale_lives(self.env)
        lost = 0 < lives < self.lives
        self.lives = lives
        if lost and not (terminated or truncated):
            # the presses belong to this step: their rewards too, and the game's end
            reward = float(reward)
            for press in (1, 2):
                obs, more, terminated, truncated, info = self.env.step(press)
                reward += float(more)
                if terminated or truncated:
                    break
        return obs, reward, terminated, truncated, info


def has_fire(env: gym.Env) -> bool:
    """Whether the game's action set has FIRE as action 1 (where :class:`FireReset`
    presses it)."""
    meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
    return len(meanings) >= 3 and meanings[1] == "FIRE"


def make_kwargs(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``gymnasium.make(name)`` under an ``environment.atari``
    block: ``frameskip=1`` for a game registered with frame skipping (ALE's v5 ids skip 4
    frames; the block skips them itself, and ``AtariPreprocessing`` refuses a game that
    skips too). A ``config.frameskip`` other than 1 would skip twice: a ValueError
    naming the field."""
    registered = gym.registry.get(name)
    if registered is None or "frameskip" not in registered.kwargs:
        return kwargs  # not an ALE game: AtariPreprocessing says what is wrong
    if kwargs.get("frameskip", 1) != 1:
        raise ValueError(
            f"environment.config.frameskip: {kwargs['frameskip']!r} would skip frames twice: "
            "environment.atari.frame_skip skips them; leave frameskip out (or 1)"
        )
    return {**kwargs, "frameskip": 1}


def scoring_spec(spec: Any) -> Any:
    """The environment ``spec`` as a player scores it, where agents are evaluated
    (fitness, ``agilerl evaluate``): whole games of the game's own rewards. Its
    ``atari`` block without ``episodic_life`` and ``clip_reward``, which shape what the
    learner sees; the observations are the same. ``spec`` itself where nothing is
    shaped."""
    atari = getattr(spec, "atari", None)
    if atari is None or not (atari.episodic_life or atari.clip_reward):
        return spec
    whole_games = atari.model_copy(update={"episodic_life": False, "clip_reward": False})
    return spec.model_copy(update={"atari": whole_games})


def preprocess_atari(env: gym.Env, atari: Any) -> gym.Env:
    """``env`` wrapped as ``atari`` (an :class:`~agilerl.models.env.AtariPreprocessing`)
    says; see the module docstring for the order."""
    env = AtariPreprocessing(
        env,
        noop_max=atari.noop_max,
        frame_skip=atari.frame_skip,
        screen_size=atari.screen_size,
        grayscale_obs=atari.grayscale,
    )
    if atari.episodic_life:
        env = EpisodicLife(env)
    if atari.fire_reset and has_fire(env):
        env = FireReset(env)
    if atari.clip_reward:
        env = ClipReward(env, -1.0, 1.0)
    return FrameStackObservation(env, atari.frame_stack)
