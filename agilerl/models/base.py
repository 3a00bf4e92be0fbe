"""Hand-written base classes of the generated spec models.

datamodel-code-generator is told (``base-class`` / ``base-class-map`` in
``pyproject.toml``) to derive every generated model from one of these, which is how
behaviour reaches classes that are generated from ``schemas/``. Rules of this module:
it declares no pydantic fields (the schema is the only place fields are defined) and
never imports the generated package (that would be circular).
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_serializer
from pydantic_core import InitErrorDetails

from agilerl.models.env_types import LLMEnvType
from agilerl.models.kinds import AgentType
from agilerl.models.legacy import RENAMED_KEYWORD, LegacyKeyWarning, rename_old_keys
from agilerl.models.one_pass import custom_error, reraisable, validate_document
from agilerl.models.rules import RULES_KEYWORD
from agilerl.models.standard_rules import titled_rules

# AgentType lives with the table of agent kinds; imported from here too.
__all__ = ["AgentType", "reraisable"]  # reraisable: for the manifest's section validation

ALGORITHM_KEYWORD = "x-agilerl-algorithm"


def _schema_extra(cls: type[BaseModel], key: str) -> list[Any]:
    """Values of schema extension ``key`` along the MRO, most basic class first.

    The generator copies ``x-agilerl-*`` keywords into ``model_config.json_schema_extra``;
    pydantic's config merge lets a subclass's dict replace its parent's, so walking
    the MRO is what makes a rule declared on a shared fragment apply to every spec
    built from it (as ``allOf`` does for the JSON Schema validators).
    """
    found: list[Any] = []
    for klass in reversed(cls.__mro__):
        config = getattr(klass, "model_config", None) or {}
        extra = config.get("json_schema_extra")
        if isinstance(extra, Mapping) and key in extra and extra[key] not in found:
            found.append(extra[key])
    return found


def _standard_rules(cls: type[BaseModel]) -> tuple[Mapping[str, Any], ...]:
    """The rules the schemas of ``cls`` and of the generated classes it is built from
    state in standard keywords (:mod:`agilerl.models.standard_rules`), most basic class
    first: the generator keeps no ``if`` / ``then``, so they are read from the schema
    whose title each class bears, and checked like the ``x-agilerl-rules``."""
    by_title = titled_rules()
    found: list[Mapping[str, Any]] = []
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("agilerl._generated."):
            found += [rule for rule in by_title.get(klass.__name__, ()) if rule not in found]
    return tuple(found)


#: Every generated spec class by title, so hand-written code can reach a spec named in a
#: schema (``"network_spec": "QNetworkSpec"``) without importing the generated package.
SPEC_CLASSES: dict[str, type[BaseModel]] = {}


def spec_class(title: str) -> type[BaseModel]:
    """The generated spec class with this schema title."""
    found = SPEC_CLASSES.get(title)
    if found is None:
        import agilerl.models  # noqa: F401  (imports, hence registers, every generated spec)

        found = SPEC_CLASSES[title]
    return found


class SpecBase(BaseModel):
    """Base of every generated spec: strict, schema-equivalent validation."""

    # Strict: no "8" -> 8 or true -> 1 coercion, exactly like the JSON Schema.
    # defer_build: a class's validator is built on first use, so importing the ~70 specs
    # stays cheap and a run pays only for the specs it validates.
    # allow_inf_nan=False: JSON has no infinity or NaN, so a document holding one is not
    # valid for the schema (open maps are checked by the walk).
    model_config = ConfigDict(strict=True, defer_build=True, allow_inf_nan=False)

    spec_rules: ClassVar[tuple[Mapping[str, Any], ...]] = ()
    #: AgileRL's old spellings of the class's keys, ``{old: new}`` (``x-agilerl-renamed``).
    spec_renamed: ClassVar[Mapping[str, str]] = {}
    #: Whether the class overrides :meth:`prepare_document` (read by the validation walk,
    #: which cannot import this module: this module imports it).
    prepares_document: ClassVar[bool] = False

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.__module__.startswith("agilerl._generated."):
            SPEC_CLASSES[cls.__name__] = cls
        cls.spec_rules = tuple(
            rule for rules in _schema_extra(cls, RULES_KEYWORD) for rule in rules
        ) + _standard_rules(cls)
        cls.spec_renamed = {
            old: new
            for renamed in _schema_extra(cls, RENAMED_KEYWORD)
            for old, new in renamed.items()
        }
        cls.prepares_document = bool(cls.spec_renamed) or (
            cls.prepare_document.__func__ is not SpecBase.prepare_document.__func__  # type: ignore[attr-defined]
        )

    @classmethod
    def prepare_document(
        cls, data: dict[str, Any]
    ) -> tuple[dict[str, Any], list[InitErrorDetails]]:
        """Hook for specs whose parts depend on each other: return the document to
        validate and any errors found on the way. The plain spec has nothing to do but
        read AgileRL's old spellings of its keys (``spec_renamed``) under their new names,
        as every JSON Schema validator accepts them; the manifest loader has done so
        already, with the file's lines (:mod:`agilerl.models.legacy`)."""
        if not cls.spec_renamed or cls.spec_renamed.keys().isdisjoint(data):
            return data, []
        renamed, deprecated, conflicts = rename_old_keys(cls.spec_renamed, data)
        for old, message in deprecated:
            warnings.warn(f"{old}: {message}", LegacyKeyWarning, stacklevel=2)
        errors = [
            InitErrorDetails(
                type=custom_error("legacy_key_conflict", message),
                loc=(old,),
                input=data[old],
            )
            for old, message in conflicts
        ]
        return renamed, errors

    @classmethod
    def validate_at_once(cls, data: dict[str, Any]) -> Any:
        """Hook for specs with a ``prepare_document``: the instance a document valid as
        written describes, found without preparing it; None to prepare and validate the
        document the usual way (which reports its problems)."""
        return None

    # Validation goes through one walk (agilerl.models.one_pass) and then pydantic-core,
    # which validates nested specs in Rust: no spec has a Python validator of its own.
    # Every way in from a document (constructor, model_validate, model_validate_json)
    # takes the walk; an existing instance was validated when it was made.

    def __init__(self, /, **data: Any) -> None:
        __tracebackhide__ = True
        validate_document(type(self), data, self_instance=self)

    # pydantic calls a custom __init__ for every nested spec it builds; marked as the
    # base initialiser, it lets pydantic-core build nested specs itself (the walk has
    # already prepared them).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Any:
        __tracebackhide__ = True
        if isinstance(obj, dict):
            return validate_document(cls, obj, **options)
        return super().model_validate(obj, **options)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **options: Any) -> Any:
        __tracebackhide__ = True
        # A JSON document is validated like the same document loaded from YAML.
        return cls.model_validate(json.loads(json_data), **options)


