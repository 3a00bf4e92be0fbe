"""``ParallelVecEnv``: ``num_envs`` copies of a PettingZoo parallel environment as one batch.

Everything per agent is a dict keyed by agent id (the environment's ``possible_agents``,
as strings) of arrays with the number of environments ``N`` as leading dimension; the
layout is fixed in ``notes/ma_interfaces.md`` and the loops and algorithms rely on it:

* ``obs[id]``: ``[N, *obs_shape]`` (Dict/Tuple observations: the same tree with
  ``[N, ...]`` leaves); the rows of an agent absent from a sub-environment are zeros.
* ``rewards[id]``, ``terminated[id]``, ``truncated[id]``: ``[N]``; an absent agent has
  reward 0 and is neither terminated nor truncated.
* ``infos[id]["active"]``: ``[N]`` bool, whether the agent was present and acted at this
  step (at a reset: whether it is present). Nothing inactive is to be learned from.
* ``infos[id]["action_mask"]``: ``[N, n_actions]`` bool, for agents whose environment
  gives a mask (in their ``info`` or as an ``action_mask`` key of a Dict observation);
  rows without one allow every action.
* Same-step autoreset: when every agent of sub-environment ``i`` is done, its episode
  ended and ``step`` already returns the first observation of the next one;
  ``infos["__final__"]`` holds ``ended`` (``[N]`` bool) and ``obs``, the observations
  the step itself returned, to store as next observations: the true last ones where an
  episode ended, or where an agent is done while others play on (``obs`` has zeros for
  it from then on: it is absent); ``infos["__final__"]["action_mask"]``, per agent
  that has masks, the masks that go with those observations.

Actions are taken as given: ``actions[id]`` is ``[N, ...]`` in the agent's own action
space, only the agents present in a sub-environment are passed to it, and an agent that
is present but has no action is an error; the vector environment never invents one.

Seeded resets: ``reset(seed)`` seeds sub-environment ``i`` with ``seed + i``; autoresets
continue each sub-environment's own random stream, so a seeded run repeats exactly.
The copies run in this process, or each in a worker process (``subprocess=True``),
talking over pipes; the results are the same. Every copy must have the first's agents and
spaces (:func:`~agilerl.families.environments.check_same_spaces`). A worker that ends
without an exception (its environment's ``os._exit``, a signal) is one
:class:`~agilerl.families.environments.EnvironmentCallError` naming the environment,
the sub-environment, the call and how the process ended; the other workers are ended with
it, and workers whose trainer is gone end without a traceback.
"""

from __future__ import annotations

import functools
import multiprocessing
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_empty_array

from agilerl.components.observations import map_tree
from agilerl.families.environments import (
    PIPE_CLOSED,
    EnvironmentCallError,
    EnvironmentSpecError,
    check_same_spaces,
    worker_end_error,
)
from agilerl.families.python_env import PythonEnv
from agilerl.guards.user_code import UserCodeError

#: Errors a worker sends back as they are (each one line naming the manifest field, or
#: the environment and the call); any other is reported with the worker's traceback.
ONE_LINE_ERRORS = (EnvironmentSpecError, UserCodeError)
#: The key of ``infos`` holding the autoreset information (never an agent id).
FINAL = "__final__"
#: A multiprocessing start method (what :func:`multiprocessing.get_context` accepts).
StartMethod = Literal["fork", "forkserver", "spawn"]
#: A worker's commands (:class:`SubEnv`'s methods) -> what a message calls them.
CALLS = {"reset": "reset", "step": "step", "spaces": "the query of its spaces"}
#: What a message calls a worker's first task (:class:`_Workers` waits for it).
BUILD = "the build of its environment"


def named_spaces(env: Any) -> dict[str, Any]:
    """The agents and spaces the vector env batches ``env``'s copy on, each keyed by what
    :func:`~agilerl.families.environments.check_same_spaces` calls it, the agents
    first (their order does not matter: everything is keyed by agent)."""
    agents = list(env.possible_agents)
    named: dict[str, Any] = {"agents": sorted(agents, key=str)}
    for agent in agents:
        named[f"observation space of agent {agent!r}"] = env.observation_space(agent)
        named[f"action space of agent {agent!r}"] = env.action_space(agent)
    return named


