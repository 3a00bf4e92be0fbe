"""Building modules on torch's meta device: shapes without storage, so a size can be
measured (the pre-flight of a run, the sizes a loaded agent file implies) before any
memory is allocated for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


@contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Every parameter a module registers moves to the meta device at once, before its
    initialisation writes it: the parameter's host memory is reserved, never used."""
    register = torch.nn.Module.register_parameter

    def on_meta(module: torch.nn.Module, name: str, param: Any) -> None:
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register  # type: ignore[method-assign]


#: The factories that make a tensor from a size alone (no data): what a constructor calls to
#: make a layer's weights (``nn.Linear`` calls ``torch.empty``), a buffer or a state.
SIZED_FACTORIES = frozenset(
    {
        torch.empty,
        torch.empty_strided,
        torch.zeros,
        torch.ones,
        torch.full,
        torch.rand,
        torch.randn,
        torch.randint,
        torch.randperm,
        torch.eye,
        torch.arange,
        torch.linspace,
        torch.logspace,
    }
)


class SizedOnMeta(TorchFunctionMode):
    """Every tensor made from a size with no device named goes to the meta device: shapes,
    no storage. torch's own ``with torch.device("meta")`` would move tensors made from data
    too (``torch.as_tensor(space.low)``), and a constructor that checks their values (a
    Box's bounds are finite) could no longer read them; those stay on the CPU, where they
    cost no more than the data they copy, which already exists. Parameters alone moving
    to meta (:func:`parameters_on_meta`) was not enough: ``nn.Linear`` allocates its
    weight with ``torch.empty`` before it registers it, so a layer of 10**5 x 10**5
    really allocated 40 GB first."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in SIZED_FACTORIES and kwargs.get("device") is None:
            kwargs["device"] = META
        return func(*args, **kwargs)


META = torch.device("meta")


@contextmanager
def built_on_meta() -> Iterator[None]:
    """Build on the meta device, allocating nothing: tensors made from a size
    (:class:`SizedOnMeta`) and every registered parameter (:func:`parameters_on_meta`)
    get shapes without storage. The one way this package sizes what it has not built
    yet: the pre-flight of a run and the agents a loaded file implies."""
    with SizedOnMeta(), parameters_on_meta():
        yield