class MlpSpecBase(SpecBase):
    """Behaviour of ``MlpSpec``."""

    @model_serializer(mode="wrap")
    def _drop_unset_output_activation(self, handler: Any) -> Any:
        # The seeds document that a None output_activation is left out of dumps; doing
        # it in the serializer makes it hold when the MLP is nested in another spec too.
        data = handler(self)
        if isinstance(data, dict) and data.get("output_activation", ...) is None:
            del data["output_activation"]
        return data


class LoraConfigBase(SpecBase):
    """Behaviour of ``LoraConfigDict``."""

    @model_serializer(mode="wrap")
    def _sorted_target_module_set(self, handler: Any) -> Any:
        # A set has no order; dump it sorted so manifests written from it are stable.
        data = handler(self)
        # A field of the generated LoraConfigDict; this base declares no fields.
        modules = getattr(self, "target_modules", None)
        if isinstance(modules, (set, frozenset)):
            data["target_modules"] = sorted(modules)
        return data


class AlgorithmNotAvailableError(NotImplementedError):
    """The spec exists but ``agilerl.algorithms`` has no implementation for it (yet)."""


def engine_attribute(module_name: str, attribute: str, missing: str) -> Any:
    """``<module_name>.<attribute>``, imported on first use (the torch world loads here).

    Raises :class:`AlgorithmNotAvailableError` with ``missing`` when the engine module or
    the attribute does not exist; an import error *inside* an existing module propagates.
    """
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        raise AlgorithmNotAvailableError(missing) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise AlgorithmNotAvailableError(missing) from None