def mask_width(obs_space: spaces.Space, action_space: spaces.Space) -> int | None:
    """Length of an agent's action mask: its Dict observation's ``action_mask`` entry,
    else what its action space offers (Discrete n, MultiDiscrete the sum of its choices,
    MultiBinary its size); None for an action space no mask can describe (Box)."""
    observed = _observed_mask_width(obs_space)
    if observed is not None:
        return observed
    if isinstance(action_space, spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    if isinstance(action_space, spaces.MultiBinary):
        return int(np.prod(action_space.shape))
    return None


def _observed_mask_width(obs_space: spaces.Space) -> int | None:
    """Length of the ``action_mask`` entry of a Dict observation; None without one."""
    if not (isinstance(obs_space, spaces.Dict) and "action_mask" in obs_space.spaces):
        return None
    shape = obs_space["action_mask"].shape
    # An action mask is an array space (MultiBinary or Box), and those always have a shape.
    assert shape is not None
    return int(np.prod(shape))


def _masks(obs: dict[str, Any], infos: dict[str, Any]) -> dict[str, Any]:
    """The action masks the environment gave, per agent: in its info, or in its Dict
    observation."""
    found = {}
    for agent, info in infos.items():
        if isinstance(info, dict) and info.get("action_mask") is not None:
            found[agent] = np.asarray(info["action_mask"]).reshape(-1)
    for agent, value in obs.items():
        if agent not in found and isinstance(value, dict) and "action_mask" in value:
            found[agent] = np.asarray(value["action_mask"]).reshape(-1)
    return found


class SubEnv:
    """One parallel environment with same-step autoreset, reporting each reset and step
    as plain dicts (what a worker process sends back)."""

    def __init__(self, env: Any) -> None:
        # the environment's code runs under make_parallel_env's guard (GuardedParallelEnv)
        self.env = env

    def reset(self, seed: int | None) -> dict[str, Any]:
        obs, infos = self.env.reset(seed=seed)
        return {
            "obs": dict(obs),
            "present": list(self.env.agents),
            "masks": _masks(obs, infos),
        }

    def step(self, actions: dict[str, Any]) -> dict[str, Any]:
        acted = list(self.env.agents)
        missing = [agent for agent in acted if agent not in actions]
        if missing:
            raise KeyError(f"no action for agent(s) {missing}, which are present")
        obs, rewards, terminated, truncated, infos = self.env.step(
            {agent: actions[agent] for agent in acted}
        )
        out = {
            "acted": acted,
            "reward": {a: float(rewards.get(a, 0.0)) for a in acted},
            "terminated": {a: bool(terminated.get(a, False)) for a in acted},
            "truncated": {a: bool(truncated.get(a, False)) for a in acted},
            "ended": not self.env.agents,
            # what the step returned: the true last observation of an agent done now
            "final_obs": dict(obs),
            "final_masks": _masks(obs, infos),
        }
        if out["ended"]:
            for agent in acted:  # an episode that ends leaves no agent undecided
                if not (out["terminated"][agent] or out["truncated"][agent]):
                    out["truncated"][agent] = True
            # the sub-environment's own stream goes on
            obs, infos = self.env.reset()
        present = list(self.env.agents)
        # the observations to act on: present agents only (one that left has none)
        obs = {agent: obs[agent] for agent in present if agent in obs}
        out.update(obs=obs, present=present, masks=_masks(obs, infos))
        return out

    def spaces(self, _: None) -> dict[str, Any]:
        return named_spaces(self.env)

    def close(self) -> None:
        self.env.close()


def _worker(make: Callable[[], Any], pipe: Any, parent_end: Any) -> None:
    """A worker process: one :class:`SubEnv`, driven over ``pipe`` (:func:`_serve`).

    The worker closes its copy of the parent's end of the pipe first: while any process
    holds that end open, ``recv`` never sees EOF, so a worker whose trainer was killed
    (kill -9 leaves no time to say "close") would wait forever. A later worker forked
    while an earlier pipe was open holds that pipe's end too, but it exits itself once
    the parent is gone, and then the earlier one sees EOF.

    It ends without a traceback once the trainer is gone (its pipe closed, on receiving
    or on sending: no one is left to tell), and on Ctrl-C, which reaches the trainer too,
    which reports it."""
    parent_end.close()
    try:
        _serve(make, pipe)
    except (*PIPE_CLOSED, KeyboardInterrupt):
        pass
    finally:
        pipe.close()


def _serve(make: Callable[[], Any], pipe: Any) -> None:
    """Build the sub-environment, say how that went, then run the commands that come
    until ``close``."""
    try:
        sub = SubEnv(make())
    except ONE_LINE_ERRORS as err:
        pipe.send(("refused", err))
        return
    except Exception as err:
        pipe.send(("error", f"{type(err).__name__}: {err}"))
        return
    pipe.send(("ok", None))
    while True:
        command, payload = pipe.recv()
        if command == "close":
            sub.close()
            pipe.send(("ok", None))
            return
        try:
            pipe.send(("ok", getattr(sub, command)(payload)))
        except ONE_LINE_ERRORS as err:  # already one line naming the env and call
            pipe.send(("refused", err))
        except Exception as err:
            pipe.send(("error", f"{type(err).__name__}: {err}\n{traceback.format_exc()}"))


class _Workers:
    """Sub-environments, each in a worker process; a worker found gone (its pipe closed)
    is one :class:`EnvironmentCallError` naming the environment (``what``), the
    sub-environment, the call and how the process ended, the others ended with it."""

    def __init__(
        self, makers: Sequence[Callable[[], Any]], context: StartMethod | None, what: str
    ) -> None:
        ctx = multiprocessing.get_context(context)
        self.what = what
        self.pipes, self.processes = [], []
        for make in makers:
            parent, child = ctx.Pipe()
            process = ctx.Process(target=_worker, args=(make, child, parent), daemon=True)
            process.start()
            child.close()
            self.pipes.append(parent)
            self.processes.append(process)
        self._gather(BUILD)  # every worker built its environment

    def call(self, command: str, payloads: Sequence[Any]) -> list[Any]:
        try:
            for pipe, payload in zip(self.pipes, payloads, strict=True):
                pipe.send((command, payload))
        except PIPE_CLOSED:
            raise self._ended(CALLS[command]) from None
        return self._gather(CALLS[command])

    def _gather(self, call: str) -> list[Any]:
        try:
            replies = [pipe.recv() for pipe in self.pipes]
        except PIPE_CLOSED:
            raise self._ended(call) from None
        failed = [(i, status, value) for i, (status, value) in enumerate(replies) if status != "ok"]
        if failed:
            i, status, message = failed[0]
            if status == "refused":  # the worker's own one-line error, of its own type
                raise type(message)(f"sub-environment {i} (worker process): {message}")
            raise RuntimeError(f"sub-environment {i} (worker process) failed: {message}")
        return [value for _, value in replies]

    def _ended(self, call: str) -> EnvironmentCallError:
        """The error for a worker found gone during ``call``, once every worker is ended
        (the others' replies are not waited for: SIGTERM ends them without a traceback)."""
        error = worker_end_error(self.what, self.processes, call)
        for pipe in self.pipes:
            pipe.close()
        for process in self.processes:
            process.terminate()
            process.join()
        return error

    def close(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send(("close", None))
                pipe.recv()
            except (OSError, EOFError):
                pass  # already gone
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()


class _InProcess:
    """Sub-environments in this process."""

    def __init__(self, envs: Sequence[Any]) -> None:
        self.subs = [SubEnv(env) for env in envs]

    def call(self, command: str, payloads: Sequence[Any]) -> list[Any]:
        results = []
        for i, (sub, payload) in enumerate(zip(self.subs, payloads, strict=True)):
            try:
                results.append(getattr(sub, command)(payload))
            except KeyError as err:
                raise KeyError(f"sub-environment {i}: {err.args[0]}") from None
        return results

    def close(self) -> None:
        for sub in self.subs:
            sub.close()


class ParallelVecEnv:
    """``N`` copies of a PettingZoo parallel environment (see the module docstring).

    Args:
        env_fns: one callable per copy, each building a parallel environment with string
            agent ids (:func:`~agilerl.families.multi_agent.envs.make_parallel_env` gives one),
            every one with the first's agents and spaces. Messages name the environment by
            the first's ``label`` (``make_parallel_env``'s environments have one:
            ``environment.entrypoint envs.py:make``), else by its class name.
        subprocess: run each copy in a worker process (the callables must pickle).
        context: the multiprocessing start method (None: the platform's default).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        *,
        subprocess: bool = False,
        context: StartMethod | None = None,
    ) -> None:
        if not env_fns:
            raise ValueError("env_fns: a vector environment needs at least one environment")
        self.num_envs = len(env_fns)
        first = env_fns[0]()  # the spaces, and a bad environment fails here, plainly
        self.agent_ids = [str(agent) for agent in first.possible_agents]
        if list(first.possible_agents) != self.agent_ids:
            raise ValueError(
                f"agent ids must be strings (wrap the environment with "
                f"agilerl.families.multi_agent.envs.string_ids), got {first.possible_agents!r}"
            )
        self.observation_spaces = {a: first.observation_space(a) for a in self.agent_ids}
        self.action_spaces = {a: first.action_space(a) for a in self.agent_ids}
        self.metadata = getattr(first, "metadata", {})
        self.what = str(getattr(first, "label", type(first).__name__))
        self.subprocess = subprocess
        expected = named_spaces(first)
        if subprocess:
            first.close()
            self._envs: Any = _Workers(env_fns, context, self.what)
        else:
            self._envs = _InProcess([first, *(fn() for fn in env_fns[1:])])
        self._check_copies(expected)
        #: Mask length per agent that has a mask (found from its spaces and first masks).
        observed = {a: _observed_mask_width(self.observation_spaces[a]) for a in self.agent_ids}
        self._mask_widths: dict[str, int] = {
            a: width for a, width in observed.items() if width is not None
        }
        self.closed = False

    def _check_copies(self, expected: dict[str, Any]) -> None:
        """Every copy against the first's agents and spaces (``expected``), which the
        batches are laid out by (a worker's copy is built anew, so it is checked too);
        the copies are closed on a refusal."""
        try:
            check_same_spaces(
                self.what, expected, self._envs.call("spaces", [None] * self.num_envs)
            )
        except EnvironmentSpecError:
            self._envs.close()
            raise

    # -- the API ------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """First observations of every copy (copy ``i`` seeded with ``seed + i``) and the
        infos (``active``: present; ``action_mask`` where given)."""
        return self._reset([None if seed is None else int(seed) + i for i in range(self.num_envs)])

    def reset_each(self, seeds: Sequence[int]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Every block of ``num_envs / len(seeds)`` copies reset as a vector env of its own
        with its seed: copy ``i`` of block ``b`` seeded with ``seeds[b] + i`` (a cohort's
        teams' copies, each team's reset as its own turn resets its environment)."""
        if not seeds or self.num_envs % len(seeds):
            raise ValueError(
                f"reset_each: {len(seeds)} seeds do not split {self.num_envs} copies into "
                "equal blocks"
            )
        block = self.num_envs // len(seeds)
        return self._reset([int(seed) + i for seed in seeds for i in range(block)])

    def _reset(self, seeds: list[int | None]) -> tuple[dict[str, Any], dict[str, Any]]:
        results = self._envs.call("reset", seeds)
        return self._stack_obs([r["obs"] for r in results]), self._infos(results, "present")

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        """One step of every copy: ``(obs, rewards, terminated, truncated, infos)``."""
        unknown = sorted(set(actions) - set(self.agent_ids))
        if unknown:
            raise KeyError(f"actions: unknown agent id(s) {unknown}; agents: {self.agent_ids}")
        rows = {agent: _rows(value, self.num_envs, agent) for agent, value in actions.items()}
        payloads = [{agent: rows[agent][i] for agent in rows} for i in range(self.num_envs)]
        results = self._envs.call("step", payloads)
        obs = self._stack_obs([r["obs"] for r in results])
        rewards = self._stack_flags(results, "reward", np.float32)
        terminated = self._stack_flags(results, "terminated", bool)
        truncated = self._stack_flags(results, "truncated", bool)
        infos = self._infos(results, "acted")
        ended = np.array([r["ended"] for r in results], dtype=bool)
        final = self._stack_obs([r["final_obs"] for r in results])
        final_masks = self._masks_of(results, "final_masks")
        infos[FINAL] = {"ended": ended, "obs": final, "action_mask": final_masks}
        return obs, rewards, terminated, truncated, infos

    def close(self) -> None:
        if not self.closed:
            self._envs.close()
            self.closed = True

    def __enter__(self) -> ParallelVecEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # worker processes must not outlive a forgotten env
        try:
            self.close()
        except Exception:
            pass

    # -- batching -----------------------------------------------------------------------
    def _stack_obs(self, per_env: list[dict[str, Any]]) -> dict[str, Any]:
        out = {}
        for agent in self.agent_ids:
            batch = create_empty_array(self.observation_spaces[agent], self.num_envs, fn=np.zeros)
            for i, obs in enumerate(per_env):
                if agent in obs:
                    _write_row(batch, i, obs[agent])
            out[agent] = batch
        return out

    def _stack_flags(self, results: list[dict[str, Any]], key: str, dtype: Any) -> dict:
        return {
            agent: np.array([r[key].get(agent, 0) for r in results], dtype=dtype)
            for agent in self.agent_ids
        }

    def _infos(self, results: list[dict[str, Any]], who: str) -> dict[str, Any]:
        masks = self._masks_of(results, "masks")
        infos: dict[str, Any] = {}
        for agent in self.agent_ids:
            info = {"active": np.array([agent in r[who] for r in results], dtype=bool)}
            if agent in masks:
                info["action_mask"] = masks[agent]
            infos[agent] = info
        return infos

    def _masks_of(self, results: list[dict[str, Any]], key: str) -> dict[str, np.ndarray]:
        """``[N, n]`` masks per agent that has one (``key``: the sub-envs' ``masks`` or
        ``final_masks``)."""
        out = {}
        for agent in self.agent_ids:
            masks = [r[key].get(agent) for r in results]
            if agent not in self._mask_widths and any(m is not None for m in masks):
                width = mask_width(self.observation_spaces[agent], self.action_spaces[agent])
                first = next(m for m in masks if m is not None)
                self._mask_widths[agent] = width if width is not None else len(first)
            if agent in self._mask_widths:
                out[agent] = self._stack_masks(agent, masks)
        return out

    def _stack_masks(self, agent: str, masks: list[Any]) -> np.ndarray:
        width = self._mask_widths[agent]
        out = np.ones((self.num_envs, width), dtype=bool)  # no mask given: all allowed
        for i, mask in enumerate(masks):
            if mask is None:
                continue
            if mask.shape != (width,):
                raise ValueError(
                    f"agent {agent!r}: sub-environment {i} gave an action mask of shape "
                    f"{mask.shape}, expected ({width},)"
                )
            out[i] = mask.astype(bool)
        return out


def _rows(value: Any, n: int, agent: str) -> Any:
    """``value`` (an array, a tensor or a list) as something indexable by sub-env, with
    ``n`` rows."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    value = np.asarray(value)
    if value.ndim == 0 or value.shape[0] != n:
        raise ValueError(
            f"actions[{agent!r}]: expected a leading dimension of {n} (num_envs), got shape "
            f"{value.shape}"
        )
    return value


def _write_row(batch: Any, i: int, value: Any) -> None:
    def write(leaf: np.ndarray, item: Any) -> None:
        leaf[i] = item

    map_tree(write, batch, value)


def make_vector_env(
    spec: Any, num_envs: int | None = None, source: PythonEnv | None = None
) -> ParallelVecEnv:
    """The vectorised environment a :class:`~agilerl.models.env.PzEnvSpec`
    describes (``num_envs`` overrides the spec's): in this process when ``spec.sync``,
    else one worker process per copy. The first copy is built here, so a bad name,
    entry point or wrapper fails with a clear error before any worker starts. ``source``:
    the environment given in Python, which the copies are made from."""
    from agilerl.families.multi_agent.envs import make_parallel_env  # pettingzoo loads here

    n = int(num_envs or spec.num_envs)
    factory = functools.partial(make_parallel_env, spec, source)
    return ParallelVecEnv([factory] * n, subprocess=not spec.sync)
