"""Checkpoint files: data only (no code), written atomically, verified before use.

Every file the project saves for an agent or a run uses one format. Layout of format
version 2 (all integers little-endian)::

    offset  size  field
         0    13  magic b"AGILERL-CKPT\\x00"
        13     1  format version (2)
        14     8  payload length
        22    32  SHA-256 of the payload
        54     -  payload:  8 bytes  length M of the tree
                            M bytes  the tree, UTF-8 JSON
                            rest     a safetensors file: the tensors the tree refers to

The tree is JSON with a few tagged values, each a one-key object (see :data:`DECODERS`):
``{"$tensor": name}`` and ``{"$ndarray": name}`` refer to the safetensors part (arrays
come back as numpy arrays of their dtype), ``$tuple``, ``$dict`` (keys that are not
plain strings), ``$int`` (beyond 2**53), ``$float`` (nan, inf), ``$numpy`` (numpy
scalars) and ``$space`` (gymnasium spaces). The few names a file holds (space types,
bit generators, algorithm and network classes) are looked up in fixed tables of this
package only, so loading a file from someone else cannot run code. Format version 1 (a
``torch.save`` pickle after the same header) is refused, never unpickled.

:func:`require` checks a decoded tree against a layout (required keys, their types) so
that the code restoring an agent or a run refuses a wrong file with a message naming the
key path (``agents[0].networks.actor: missing``) before it uses anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import struct
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import safetensors
import safetensors.torch
import torch
from gymnasium import spaces

from agilerl.files.atomic import write_bytes
from agilerl.files.documents import NotRegularFile, open_regular
from agilerl.resources.host_memory import available_memory

MAGIC = b"AGILERL-CKPT\x00"
FORMAT_VERSION = 2
#: Format versions this module can tell apart, with why an old one is refused.
REFUSED_VERSIONS = {
    1: "a torch pickle, written by an earlier agilerl: unpickling a file can run code, so "
    "it is not loaded; start the run again to write a checkpoint in the current format",
}
_HEADER = struct.Struct(f"<{len(MAGIC)}sBQ32s")
_TREE_LENGTH = struct.Struct("<Q")
#: Nesting depth of a tree beyond which a file is refused (real checkpoints need ~15).
MAX_DEPTH = 100
#: Largest tree (the JSON part) a file may hold. Parsed JSON takes up to ~30 times its
#: text in Python objects, so the tree is bounded on its own; real trees take KiBs (an
#: agent) to a few MiB (a run's history over thousands of generations).
MAX_TREE_BYTES = 64 << 20
#: Integers beyond this magnitude are stored as decimal strings (JSON readers in other
#: languages lose precision above 2**53).
_EXACT_INT = 2**53


class CheckpointError(ValueError):
    """A checkpoint file is missing, not a checkpoint, damaged or of the wrong kind."""


def join(where: str, key: Any) -> str:
    """The key path ``where`` extended by a mapping key or a list index."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else str(key)


def fail(where: str, message: str) -> CheckpointError:
    """The error for a bad value at key path ``where``."""
    return CheckpointError(f"{where}: {message}" if where else message)


