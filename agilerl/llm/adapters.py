"""One frozen base model shared by a population: one peft model, one LoRA adapter per agent.

:class:`SharedBase` wraps a pretrained causal LM in a single ``peft`` model the first time
an agent asks for it; every later agent built on the same base object (the trainer passes
the same one to each) adds its own named adapter to that peft model. An agent's forward
runs with its adapter active (:meth:`SharedBase.active`); the reference policy is the
same model with every adapter disabled (:meth:`SharedBase.disabled`) or a frozen adapter
of its own. Base weights exist once in memory, whatever the population size; an agent's
adapter is deleted when the agent is garbage collected (:class:`LoraAdapter`). Agents
take turns on the shared model (one forward at a time, as the training loop runs them);
it is not meant for concurrent use from several threads.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias, cast

import safetensors.torch
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.tuners_utils import BaseTunerLayer
from peft.utils import get_peft_model_state_dict

from agilerl.models.networks import LoraConfigDict

#: The attribute of a base model under which its :class:`SharedBase` is kept.
_SHARED_ATTR = "_agilerl_shared_base"


def _modules(model: torch.nn.Module) -> Iterator[tuple[str, torch.nn.Module]]:
    """The model's modules as the base model has them: a layer peft already wrapped (the
    base is shared) counts as the layer, its insides (``base_layer``, ``lora_A``) not."""
    inside: list[str] = []
    for name, module in model.named_modules():
        if any(name.startswith(f"{outer}.") for outer in inside):
            continue
        yield name, module
        if isinstance(module, BaseTunerLayer):
            inside.append(name)


def _linear_names(model: torch.nn.Module) -> set[str]:
    """Qualified names of the model's linear layers (transformers' GPT-2 ``Conv1D``
    included), its output projection excepted: what peft's ``all-linear`` means."""
    from transformers.pytorch_utils import Conv1D

    # A transformers model's method; nn.Module's stubs read any attribute as Tensor | Module.
    get_output = cast("Callable[[], torch.nn.Module | None]", model.get_output_embeddings)
    output = get_output()
    return {
        name
        for name, module in _modules(model)
        if isinstance(module, (torch.nn.Linear, Conv1D, BaseTunerLayer)) and module is not output
    }


#: peft's ``target_modules``: a regular expression, ``"all-linear"``, or module names.
Targets: TypeAlias = str | list[str]


def _matches(name: str, targets: Targets, linear: set[str]) -> bool:
    """Whether module ``name`` is a LoRA target as peft reads ``target_modules``."""
    if targets == "all-linear":
        return name in linear
    if isinstance(targets, str):
        return re.fullmatch(targets, name) is not None
    return any(name == t or name.endswith(f".{t}") for t in targets)


def scoped_targets(model: torch.nn.Module, targets: Targets, scope: str | None) -> Targets:
    """``target_modules`` restricted to the sub-module ``scope`` (``lora_target_scope``):
    the qualified names of the matching modules under it. Unchanged without a scope; a
    ValueError naming the field when the scope holds no target."""
    if scope is None:
        return targets
    linear = _linear_names(model)
    found = sorted(
        name
        for name, _ in _modules(model)
        if name.startswith(f"{scope}.") and _matches(name, targets, linear)
    )
    if not found:
        raise ValueError(
            f"lora_target_scope: no module of target_modules {targets!r} lies under "
            f"{scope!r} in this model"
        )
    return found


def peft_lora_config(lora: Any, model: torch.nn.Module, scope: str | None) -> LoraConfig:
    """peft's ``LoraConfig`` for a ``lora_config`` field (None: its schema defaults)."""
    spec = lora if isinstance(lora, LoraConfigDict) else LoraConfigDict.model_validate(lora or {})
    targets = spec.target_modules
    if isinstance(targets, (set, frozenset)):
        targets = sorted(targets)
    return LoraConfig(
        r=spec.lora_r,
        lora_alpha=spec.lora_alpha,
        target_modules=scoped_targets(model, targets, scope),
        task_type=spec.task_type,
        lora_dropout=spec.lora_dropout,
    )


