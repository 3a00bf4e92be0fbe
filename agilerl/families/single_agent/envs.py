"""Vectorised Gymnasium environments built from a :class:`~agilerl.models.env.GymEnvSpec`.

Every environment is vectorised (natively, in this process or in worker processes, as
``environment.vectorize`` resolves: :mod:`agilerl.families.single_agent.vectorize`) with *same-step* autoreset:
when a sub-environment ends, ``step`` already returns the first observation of its next
episode and puts the last one in ``info["final_obs"]``. The loops rely on this (no wasted step per episode, and the true
final observation is there to bootstrap a time-limit cut).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import reprlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.async_vector_env import AsyncState, _async_worker

from agilerl.components.observations import channels_first, channels_first_space, channels_last
from agilerl.families.environments import (
    PIPE_CLOSED,
    SHARED_SPACES,
    EnvironmentCallError,
    EnvironmentSpecError,
    call_environment,
    call_factory,
    check_same_spaces,
    import_target,
    worker_end_error,
)
from agilerl.families.python_env import PythonEnv, close_made
from agilerl.families.single_agent.atari import make_kwargs, preprocess_atari, register_namespace
from agilerl.families.single_agent.native import SameStepAutoreset
from agilerl.families.single_agent.vectorize import (
    ROW_RESETS,
    VectorizeError,
    native_entry_point,
    resolve_vectorize,
)
from agilerl.guards.user_code import call_user
from agilerl.resources.distribution import install_command

#: Environments that need a Gymnasium extra, by where they come from: an entry point's
#: module (box2d, mujoco; ale_py's once its ids are registered), or a namespace (ALE's,
#: before ale_py, which the atari extra installs, registers them). Each is an extra of
#: this package too (pyproject.toml).
EXTRAS = {
    "gymnasium.envs.box2d": ("box2d", "Box2D"),
    "gymnasium.envs.mujoco": ("mujoco", "mujoco"),
    "ale_py": ("atari", "ale_py"),
    "ALE": ("atari", "ale_py"),
}  # origin: (extra, the module it installs)


def missing_extra(name: str, installed_too: bool = True) -> str | None:
    """The extra environment ``name`` needs (:data:`EXTRAS`), or None; with
    ``installed_too=False``, only when that extra is not installed."""
    register_namespace(name)
    spec = gym.registry.get(name)
    origin = spec.entry_point if spec is not None and isinstance(spec.entry_point, str) else name
    for prefix, (extra, module) in EXTRAS.items():
        if origin == prefix or origin.startswith((f"{prefix}.", f"{prefix}/")):
            if installed_too or importlib.util.find_spec(module) is None:
                return extra
    return None


def image_observations(name: str) -> bool | None:
    """Whether registered id ``name`` observes images (a Box of three dimensions, what
    the CNN encoder takes), or None when it cannot be built here (an unknown id, a
    missing extra): what ``agilerl init --env`` chooses its network by."""
    from agilerl.models.env import GymEnvSpec
    from agilerl.modules.multi_input import is_image_space

    try:
        env = make_env(GymEnvSpec(name=name))
    except Exception:  # any failure means: unknown here (init writes its default)
        return None
    try:
        return is_image_space(env.observation_space)
    finally:
        env.close()


def _needs_extra(name: str, extra: str, where: str = "environment.name") -> str:
    return (
        f"{where}: {name!r} needs the {extra} extra, which is not installed: "
        f"{install_command(extra)}"
    )


def _unknown_env_message(name: str) -> str:
    known = list(gym.registry)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"environment.name: {name!r} is not a registered Gymnasium environment{hint}"


def _call(
    factory: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str,
    target: str,
    kwargs_at: str,
) -> gym.Env:
    """:func:`call_factory`, which must give a Gymnasium ``Env``."""
    value = call_factory(factory, args, kwargs, where, target, kwargs_at)
    if not isinstance(value, gym.Env):
        raise EnvironmentSpecError(
            f"{where}: {target} returned {type(value).__name__} {reprlib.repr(value)}, "
            "not a gymnasium.Env"
        )
    return value


class UserEnv(gym.Wrapper):
    """The outermost wrapper of every environment :func:`make_env` builds: its ``reset``
    and ``step`` run the user's code, so they go through :func:`call_environment` (time
    limit, ``sys.exit``, one-line errors), in this process or in a vector env's worker."""

    def __init__(self, env: gym.Env, what: str) -> None:
        super().__init__(env)
        #: What the environment is called in a message (``env make_corridor``).
        self.what = what
        # the labels once, not a string built per step
        self.on_reset, self.on_step = f"{what}: reset", f"{what}: step"

    def reset(self, **kwargs: Any) -> Any:
        return call_environment(self.on_reset, self.env.reset, **kwargs)

    def step(self, action: Any) -> Any:
        return call_environment(self.on_step, self.env.step, action)