def resolve_algorithm_class(name: str) -> type:
    """``agilerl.algorithms.<name>``."""
    return engine_attribute(
        "agilerl.algorithms",
        name,
        f"Algorithm {name!r} has a spec but agilerl.algorithms provides no class {name!r} "
        "(the torch engine does not implement it yet).",
    )


def engine_lacks(name: str) -> str | None:
    """Why the engine cannot train algorithm ``name`` yet (what :func:`resolve_algorithm_class`
    would raise), or None when it can. Light: ``agilerl.algorithms.NAMES`` is looked up by
    name (the spec layer imports no engine module), and reading it imports no torch."""
    names = engine_attribute(
        "agilerl.algorithms", "NAMES", "agilerl.algorithms lists no algorithm names"
    )
    if name in names:
        return None
    return (
        f"algorithm {name}: the engine cannot train it yet (agilerl.algorithms has no "
        f"{name} class; it trains {', '.join(names)}); the manifest is "
        "valid, but `agilerl train` refuses it"
    )


def require_runtime_args(spec: AlgorithmBase, **args: Any) -> None:
    """Raise one ValueError naming every runtime argument that was not given."""
    missing = [name for name, value in args.items() if value is None]
    if missing:
        raise ValueError(
            f"{type(spec).__name__}.build_algorithm() is missing required "
            f"argument(s): {', '.join(missing)}."
        )