# -- the tree codec ---------------------------------------------------------------------
class _Encoder:
    """Turns a tree into JSON-ready data, collecting tensors and arrays by name."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}

    def __call__(self, value: Any, where: str = "") -> Any:
        for cls in type(value).__mro__:
            encode = ENCODERS.get(cls)
            if encode is not None:
                return encode(self, value, where)
        raise TypeError(
            f"{where or 'checkpoint'}: a checkpoint cannot hold a {type(value).__name__}"
        )

    def store(self, tensor: torch.Tensor) -> str:
        name = str(len(self.tensors))
        # Own contiguous CPU copy: safetensors refuses views and shared storage.
        self.tensors[name] = tensor.detach().to("cpu", copy=True).contiguous()
        return name


def _encode_dict(enc: _Encoder, value: Mapping[Any, Any], where: str) -> Any:
    if all(isinstance(k, str) and not k.startswith("$") for k in value):
        return {k: enc(v, join(where, k)) for k, v in value.items()}
    return {"$dict": [[enc(k, where), enc(v, join(where, k))] for k, v in value.items()]}


def _encode_int(enc: _Encoder, value: int, where: str) -> Any:
    value = int(value)
    return value if abs(value) <= _EXACT_INT else {"$int": str(value)}


def _encode_float(enc: _Encoder, value: float, where: str) -> Any:
    value = float(value)
    return value if math.isfinite(value) else {"$float": repr(value)}


def _encode_array(enc: _Encoder, value: np.ndarray, where: str) -> Any:
    if value.dtype.kind not in _NUMPY_KINDS:
        raise TypeError(f"{where}: a checkpoint cannot hold a numpy array of {value.dtype}")
    native = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("="))
    return {"$ndarray": enc.store(torch.from_numpy(native))}


def _encode_scalar(enc: _Encoder, value: np.generic, where: str) -> Any:
    if value.dtype.kind not in _NUMPY_KINDS:
        raise TypeError(f"{where}: a checkpoint cannot hold a numpy {value.dtype}")
    return {"$numpy": [value.dtype.name, enc(value.item(), where)]}


def _encode_space(enc: _Encoder, value: spaces.Space, where: str) -> Any:
    codec = SPACES.get(type(value).__name__)
    if codec is None or type(value) is not codec[0]:
        raise TypeError(f"{where}: a checkpoint cannot hold a {type(value).__name__} space")
    return {"$space": {"type": type(value).__name__, **enc(codec[1](value), where)}}


#: Python type -> encoder; looked up along the value's MRO (a Parameter is a Tensor, a
#: numpy float64 a numpy scalar before it is a float).
ENCODERS: dict[type, Callable[[_Encoder, Any, str], Any]] = {
    type(None): lambda enc, v, where: None,
    bool: lambda enc, v, where: v,
    str: lambda enc, v, where: str(v),
    int: _encode_int,
    float: _encode_float,
    dict: _encode_dict,
    list: lambda enc, v, where: [enc(x, join(where, i)) for i, x in enumerate(v)],
    tuple: lambda enc, v, where: {"$tuple": [enc(x, join(where, i)) for i, x in enumerate(v)]},
    torch.Tensor: lambda enc, v, where: {"$tensor": enc.store(v)},
    np.ndarray: _encode_array,
    np.generic: _encode_scalar,
    spaces.Space: _encode_space,
}

#: numpy dtype kinds a checkpoint holds: bool, signed and unsigned integers, floats.
_NUMPY_KINDS = frozenset("biuf")


class _Decoder:
    """Rebuilds a tree from its JSON data and the tensors it refers to."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        self.tensors = tensors
        self.used: set[str] = set()

    def __call__(self, data: Any, where: str = "", depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise fail(where, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(data, list):
            return [self(x, join(where, i), depth + 1) for i, x in enumerate(data)]
        if not isinstance(data, dict):
            return data  # str, int, float, bool, None: JSON has nothing else
        tags = [k for k in data if k.startswith("$")]
        if not tags:
            return {k: self(v, join(where, k), depth + 1) for k, v in data.items()}
        if len(data) != 1 or tags[0] not in DECODERS:
            raise fail(where, f"unknown tagged value {', '.join(map(repr, tags))}")
        return DECODERS[tags[0]](self, data[tags[0]], where, depth + 1)

    def tensor(self, name: Any, where: str) -> torch.Tensor:
        if not isinstance(name, str) or name not in self.tensors:
            raise fail(where, f"refers to tensor {name!r}, which the file does not hold")
        if name in self.used:
            raise fail(where, f"refers to tensor {name!r} a second time")
        self.used.add(name)
        return self.tensors[name]


def _expect(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise fail(where, f"{what} must be a {getattr(kind, '__name__', kind)}, found {value!r}")
    return value


def _decode_dict(dec: _Decoder, data: Any, where: str, depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for i, pair in enumerate(_expect(data, list, where, "$dict")):
        if not isinstance(pair, list) or len(pair) != 2:
            raise fail(join(where, i), "a $dict entry must be a [key, value] pair")
        key = dec(pair[0], where, depth)
        try:
            hash(key)
        except TypeError:
            raise fail(join(where, i), f"unusable mapping key {key!r}") from None
        out[key] = dec(pair[1], join(where, key), depth)
    return out


def _decode_int(dec: _Decoder, data: Any, where: str, depth: int) -> int:
    try:
        return int(_expect(data, str, where, "$int"))
    except ValueError as err:
        raise fail(where, f"bad $int: {err}") from None


def _decode_float(dec: _Decoder, data: Any, where: str, depth: int) -> float:
    if data not in ("nan", "inf", "-inf"):
        raise fail(where, f"bad $float {data!r} (nan, inf or -inf)")
    return float(data)


def _decode_array(dec: _Decoder, data: Any, where: str, depth: int) -> np.ndarray:
    tensor = dec.tensor(data, where)
    if tensor.dtype == torch.bfloat16:
        raise fail(where, "an array cannot be bfloat16 (numpy has no such dtype)")
    return tensor.numpy()


def _decode_scalar(dec: _Decoder, data: Any, where: str, depth: int) -> np.generic:
    if not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], str):
        raise fail(where, "a $numpy value must be [dtype, value]")
    try:
        dtype = np.dtype(data[0])
    except (TypeError, ValueError, SyntaxError):
        raise fail(where, f"unknown numpy dtype {data[0]!r}") from None
    value = dec(data[1], where, depth)
    if dtype.kind not in _NUMPY_KINDS or isinstance(value, (list, dict, str)) or value is None:
        raise fail(where, f"bad numpy scalar {data!r}")
    try:
        return dtype.type(value)
    except (OverflowError, ValueError) as err:
        raise fail(where, f"bad numpy scalar {data!r}: {err}") from None


def _decode_space(dec: _Decoder, data: Any, where: str, depth: int) -> spaces.Space:
    fields = dict(_expect(data, dict, where, "$space"))
    name = fields.pop("type", None)
    if not isinstance(name, str) or name not in SPACES:
        raise fail(where, f"unknown space type {name!r}; known: {', '.join(SPACES)}")
    cls, to_fields, names = SPACES[name]
    if set(fields) != set(names):
        raise fail(where, f"a {name} space needs the fields {', '.join(names)}")
    values = dec(fields, where, depth)
    try:
        return cls(**values)
    except (TypeError, ValueError, AssertionError, OverflowError) as err:
        raise fail(where, f"not a valid {name} space: {err}") from None


DECODERS: dict[str, Callable[[_Decoder, Any, str, int], Any]] = {
    "$tensor": lambda dec, data, where, depth: dec.tensor(data, where),
    "$ndarray": _decode_array,
    "$tuple": lambda dec, data, where, depth: tuple(
        dec(_expect(data, list, where, "$tuple"), where, depth)
    ),
    "$dict": _decode_dict,
    "$int": _decode_int,
    "$float": _decode_float,
    "$numpy": _decode_scalar,
    "$space": _decode_space,
}

#: Gymnasium space name -> (class, its constructor fields, their names). A space is
#: rebuilt from these fields only; its random generator is not saved.
SPACES: dict[str, tuple[type, Callable[[Any], dict[str, Any]], tuple[str, ...]]] = {
    "Box": (
        spaces.Box,
        lambda s: {"low": s.low, "high": s.high, "dtype": s.dtype.name},
        ("low", "high", "dtype"),
    ),
    "Discrete": (
        spaces.Discrete,
        lambda s: {"n": int(s.n), "start": int(s.start)},
        ("n", "start"),
    ),
    "MultiDiscrete": (
        spaces.MultiDiscrete,
        lambda s: {"nvec": s.nvec, "start": s.start, "dtype": s.dtype.name},
        ("nvec", "start", "dtype"),
    ),
    "MultiBinary": (spaces.MultiBinary, lambda s: {"n": s.n}, ("n",)),
    "Dict": (spaces.Dict, lambda s: {"spaces": dict(s.spaces)}, ("spaces",)),
    "Tuple": (spaces.Tuple, lambda s: {"spaces": list(s.spaces)}, ("spaces",)),
}


def encode(obj: Any) -> bytes:
    """The payload (tree length, JSON tree, safetensors part) for ``obj``."""
    enc = _Encoder()
    tree = json.dumps(enc(obj), separators=(",", ":"), allow_nan=False).encode("utf-8")
    return _TREE_LENGTH.pack(len(tree)) + tree + safetensors.torch.save(enc.tensors)


def decode(payload: bytes, kind: str | None = None) -> Any:
    """The tree of a payload made by :func:`encode`; errors name what is wrong."""
    if len(payload) < _TREE_LENGTH.size:
        raise CheckpointError("payload too short to hold a tree")
    (length,) = _TREE_LENGTH.unpack_from(payload)
    if length > MAX_TREE_BYTES:
        raise CheckpointError(
            f"the tree length ({length:,} bytes) is more than a checkpoint's tree may have "
            f"({MAX_TREE_BYTES:,})"
        )
    end = _TREE_LENGTH.size + length
    if end > len(payload):
        raise CheckpointError(
            f"the tree length ({length} bytes) is larger than the payload ({len(payload)})"
        )
    try:
        data = json.loads(payload[_TREE_LENGTH.size : end].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CheckpointError(f"the tree is not valid JSON ({err})") from None
    if kind is not None:
        found = data.get("kind") if isinstance(data, dict) else type(data).__name__
        if found != kind:
            raise CheckpointError(f"expected a {kind} checkpoint, found {found!r}")
    try:
        tensors = safetensors.torch.load(payload[end:])
    except Exception as err:  # safetensors raises its own error type for any bad input
        raise CheckpointError(f"the tensor part is not a valid safetensors file ({err})") from None
    dec = _Decoder(tensors)
    tree = dec(data)
    unused = sorted(set(tensors) - dec.used, key=str)
    if unused:
        raise CheckpointError(f"the file holds tensors the tree never refers to: {unused[:5]}")
    return tree


# -- the file ---------------------------------------------------------------------------
def frame(payload: bytes, version: int = FORMAT_VERSION) -> bytes:
    """Header (magic, version, length, SHA-256) + ``payload``: the bytes of a file."""
    return _HEADER.pack(MAGIC, version, len(payload), hashlib.sha256(payload).digest()) + payload


def _header(head: bytes) -> tuple[int, bytes]:
    """``(payload length, SHA-256)`` of a file's first :data:`_HEADER` bytes (fewer when
    the file is shorter); what is wrong otherwise."""
    if not head.startswith(MAGIC):
        raise CheckpointError("not an agilerl checkpoint (bad header)")
    if len(head) == len(MAGIC):
        raise CheckpointError("damaged checkpoint (truncated inside the header)")
    version = head[len(MAGIC)]
    if version in REFUSED_VERSIONS:
        raise CheckpointError(f"checkpoint format version {version} ({REFUSED_VERSIONS[version]})")
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint format version {version} is newer than this agilerl reads "
            f"({FORMAT_VERSION}); upgrade agilerl"
        )
    if len(head) < _HEADER.size:
        raise CheckpointError(
            f"damaged checkpoint (truncated inside the header: {len(head)} of {_HEADER.size} bytes)"
        )
    _, _, length, digest = _HEADER.unpack_from(head)
    return length, digest


def _verified(payload: bytes, length: int, digest: bytes) -> bytes:
    """``payload`` (everything after the header) when it is the ``length`` bytes whose
    SHA-256 is ``digest``; else which of truncation, trailing data or a changed length
    field or payload explains the difference."""

    def intact(part: bytes) -> bool:
        return hashlib.sha256(part).digest() == digest

    if len(payload) == length:
        if not intact(payload):
            raise CheckpointError("damaged checkpoint (checksum mismatch: the payload changed)")
        return payload
    if len(payload) > length:
        extra = len(payload) - length
        if intact(payload[:length]):
            raise CheckpointError(
                f"damaged checkpoint ({extra} bytes of trailing data after the payload; "
                "the checkpoint itself is intact)"
            )
        if intact(payload):
            raise CheckpointError(
                f"damaged checkpoint (corrupted length field: it gives {length} bytes, "
                f"smaller than the {len(payload)}-byte payload, which matches its checksum)"
            )
        raise CheckpointError(
            f"damaged checkpoint (length field gives {length} payload bytes, the file holds "
            f"{len(payload)}, and neither matches the checksum)"
        )
    if intact(payload):
        raise CheckpointError(
            f"damaged checkpoint (corrupted length field: it gives {length} bytes, larger "
            f"than the file; the {len(payload)}-byte payload matches its checksum)"
        )
    raise CheckpointError(
        f"damaged checkpoint (truncated: {len(payload)} of {length} payload bytes); "
        "resume from an earlier checkpoint"
    )


def payload_limit() -> int | None:
    """The most payload bytes a checkpoint read may hold: half the memory this process
    may still allocate (the payload and the tensors decoded from it are in memory
    together); None when the available memory is unknown (the file's size still bounds
    the read)."""
    available = available_memory()
    return None if available is None else available // 2


def size_text(n: int) -> str:
    """``n`` bytes for a message (with GiB from 1 GiB)."""
    return f"{n:,} bytes ({n / 2**30:.1f} GiB)" if n >= 2**30 else f"{n:,} bytes"


def read_file(path: Path) -> bytes:
    """The bytes of the checkpoint file at ``path``, read with bounds known before any
    read: only a regular file (opened without blocking, so a FIFO with no writer is
    refused, not waited on), its fixed-size header first, then no more than the file's
    size, and only when the payload the header declares and the file's size are both
    within :func:`payload_limit`."""
    try:
        fd, info = open_regular(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: is a directory, not a checkpoint file") from None
    except NotRegularFile as err:
        what = f"is {err.kind}" if err.kind else "not a regular file"
        raise CheckpointError(f"{path}: {what}, not a checkpoint file") from None
    except OSError as err:
        raise CheckpointError(f"{path}: cannot read ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as file:
        try:
            head = file.read(_HEADER.size)
            with restoring(path):
                length, digest = _header(head)
                limit = payload_limit()
                rest = info.st_size - _HEADER.size
                if limit is not None and max(length, rest) > limit:
                    which = "declares a payload of" if length >= rest else "holds a payload of"
                    raise CheckpointError(
                        f"the file {which} {size_text(max(length, rest))}, more than this "
                        f"process may read ({size_text(limit)}: half the memory available)"
                    )
                # No more than the file holds (+1 to see a file that grew meanwhile).
                payload = file.read(rest + 1)
                return _verified(payload, length, digest)
        except OSError as err:
            raise CheckpointError(f"{path}: cannot read ({err.strerror or err})") from None


def save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``obj`` (a tree of the types in :data:`ENCODERS`) to ``path`` atomically.

    Raises ``TypeError`` naming the key path of a value no checkpoint can hold, and
    :class:`~agilerl.files.atomic.OutputError` when the file cannot be written (the previous
    file is then unchanged)."""
    return write_bytes(path, frame(encode(obj)))


def load(path: str | os.PathLike[str], kind: str | None = None) -> Any:
    """The tree saved at ``path`` by :func:`save`; ``kind`` checks its ``"kind"`` entry.

    Any problem (missing, foreign, damaged, old format, malformed) is a
    :class:`CheckpointError` that starts with the path."""
    path = Path(path)
    payload = read_file(path)
    with restoring(path):
        return decode(payload, kind)


@contextlib.contextmanager
def restoring(source: str | os.PathLike[str]) -> Iterator[None]:
    """Name ``source`` (a file) in every :class:`CheckpointError` raised inside."""
    try:
        yield
    except CheckpointError as err:
        raise CheckpointError(f"{source}: {err}") from None


# -- layouts: what a restorer checks before it uses a tree -------------------------------
def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class ListOf:
    """Layout of a list whose items all match ``item``."""

    def __init__(self, item: Any) -> None:
        self.item = item

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise fail(where, f"expected a list, found {_type_name(value)}")
        for i, item in enumerate(value):
            require(item, self.item, join(where, i))


class MapOf:
    """Layout of a mapping with string keys whose values all match ``value``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise fail(where, f"expected a mapping, found {_type_name(value)}")
        for key, item in value.items():
            if not isinstance(key, str):
                raise fail(where, f"keys must be strings, found {key!r}")
            require(item, self.value, join(where, key))


class Nullable:
    """Layout of None or a value matching ``layout``."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout

    def check(self, value: Any, where: str) -> None:
        if value is not None:
            require(value, self.layout, where)


class Omittable:
    """In a mapping layout: a key that may be absent (its value matches ``layout``)."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout


def _check_fields(value: Any, layout: dict[str, Any], where: str) -> None:
    if not isinstance(value, dict):
        raise fail(where, f"expected a mapping, found {_type_name(value)}")
    for key, sub in layout.items():
        if key in value:
            require(value[key], sub.layout if isinstance(sub, Omittable) else sub, join(where, key))
        elif not isinstance(sub, Omittable):
            raise fail(join(where, key), "missing")
    for key in value:
        if key not in layout:
            raise fail(join(where, key), f"unexpected key (expected {', '.join(layout)})")


#: How a layout's types are named in errors (a float layout takes any number).
_TYPE_NAMES = {float: "a number", int: "an integer", str: "a string", bool: "true or false"}


def _check_type(value: Any, layout: type | tuple[type, ...], where: str) -> None:
    kinds = layout if isinstance(layout, tuple) else (layout,)
    accepted = (*kinds, int) if float in kinds else kinds
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, accepted):
        names = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
        raise fail(where, f"expected {names}, found {_type_name(value)}")


def require(value: Any, layout: Any, where: str = "") -> None:
    """Check ``value`` against ``layout``: a type (``float`` also takes an int, no type
    takes a bool but ``bool``), a tuple of types, a dict of required keys (values are
    layouts; :class:`Omittable` ones may be absent; other keys are refused),
    :class:`ListOf`, :class:`MapOf`, :class:`Nullable`, or ``object`` (anything).
    Raises :class:`CheckpointError` naming the key path of the first mismatch."""
    if isinstance(layout, (ListOf, MapOf, Nullable)):
        layout.check(value, where)
    elif isinstance(layout, dict):
        _check_fields(value, layout, where)
    elif layout is not object:
        _check_type(value, layout, where)


def require_keys(value: Mapping[str, Any], expected: Any, where: str, what: str) -> None:
    """``value``'s keys are exactly ``expected``: the first missing or extra one named."""
    for key in expected:
        if key not in value:
            raise fail(join(where, key), "missing")
    for key in value:
        if key not in expected:
            raise fail(join(where, key), f"not {what} (expected {', '.join(expected)})")


def require_tensor(
    value: Any, where: str, shape: tuple[int, ...], dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``value`` is a tensor of ``shape`` (and ``dtype``, if given)."""
    if not torch.is_tensor(value):
        raise fail(where, f"expected a tensor, found {_type_name(value)}")
    if tuple(value.shape) != tuple(shape):
        raise fail(where, f"shape {tuple(value.shape)}, expected {tuple(shape)}")
    if dtype is not None and value.dtype != dtype:
        raise fail(where, f"dtype {value.dtype}, expected {dtype}")
    return value


def require_count(value: Any, where: str, most: int | None = None) -> int:
    """``value`` is an integer from 0 (to ``most``, where given): a count of steps,
    generations or episodes."""
    _check_type(value, int, where)
    if value < 0:
        raise fail(where, f"{value} is negative; a count is 0 or more")
    if most is not None and value > most:
        raise fail(where, f"{value:,} is more than {most:,}")
    return value


def require_finite(value: Any, where: str) -> None:
    """Every number in ``value`` (a number, a tensor, or a list or tuple of them) is
    finite: a saved inf or nan trains to nan at once."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            require_finite(item, join(where, i))
    elif torch.is_tensor(value):
        if value.dtype.is_floating_point and not bool(torch.isfinite(value).all()):
            bad = value[~torch.isfinite(value)].flatten()[0].item()
            raise fail(where, f"holds {bad}; every value must be finite")
    elif isinstance(value, float) and not math.isfinite(value):
        raise fail(where, f"{value} is not a finite number")


#: The numpy bit generators a saved ``Generator`` state may name.
BIT_GENERATORS = {
    cls.__name__: cls
    for cls in (
        np.random.PCG64,
        np.random.PCG64DXSM,
        np.random.MT19937,
        np.random.Philox,
        np.random.SFC64,
    )
}


def generator_from_state(state: Any, where: str) -> np.random.Generator:
    """A numpy ``Generator`` whose bit generator continues from ``state`` (a saved
    ``bit_generator.state``), checked before it is used."""
    if not isinstance(state, dict):
        raise fail(where, f"expected a mapping, found {_type_name(state)}")
    name = state.get("bit_generator")
    if not isinstance(name, str) or name not in BIT_GENERATORS:
        problem = "missing" if name is None else f"unknown bit generator {name!r}"
        raise fail(join(where, "bit_generator"), problem)
    bits = BIT_GENERATORS[name]()
    try:
        # numpy's stubs type each generator's state setter with its own TypedDict (and the
        # union of them here with one); numpy checks the dict itself, raising what is caught below.
        bits.state = state  # pyright: ignore[reportAttributeAccessIssue]
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as err:
        raise fail(where, f"not a valid {name} state ({err})") from None
    return np.random.Generator(bits)