def make_env(spec: Any, source: PythonEnv | None = None) -> UserEnv:
    """One (unvectorised) environment of ``spec``, wrappers applied innermost first,
    then :class:`UserEnv`; from ``source`` where the run's environment was given in
    Python."""
    kwargs = dict(spec.config or {})
    if source is not None:
        label = f"env {source.label}"
        env = _call(source.factory, (), kwargs, "env", source.label, "environment.config")
    elif spec.entrypoint is not None:
        where = "environment.entrypoint"
        factory = import_target(spec.entrypoint, where, spec.path)
        env = _call(factory, (), kwargs, where, spec.entrypoint, "environment.config")
        label = f"{where} {spec.entrypoint}"
    else:
        label = f"environment.name {spec.name}"
        register_namespace(spec.name)
        if spec.atari is not None:
            try:
                kwargs = make_kwargs(spec.name, kwargs)
            except ValueError as err:
                raise EnvironmentSpecError(str(err)) from None
        try:
            # gymnasium imports an entry point's module here (`pkg:Env-v0`): user code
            env = call_user(gym.make, spec.name, what=label, **kwargs)
        except (gym.error.DependencyNotInstalled, gym.error.UnregisteredEnv) as err:
            extra = missing_extra(spec.name)
            if extra is not None:
                raise EnvironmentSpecError(_needs_extra(spec.name, extra)) from None
            if isinstance(err, gym.error.UnregisteredEnv):
                raise EnvironmentSpecError(_unknown_env_message(spec.name)) from None
            raise EnvironmentSpecError(f"environment.name: {spec.name!r} needs {err}") from None
        except gym.error.Error as err:
            raise EnvironmentSpecError(f"environment.name: {spec.name!r}: {err}") from None
        except TypeError as err:
            raise EnvironmentSpecError(f"environment.config: {spec.name}: {err}") from err
    if spec.atari is not None:
        try:
            env = preprocess_atari(env, spec.atari)
        except gym.error.DependencyNotInstalled:  # OpenCV, which resizes the frames
            message = _needs_extra(spec.name, "atari", "environment.atari")
            raise EnvironmentSpecError(f"{message} (OpenCV resizes the frames)") from None
        except (AttributeError, ValueError) as err:  # not an ALE game, or one that skips frames
            raise EnvironmentSpecError(
                f"environment.atari: cannot preprocess {label}: {type(err).__name__}: {err}"
            ) from None
    for i, wrapper in enumerate(spec.wrappers or []):
        where = f"environment.wrappers.{i}"
        target = wrapper if isinstance(wrapper, str) else wrapper.wrapper
        options = {} if isinstance(wrapper, str) else dict(wrapper.kwargs)
        cls = import_target(target, where, spec.path)
        env = _call(cls, (env,), options, where, target, where)
    if channels_last(env.observation_space):
        env = ChannelsFirst(env)
    return UserEnv(env, label)


class ChannelsFirst(gym.ObservationWrapper):
    """Images observed channels last, ``(H, W, C)``, handed on channels first, as the
    CNN encoder takes them (see :func:`agilerl.components.observations.channels_last`)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = channels_first_space(env.observation_space)

    def observation(self, observation: Any) -> Any:
        return channels_first(observation)


def _native(spec: Any, n: int) -> VectorEnv:
    """``n`` copies of registered id ``spec.name`` as one native environment
    (``environment.config`` goes to its constructor), with same-step autoreset. Gymnasium's
    own code: no :class:`UserEnv` guard, and only the constructor's failure (the user's
    ``config``) is reported, as a line naming that field."""
    entry = native_entry_point(spec.name)
    assert entry is not None  # resolve_vectorize chose native only where there is one
    try:
        env = gym.make_vec(
            spec.name, num_envs=n, vectorization_mode="vector_entry_point", **(spec.config or {})
        )
    except (TypeError, gym.error.Error) as err:  # keywords the constructor does not take
        raise EnvironmentSpecError(f"environment.config: {spec.name} (native): {err}") from None
    return SameStepAutoreset(env, ROW_RESETS[entry])


def _spaces(env: gym.Env) -> dict[str, gym.Space]:
    return {name: getattr(env, attribute) for attribute, name in SHARED_SPACES.items()}


def _sync(spec: Any, n: int, source: PythonEnv | None = None) -> VectorEnv:
    """Every copy in this process; the first is built before the others, so a bad name,
    entry point or wrapper fails with its :class:`EnvironmentSpecError` at once, and all
    are checked to share the first's spaces before they are vectorised."""
    first = make_env(spec, source)
    copies = [first, *(make_env(spec, source) for _ in range(n - 1))]
    try:
        check_same_spaces(first.what, _spaces(first), [_spaces(env) for env in copies])
    except EnvironmentSpecError:
        for env in copies:
            close_made(env, source)
        raise
    fns = [lambda env=env: env for env in copies]
    return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)


def _async(spec: Any, n: int, source: PythonEnv | None = None) -> VectorEnv:
    """One worker process per copy; one copy is built here first, so a bad name, entry
    point or wrapper fails with a clear :class:`EnvironmentSpecError` before any worker
    process starts (a factory given in Python goes to the workers by cloudpickle)."""
    first = make_env(spec, source)
    first.close()
    factory = functools.partial(make_env, spec, source)
    return _AsyncVectorEnv([factory] * n, first.what, autoreset_mode=AutoresetMode.SAME_STEP)


