"""Behaviour of the generated environment specs (``base-class-map`` in ``pyproject.toml``).

AgileRL's environment specs build their environments themselves (``make_env``,
``make_single_env``, ``construct_custom_env_fn``); these methods give this project's
specs the same names. The spec layer imports no engine module (tests/test_import_graph.py),
so each method finds the engine's builder by module name when it is called
(:func:`engine`), and gymnasium, pettingzoo, pandas and torch load only then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.models.base import SpecBase, engine_attribute

#: Where each kind of environment is built: the engine modules the methods call.
SINGLE_AGENT_ENVS = "agilerl.families.single_agent.envs"
MULTI_AGENT_ENVS = "agilerl.families.multi_agent.envs"
MULTI_AGENT_VECTOR = "agilerl.families.multi_agent.vector"
BANDITS = "agilerl.families.bandits.family"
LLM_ENVIRONMENTS = "agilerl.families.llm.environments"


def engine(module: str, name: str) -> Any:
    """``name`` of engine module ``module``, imported now (never at spec import): the
    spec layer's one lookup, :func:`~agilerl.models.base.engine_attribute`."""
    return engine_attribute(module, name, f"the engine has no {module}.{name}")


def _wrappers(spec: SpecBase, extra: Sequence[Any] | None) -> SpecBase:
    """``spec`` with ``extra`` wrappers (schema forms: an import path, or
    ``{"wrapper": ..., "kwargs": {...}}``) after its own, validated like its own."""
    if not extra:
        return spec
    data = spec.model_dump(mode="json", exclude_unset=True)
    data["wrappers"] = [*(data.get("wrappers") or []), *extra]
    return type(spec).model_validate(data)


@dataclass(frozen=True)
class EnvBuilders:
    """Where one kind of vectorised environment is built: engine functions by module and
    name, each called with the spec."""

    module: str
    #: One unvectorised environment of a spec.
    single: str
    #: The vectorised environment of a spec (``module`` of its own: ``vector_module``).
    vector_module: str
    vector: str
    #: Title of the spec class :meth:`EnvSpecBase.construct_custom_env_fn` validates.
    spec: str


#: Each kind of vectorised environment spec (by the title of the class it builds on) and
#: its builders. OfflineEnvSpec builds on GymEnvFields: its Gymnasium fields describe the
#: evaluation environment.
ENV_BUILDERS: dict[str, EnvBuilders] = {
    "GymEnvFields": EnvBuilders(
        SINGLE_AGENT_ENVS, "make_env", SINGLE_AGENT_ENVS, "make_vector_env", "GymEnvSpec"
    ),
    "PzEnvSpec": EnvBuilders(
        MULTI_AGENT_ENVS, "make_parallel_env", MULTI_AGENT_VECTOR, "make_vector_env", "PzEnvSpec"
    ),
}


def _builders(cls: type) -> EnvBuilders:
    for klass in cls.__mro__:
        found = ENV_BUILDERS.get(klass.__name__)
        if found is not None:
            return found
    raise TypeError(f"{cls.__name__} is an environment spec no engine builds (EnvSpec alone)")


class EnvSpecBase(SpecBase):
    """Behaviour of ``EnvSpec`` and the specs built on it (``GymEnvSpec``,
    ``OfflineEnvSpec``, ``PzEnvSpec``): AgileRL's ``construct_custom_env_fn``,
    ``make_single_env`` and ``make_env``, each from the spec's row of
    :data:`ENV_BUILDERS`."""

    @classmethod
    def construct_custom_env_fn(
        cls,
        entrypoint: str,
        path: str | None = None,
        config: Mapping[str, Any] | None = None,
        wrappers: Sequence[Any] | None = None,
    ) -> Callable[[], Any]:
        """A zero-argument factory of one environment: ``entrypoint``
        (``module:callable`` or ``file.py:callable``, resolved from ``path``) called with
        ``config`` as keyword arguments, then each of ``wrappers`` (an import path, or
        ``{"wrapper": ..., "kwargs": {...}}``) applied in order. The arguments are
        validated now, as a spec's fields; the environment is built at each call."""
        from agilerl.models.base import spec_class

        builders = _builders(cls)
        spec = spec_class(builders.spec).model_validate(
            {
                "name": entrypoint,
                "entrypoint": entrypoint,
                "path": path,
                "config": None if config is None else dict(config),
                "wrappers": None if wrappers is None else list(wrappers),
            }
        )
        build = engine(builders.module, builders.single)
        return lambda: build(spec)

    def make_single_env(self) -> Any:
        """One unvectorised environment: the entry point's, or the registered one
        ``name`` names (Gymnasium: ``gymnasium.make(name, **config)``; PettingZoo:
        ``<name>.parallel_env(**config)``), wrapped as the spec says."""
        builders = _builders(type(self))
        return engine(builders.module, builders.single)(self)

    def make_env(self, extra_wrappers: Sequence[Any] | None = None) -> Any:
        """The vectorised environment of ``num_envs`` copies (as ``sync`` / ``vectorize``
        say), each wrapped by the spec's wrappers, then by ``extra_wrappers``."""
        builders = _builders(type(self))
        return engine(builders.vector_module, builders.vector)(_wrappers(self, extra_wrappers))


class BanditEnvBase(SpecBase):
    """Behaviour of ``BanditEnvSpec``."""

    def make_env(self, base_dir: str | Path = ".") -> Any:
        """The bandit: what ``entrypoint`` returns (called with ``config``), or the
        bandit of the ``features`` and ``targets`` tables (relative paths from
        ``base_dir``)."""
        return engine(BANDITS, "make_bandit")(self, base_dir)


class LLMEnvBase(SpecBase):
    """Behaviour of ``LLMEnvSpec`` and the per-algorithm sections built on its fields."""

    @property
    def name(self) -> str:
        """The environment's label: its dataset, else its ``env_name``, else its entry
        point, else ``multiturn``."""
        fields = (self.dataset, self.env_name, self.entrypoint)  # type: ignore[attr-defined]
        return next((value for value in fields if value is not None), "multiturn")

    def make_env(
        self,
        tokenizer: Any,
        accelerator: Any = None,
        *,
        batch_size: int = 8,
        max_context_length: int | None = None,
        seed: int = 0,
        base_dir: str | Path | None = None,
    ) -> Any:
        """The environment ``env_type`` names over the dataset (split ``train_test_split``,
        seeded), batches of ``batch_size`` prompts for ``tokenizer``; relative paths from
        ``base_dir``. ``accelerator`` is accepted for AgileRL's signature: this project's
        environment shards its batches itself. A multi-turn environment is refused
        (:data:`agilerl.models.env.RUN_REFUSALS`)."""
        del accelerator
        return engine(LLM_ENVIRONMENTS, "build_llm_env")(
            self,
            tokenizer,
            batch_size=batch_size,
            max_context_length=max_context_length,
            seed=seed,
            base_dir=None if base_dir is None else Path(base_dir),
        )


__all__ = ["ENV_BUILDERS", "BanditEnvBase", "EnvBuilders", "EnvSpecBase", "LLMEnvBase", "engine"]
