"""Building modules on torch's meta device: shapes without storage, so a size can be
measured (the pre-flight of a run, the sizes a loaded agent file implies) before any
memory is allocated for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


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