def _native_only(spec: Any, n: int, source: PythonEnv | None = None) -> VectorEnv:
    """A registered id's own vector implementation (an environment given in Python has
    none: its section resolves to sync unless it names ``native``)."""
    if source is not None:
        raise EnvironmentSpecError(
            f"environment.vectorize: 'native' needs a registered id; {source.label} was "
            "given in Python: use sync or async"
        )
    return _native(spec, n)


#: ``environment.vectorize`` (as :func:`~agilerl.families.single_agent.vectorize.resolve_vectorize` resolves it)
#: -> the builder of its ``n`` copies (from the environment given in Python, if any).
#: Each gives same-step autoreset.
VECTOR_BUILDERS: dict[str, Callable[[Any, int, PythonEnv | None], VectorEnv]] = {
    "native": _native_only,
    "sync": _sync,
    "async": _async,
}


def make_vector_env(
    spec: Any, num_envs: int | None = None, source: PythonEnv | None = None
) -> VectorEnv:
    """The vectorised environment ``spec`` describes (``num_envs`` overrides the spec),
    vectorised as ``environment.vectorize`` resolves (:mod:`agilerl.families.single_agent.vectorize`); its
    copies made from ``source`` where the run's environment was given in Python."""
    try:
        chosen = resolve_vectorize(spec)
    except VectorizeError as err:
        raise EnvironmentSpecError(str(err)) from None
    return VECTOR_BUILDERS[chosen.kind](spec, int(num_envs or spec.num_envs), source)


def _quiet_worker(*args: Any) -> None:
    """gymnasium's worker loop, ended without a traceback once the trainer is gone (it
    ended, or closed the pipes after another worker died): the loop reports the closed
    pipe as an error, then fails to send it (``BrokenPipeError``), which multiprocessing
    would print. No one is left to tell."""
    try:
        _async_worker(*args)
    except PIPE_CLOSED:
        pass


def _reporting_ends(name: str, call: str) -> Any:
    """``AsyncVectorEnv``'s method ``name``, which talks to the workers, with a worker that
    ended during ``call`` (``reset``, ``step``) reported by :meth:`_AsyncVectorEnv.ended`."""
    inherited = getattr(AsyncVectorEnv, name)

    @functools.wraps(inherited)
    def method(self: _AsyncVectorEnv, *args: Any, **kwargs: Any) -> Any:
        try:
            return inherited(self, *args, **kwargs)
        except PIPE_CLOSED:
            raise self.ended(call) from None

    return method


class _AsyncVectorEnv(AsyncVectorEnv):
    """gymnasium's worker-process vector env, each way it can end said in one line:

    * a worker's error: every call of the user's code in a worker goes through
      :func:`call_environment`, whose error is already the one line to show (gymnasium
      raises it again in this process, message intact); its log of the worker's
      traceback is dropped;
    * a worker that ended (its environment's ``os._exit``, a signal, the time limit's
      forced exit): one :class:`EnvironmentCallError` naming the environment (``what``),
      the sub-environment and how its process ended; the other workers end with it;
    * the trainer gone: the workers end without a traceback (:func:`_quiet_worker`).

    Its copies' spaces are checked by :func:`check_same_spaces`."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], what: str, **kwargs: Any):
        self.what = what
        super().__init__(env_fns, worker=_quiet_worker, **kwargs)

    reset_async = _reporting_ends("reset_async", "reset")
    reset_wait = _reporting_ends("reset_wait", "reset")
    step_async = _reporting_ends("step_async", "step")
    step_wait = _reporting_ends("step_wait", "step")
    call_async = _reporting_ends("call_async", "a call")
    call_wait = _reporting_ends("call_wait", "a call")

    def ended(self, call: str) -> EnvironmentCallError:
        """The error for a worker found gone (its pipe closed) during ``call``, once every
        worker is ended and this env closed (no reply is left to wait for)."""
        error = worker_end_error(self.what, self.processes, call)
        self._state = AsyncState.DEFAULT  # nothing pending: close ends the workers at once
        self.close(terminate=True)
        return error

    def _check_spaces(self) -> None:
        """Every worker's copy against the spaces the vector env batches on (those of
        the copy gymnasium builds first, here); the workers are ended on a refusal."""
        first = {
            name: getattr(self, f"single_{attribute}") for attribute, name in SHARED_SPACES.items()
        }
        found = [self.get_attr(attribute) for attribute in SHARED_SPACES]
        copies = [
            dict(zip(SHARED_SPACES.values(), own, strict=True)) for own in zip(*found, strict=True)
        ]
        try:
            check_same_spaces(self.what, first, copies)
        except EnvironmentSpecError:
            self.close(terminate=True)
            raise

    def _raise_if_errors(self, successes: Any) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_WORKER_LOG)
            super()._raise_if_errors(successes)


#: The messages gymnasium's logger gives a worker's error (as warnings).
_WORKER_LOG = r".*ERROR: (Received the following error from Worker|Traceback|Raising the last)"