class AlgorithmBase(SpecBase):
    """Behaviour shared by every algorithm spec (``AlgorithmSpec`` and all below it)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent_type: ClassVar[AgentType | None] = None
    off_policy: ClassVar[bool] = False
    offline: ClassVar[bool] = False
    bandit: ClassVar[bool] = False
    # Attribute of agilerl.training holding this algorithm's training loop.
    training_fn_name: ClassVar[str | None] = None
    # Title of the network spec the algorithm builds (e.g. "QNetworkSpec").
    network_spec_name: ClassVar[str | None] = None
    # Evolution steps used when the training spec leaves evo_steps unset.
    default_evo_steps: ClassVar[int] = 10000
    # Which environment of its kind the algorithm trains in, where the kind has several
    # (LLM algorithms: LLMEnvType.REASONING, PREFERENCE or SFT); None for the others.
    env_type: ClassVar[LLMEnvType | None] = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Algorithm facts declared in the schema (x-agilerl-algorithm) become ClassVars.
        for facts in _schema_extra(cls, ALGORITHM_KEYWORD):
            if "agent_type" in facts:
                cls.agent_type = AgentType(facts["agent_type"])
            if "off_policy" in facts:
                cls.off_policy = bool(facts["off_policy"])
            if "training_fn" in facts:
                cls.training_fn_name = facts["training_fn"]
            if "network_spec" in facts:
                cls.network_spec_name = facts["network_spec"]
            if "default_evo_steps" in facts:
                cls.default_evo_steps = int(facts["default_evo_steps"])
            if "env_type" in facts:  # LLM algorithms: the LLM gym they train in
                cls.env_type = LLMEnvType(facts["env_type"])
        # Offline and bandit algorithms are told apart by their agent type alone.
        cls.offline = cls.agent_type is AgentType.OfflineAgent
        cls.bandit = cls.agent_type is AgentType.BanditAgent

    @property
    def name(self) -> str:
        """Return the name of the algorithm (the class name without ``Spec``)."""
        return type(self).__name__.removesuffix("Spec")

    @classmethod
    def algo_class(cls) -> type:
        """Lazily resolve the algorithm class: ``<Name>Spec`` -> ``agilerl.algorithms.<Name>``."""
        return resolve_algorithm_class(cls.__name__.removesuffix("Spec"))

    def build_algorithm(self) -> Any:
        """Build the algorithm instance using spec fields + runtime args.

        Each algorithm family (single-agent, multi-agent, LLM) defines its own runtime
        arguments; the bare base spec has none to build from.
        """
        raise NotImplementedError(
            f"{type(self).__name__} is not an algorithm family spec; build from an "
            "RLAlgorithmSpec, MultiAgentRLAlgorithmSpec or LLMAlgorithmSpec subclass."
        )

    @classmethod
    def get_training_fn(cls) -> Any:
        """Return the training function for this algorithm (lazily imported).

        Raises:
            NotImplementedError: If the spec names no training function.
        """
        if cls.training_fn_name is None:
            raise NotImplementedError(f"{cls.__name__} does not define a training function.")
        return engine_attribute(
            "agilerl.training",
            cls.training_fn_name,
            f"{cls.__name__} trains with agilerl.training.{cls.training_fn_name}, "
            "which this installation does not provide yet.",
        )

    def algorithm_kwargs(self) -> dict[str, Any]:
        """Spec fields as constructor keyword arguments.

        Every field is forwarded, set or not, so the default a user reads in the schema
        is the default the algorithm gets.
        """
        return {name: getattr(self, name) for name in type(self).model_fields}

    def get_training_kwargs(
        self, *, training: Any, env_spec: Any, memory: Any = None, n_step_memory: Any = None
    ) -> dict[str, Any]:
        """Return additional kwargs for the training loop.

        The keyword arguments of the algorithm's AgileRL-named training function, for
        calling it the AgileRL way: which ones, and where each is read from, is the
        engine's (:func:`agilerl.training.facade_kwargs.training_kwargs`, looked up by
        name; the trainer itself does not use them).

        Args:
            training: Training specification.
            env_spec: Environment specification.
            memory: Replay buffer instance.
            n_step_memory: N-step replay buffer for combined PER + n-step setups.
        """
        keywords = engine_attribute(
            "agilerl.training.facade_kwargs",
            "training_kwargs",
            f"{type(self).__name__}.get_training_kwargs reads the engine's "
            "agilerl.training.facade_kwargs, which this installation does not provide.",
        )
        return keywords(
            self, training=training, env_spec=env_spec, memory=memory, n_step_memory=n_step_memory
        )

    def _build_from_spaces(
        self,
        spaces: dict[str, Any],
        index: int | None,
        resume_from_checkpoint: str | None,
        device: Any,
        accelerator: Any,
        net_config: Any,
        seed: int | None,
    ) -> Any:
        """The one body of the single- and multi-agent ``build_algorithm``, which differ
        only in the names of their space arguments: ``spaces`` maps each name to its value
        (a space each, or a dict of spaces per agent). Each of them and ``index`` is
        required; the extensions ``net_config`` and ``seed`` reach the constructor only
        when given (its defaults else)."""
        require_runtime_args(self, **spaces, index=index)
        assert index is not None  # required just above
        extensions = {
            k: v for k, v in (("net_config", net_config), ("seed", seed)) if v is not None
        }
        return self._instantiate(
            index,
            resume_from_checkpoint,
            **spaces,
            device=device,
            accelerator=accelerator,
            **extensions,
        )

    def _instantiate(self, index: int, resume_from_checkpoint: str | None, **runtime: Any) -> Any:
        algo = self.algo_class()(index=index, **runtime, **self.algorithm_kwargs())
        if resume_from_checkpoint is not None:
            algo.load_checkpoint(resume_from_checkpoint)
            algo.index = index  # the population slot belongs to the caller, not the file
        return algo


class RLAlgorithmBase(AlgorithmBase):
    """Behaviour of single-agent algorithm specs."""

    agent_type: ClassVar[AgentType | None] = AgentType.SingleAgent

    def build_algorithm(
        self,
        observation_space: Any = None,
        action_space: Any = None,
        index: int | None = None,
        resume_from_checkpoint: str | None = None,
        device: Any = "cpu",
        accelerator: Any = None,
        *,
        net_config: Any = None,
        seed: int | None = None,
    ) -> Any:
        """Build a single-agent algorithm instance from spec fields.

        Beyond the documented arguments, ``net_config`` (a manifest ``network`` section;
        None infers the networks from the observation space) and ``seed`` (the agent's
        own random numbers) are how the trainer builds every agent through this method.

        Raises:
            ValueError: If observation_space, action_space, or index is None.
        """
        spaces = {"observation_space": observation_space, "action_space": action_space}
        return self._build_from_spaces(
            spaces, index, resume_from_checkpoint, device, accelerator, net_config, seed
        )


class MultiAgentRLAlgorithmBase(AlgorithmBase):
    """Behaviour of multi-agent algorithm specs."""

    agent_type: ClassVar[AgentType | None] = AgentType.MultiAgent

    def build_algorithm(
        self,
        observation_spaces: dict[str, Any] | None = None,
        action_spaces: dict[str, Any] | None = None,
        index: int | None = None,
        resume_from_checkpoint: str | None = None,
        device: Any = "cpu",
        accelerator: Any = None,
        *,
        net_config: Any = None,
        seed: int | None = None,
    ) -> Any:
        """Build a multi-agent algorithm from spec fields.

        ``net_config`` (a manifest ``network`` section, applied to every agent group;
        None infers the networks from each group's observation space) and ``seed`` are
        the extensions the single-agent ``build_algorithm`` has, for the same reason.

        Raises:
            ValueError: If observation_spaces, action_spaces, or index is None.
        """
        spaces = {"observation_spaces": observation_spaces, "action_spaces": action_spaces}
        return self._build_from_spaces(
            spaces, index, resume_from_checkpoint, device, accelerator, net_config, seed
        )


class LLMAlgorithmBase(AlgorithmBase):
    """Behaviour of LLM fine-tuning algorithm specs."""

    agent_type: ClassVar[AgentType | None] = AgentType.LLMAgent
    default_evo_steps: ClassVar[int] = 5

    @classmethod
    def get_training_fn(cls, multiturn: bool = False) -> Any:
        """The training function: the schema's (``finetune_llm_reasoning``, ...), or,
        with ``multiturn``, ``finetune_llm_multiturn``, which only the sampling
        algorithms (those of reasoning environments) train with."""
        if not multiturn:
            return super().get_training_fn()
        if cls.env_type is not LLMEnvType.REASONING:
            raise NotImplementedError(
                f"{cls.__name__} trains on {cls.env_type} datasets, not in multi-turn "
                "environments (GRPO, GSPO, CISPO and LLMREINFORCE do)"
            )
        return engine_attribute(
            "agilerl.training",
            "finetune_llm_multiturn",
            f"{cls.__name__} trains multi-turn with agilerl.training.finetune_llm_multiturn, "
            "which this installation does not provide yet.",
        )

    def build_algorithm(
        self,
        tokenizer: Any = None,
        index: int = 0,
        resume_from_checkpoint: str | None = None,
        accelerator: Any = None,
        device: Any = "cpu",
        actor_network: Any = None,
    ) -> Any:
        """Build an LLM algorithm instance from spec fields.

        ``actor_network``, when given, is used instead of loading
        ``pretrained_model_name_or_path``.

        Raises:
            ValueError: If tokenizer is None.
        """
        require_runtime_args(self, tokenizer=tokenizer)
        return self._instantiate(
            index,
            resume_from_checkpoint,
            tokenizer=tokenizer,
            accelerator=accelerator,
            device=device,
            actor_network=actor_network,
        )