class SharedBase:
    """The peft model over one base model, holding every agent's named adapter."""

    def __init__(self, base: torch.nn.Module) -> None:
        self.base = base
        self.model: PeftModel | None = None
        self._count = 0
        self._retired: list[str] = []

    @classmethod
    def of(cls, model: Any) -> SharedBase:
        """The :class:`SharedBase` of ``model``: a base model (created on first use, then
        the same one for every agent given that base), or a SharedBase itself."""
        if isinstance(model, SharedBase):
            return model
        if isinstance(model, PeftModel):
            raise ValueError(
                "actor_network: a peft model; pass the base model (merge the adapter into "
                "it first), each agent adds its own adapter"
            )
        if not isinstance(model, torch.nn.Module) or not hasattr(model, "generate"):
            raise ValueError(
                f"actor_network: expected a transformers causal language model, got "
                f"{type(model).__name__}"
            )
        shared = getattr(model, _SHARED_ATTR, None)
        if shared is None:
            shared = cls(model)
            # A plain attribute (not a submodule): the base does not own the peft wrapper.
            object.__setattr__(model, _SHARED_ATTR, shared)
        return shared

    def new_name(self, prefix: str) -> str:
        """An adapter name no adapter of this model has had."""
        self._count += 1
        return f"{prefix}_{self._count}"

    def add(self, name: str, config: LoraConfig) -> None:
        """Add adapter ``name`` (peft initialises it: a zero LoRA update)."""
        self._collect()
        if self.model is None:
            with warnings.catch_warnings():
                # peft reads transformers' deprecated ``is_gradient_checkpointing``.
                warnings.filterwarnings("ignore", "`is_gradient_checkpointing`", FutureWarning)
                self.model = get_peft_model(self.base, config, adapter_name=name)
        else:
            self.model.add_adapter(name, config)

    def retire(self, name: str) -> None:
        """Mark adapter ``name`` for deletion at the next safe point (entering a forward,
        adding an adapter): its owner was garbage collected, which can happen in the
        middle of another agent's forward."""
        self._retired.append(name)

    def _collect(self) -> None:
        while self._retired:
            self._remove(self._retired.pop())

    def _remove(self, name: str) -> None:
        if self.model is not None and name in self.model.peft_config:
            with warnings.catch_warnings():
                # Deleting the active adapter makes another one active, which peft reports;
                # every forward activates the adapter it needs anyway.
                warnings.filterwarnings("ignore", "Adapter .* was active", UserWarning)
                self.model.delete_adapter(name)

    def names(self) -> list[str]:
        """The adapters the model holds (retired ones deleted first)."""
        self._collect()
        return [] if self.model is None else list(self.model.peft_config)

    def parameters(self, name: str) -> dict[str, torch.nn.Parameter]:
        """Adapter ``name``'s parameters by their name without the adapter's (the keys of
        a peft adapter file), in model order."""
        assert self.model is not None
        marker = f".{name}."
        return {
            key.replace(marker, "."): param
            for key, param in self.model.named_parameters()
            if marker in key
        }

    @contextlib.contextmanager
    def active(self, name: str) -> Iterator[PeftModel]:
        """The peft model with adapter ``name`` the active one."""
        assert self.model is not None
        self._collect()
        if self.model.active_adapter != name:
            # peft makes the active adapter trainable and freezes the others: only the
            # adapter in use receives gradients (each agent's optimiser holds its own).
            self.model.set_adapter(name)
        yield self.model

    @contextlib.contextmanager
    def disabled(self, name: str) -> Iterator[PeftModel]:
        """The peft model computing the base model alone (no adapter applies), entered
        from adapter ``name`` (peft needs a live active adapter to disable them)."""
        with self.active(name) as model, model.disable_adapter():
            yield model

    def save(self, name: str, path: Path) -> None:
        """Adapter ``name`` as a peft adapter directory (``adapter_config.json`` and
        ``adapter_model.safetensors``) that ``PeftModel.from_pretrained(base, path)``
        loads, written to a temporary sibling and renamed into place."""
        assert self.model is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            state = get_peft_model_state_dict(self.model, adapter_name=name)
            state = {k: v.detach().cpu().contiguous() for k, v in state.items()}
            safetensors.torch.save_file(
                state, str(tmp / "adapter_model.safetensors"), metadata={"format": "pt"}
            )
            self.model.peft_config[name].save_pretrained(str(tmp))
            if path.exists():
                shutil.rmtree(path)
            tmp.rename(path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


class LoraAdapter:
    """An agent's handle on its adapter in a :class:`SharedBase`: what the family layer
    treats as a network (its ``spec`` is the ``lora_config``, its ``state_dict`` the
    adapter's tensors). The adapter is deleted from the shared model when the handle is
    garbage collected (an agent dropped from the population takes its adapter along)."""

    def __init__(
        self, shared: SharedBase, prefix: str, spec: LoraConfigDict, config: LoraConfig
    ) -> None:
        self.shared = shared
        self.spec = spec
        self.name = shared.new_name(prefix)
        shared.add(self.name, config)
        self._params = shared.parameters(self.name)
        weakref.finalize(self, shared.retire, self.name)

    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self._params.values())

    def named_parameters(self) -> Iterator[tuple[str, torch.nn.Parameter]]:
        return iter(self._params.items())

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {key: param.detach() for key, param in self._params.items()}

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Copy ``state`` (keys and shapes as :meth:`state_dict`'s) into the adapter."""
        with torch.no_grad():
            for key, param in self._params.items():
                param.copy_(state[key])

    def with_spec(self, spec: LoraConfigDict) -> LoraAdapter:
        """This adapter, when ``spec`` is its own (an adapter's shape never mutates)."""
        if spec != self.spec:
            raise ValueError(
                f"the saved lora_config {spec.model_dump(mode='json')} is not this agent's "
                f"{self.spec.model_dump(mode='json')}"
            )
        return self

    def to(self, device: str | torch.device) -> LoraAdapter:
        """The adapter lives on the shared model's device: nothing to move."""
        return self

    def mutation_methods(self) -> list[str]:
        return []
