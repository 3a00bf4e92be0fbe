"""The reward function of an LLM reasoning environment, loaded from the Python file the
manifest names.

Importing that file is the only code a manifest makes run, and it runs only because
``environment.reward_file_path`` names it. Every way the file or its function can be
unusable is refused up front (:class:`LLMSetupError`); a function that raises, runs past
the time limit for user code (:mod:`agilerl.guards.time_limit`), or returns something other than
a finite number a float32 holds, on the train or the test split, is a
:class:`RewardError` naming the file, the function and the sample it was scoring. The
import of the file runs under the same time limit.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import numbers
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agilerl.guards.user_code import UserCodeError, call_user
from agilerl.llm.models import LLMSetupError

FILE_FIELD = "environment.reward_file_path"
NAME_FIELD = "environment.reward_fn_name"
#: How much of a question or completion an error message quotes.
QUOTE_CHARS = 200
#: The largest magnitude a float32 holds (rewards are float32 tensors).
FLOAT32_MAX = float(np.finfo(np.float32).max)


class RewardError(ValueError):
    """A reward function failed on a sample (it raised, or returned no finite number)."""


def _quote(value: object) -> str:
    text = repr(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "..."


class RewardFunction:
    """The user's ``fn(completion, answer, question)``, whose results are checked floats."""

    def __init__(self, fn: Callable[..., object], file: Path, name: str) -> None:
        self.fn, self.file, self.name = fn, file, name

    def _where(self, completion: object, question: object) -> str:
        return (
            f"{self.file}: {self.name}(completion={_quote(completion)}, answer=..., "
            f"question={_quote(question)})"
        )

    def __call__(self, completion: str, answer: object, question: object) -> float:
        try:
            value = call_user(
                self.fn, completion, answer, question, what=f"{NAME_FIELD} {self.file}:{self.name}"
            )
        except UserCodeError:
            raise  # names the function and the exit already
        except Exception as err:  # the user's code: any failure is reported as theirs
            raise RewardError(
                f"{self._where(completion, question)} raised {type(err).__name__}: {err}"
            ) from err
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise RewardError(
                f"{self._where(completion, question)} returned {_quote(value)} "
                f"({type(value).__name__}), not a number"
            )
        if not math.isfinite(value):
            raise RewardError(
                f"{self._where(completion, question)} returned {value}, not a finite number"
            )
        if abs(float(value)) > FLOAT32_MAX:  # rewards are float32 tensors: it would become inf
            raise RewardError(
                f"{self._where(completion, question)} returned {value}, beyond the "
                f"float32 range of rewards (magnitude at most {FLOAT32_MAX:.4g})"
            )
        return float(value)

    def __repr__(self) -> str:
        return f"RewardFunction({self.file}:{self.name})"


def _import(file: Path) -> Any:
    # A private module name per file, registered so that dataclasses and pickling inside
    # the user's file find their module.
    module_name = "agilerl_reward_" + hashlib.sha1(str(file).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise LLMSetupError(f"{FILE_FIELD}: {file} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        call_user(spec.loader.exec_module, module, what=f"{FILE_FIELD} {file}")
    except SyntaxError as err:
        sys.modules.pop(module_name, None)
        raise LLMSetupError(
            f"{FILE_FIELD}: {file}:{err.lineno}:{err.offset}: syntax error: {err.msg}"
        ) from None
    except UserCodeError:
        sys.modules.pop(module_name, None)
        raise
    except Exception as err:  # importing runs the user's module-level code
        sys.modules.pop(module_name, None)
        raise LLMSetupError(
            f"{FILE_FIELD}: {file}: importing it raised {type(err).__name__}: {err}"
        ) from err
    return module


def load_reward_fn(file: str | Path, name: str, *, base_dir: Path | None = None) -> RewardFunction:
    """The function ``name`` of the Python file ``file`` (relative to ``base_dir``, the
    manifest's directory, when relative), wrapped as a :class:`RewardFunction`."""
    path = Path(file).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        where = f" (relative to {base_dir})" if base_dir is not None else ""
        raise LLMSetupError(f"{FILE_FIELD}: {file}{where}: no such file (it should define {name})")
    module = _import(path)
    if not hasattr(module, name):
        defined = sorted(
            n for n, v in vars(module).items() if inspect.isfunction(v) and not n.startswith("_")
        )
        raise LLMSetupError(
            f"{NAME_FIELD}: {path} defines no {name!r} "
            f"(its functions: {', '.join(defined) or 'none'})"
        )
    fn = getattr(module, name)
    if not callable(fn):
        raise LLMSetupError(
            f"{NAME_FIELD}: {path}: {name} is not callable (it is of type {type(fn).__name__})"
        )
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have none; the call will tell
        signature = None
    if signature is not None:
        try:
            signature.bind(None, None, None)
        except TypeError as err:
            raise LLMSetupError(
                f"{NAME_FIELD}: {path}: {name}{signature} cannot be called as "
                f"{name}(completion, answer, question): {err}"
            ) from None
    return RewardFunction(fn, path, name)
