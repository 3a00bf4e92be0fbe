"""Reading YAML/JSON documents, keeping where every value came from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import TaggedScalar

from agilerl.models.validation import Issue, SpecError, parse_spec

#: Explicit core-schema tags on a scalar (``!!str 1_000``), as JSON values.
_TAGGED = {
    "tag:yaml.org,2002:str": str,
    "tag:yaml.org,2002:int": lambda text: int(text.replace("_", ""), 0),
    "tag:yaml.org,2002:float": lambda text: float(text.replace("_", "")),
}


def _tagged(node: TaggedScalar) -> Any:
    tag = str(node.tag.value if hasattr(node.tag, "value") else node.tag)
    if tag not in _TAGGED:
        raise DocumentError(f"unsupported YAML tag {tag!r} (JSON values only)")
    try:
        return _TAGGED[tag](node.value)
    except ValueError:
        raise DocumentError(f"{node.value!r} is not a valid {tag.rsplit(':', 1)[-1]}") from None


class DocumentError(ValueError):
    """A file that cannot be read as a YAML/JSON document."""


def _plain(node: Any) -> Any:
    """ruamel's position-carrying containers and scalars -> plain Python values."""
    if isinstance(node, TaggedScalar):
        return _tagged(node)
    if isinstance(node, dict):
        return {_plain(key): _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def _yaml() -> Any:
    """The one YAML 1.2 loader of the project (round-trip: it keeps positions)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    # YAML 1.2 core has no timestamps: a date stays the string it is written as.
    yaml.constructor.add_constructor(
        "tag:yaml.org,2002:timestamp", lambda constructor, node: constructor.construct_scalar(node)
    )
    return yaml


def parse_value(text: str) -> Any:
    """A value written inline (``20000``, ``1e-4``, ``[64, 64]``, ``null``, ``CartPole-v1``)
    read in the same YAML dialect as manifest files, so ``--set`` means what a file would."""
    from ruamel.yaml.error import YAMLError

    try:
        return _plain(_yaml().load(text))
    except (YAMLError, DocumentError) as err:
        raise DocumentError(f"{text!r} is not a valid YAML value: {err}") from None


def load_document(path: str | Path) -> tuple[Any, Any]:
    """Load a YAML 1.2 (or JSON) file: ``(data, locate)``.

    ``locate(path_tuple)`` returns the 1-based ``(line, column)`` of the value (or key)
    at a document path, or of its closest existing parent.
    """
    from ruamel.yaml.error import YAMLError

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise DocumentError(f"{path}: cannot read: {err.strerror}") from None
    try:
        raw = _yaml().load(text)
    except YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise DocumentError(f"{where}: not valid YAML: {getattr(err, 'problem', err)}") from None
    except Exception as err:  # ruamel raises bare errors on some malformed scalars (0x_)
        raise DocumentError(f"{path}: not valid YAML: {type(err).__name__}: {err}") from None

    def locate(doc_path: tuple[Any, ...]) -> tuple[int, int] | None:
        node, position = raw, (1, 1)
        for part in doc_path:
            lc = getattr(node, "lc", None)
            try:
                if lc is not None:
                    line, col = lc.key(part) if isinstance(node, dict) else lc.item(part)
                    position = (line + 1, col + 1)
                node = node[part]
            except (KeyError, IndexError, TypeError):
                break
        return position

    try:
        return _plain(raw), locate
    except DocumentError as err:
        raise DocumentError(f"{path}: {err}") from None


def load_spec(spec_cls: Any, path: str | Path) -> Any:
    """Load a spec file into ``spec_cls``; a :class:`SpecError` names file:line:column."""
    data, locate = load_document(path)
    if not isinstance(data, dict):
        issue = Issue((), data, f"expected a mapping of {spec_cls.__name__} fields", (1, 1))
        raise SpecError(spec_cls.__name__, [issue], str(path))
    return parse_spec(spec_cls, data, source=str(path), locate=locate)


def dump_yaml(data: Any) -> str:
    """``data`` as block-style YAML, keys in their given order (manifests the CLI writes)."""
    from io import StringIO

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    out = StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def modeline(output: Path) -> str:
    """The yaml-language-server comment pointing a manifest at ``output`` to the schema
    shipped with the package (a relative path: editors resolve it offline)."""
    schema = Path(__file__).with_name("schemas") / "manifest.schema.json"
    relative = os.path.relpath(schema.resolve(), Path(output).resolve().parent)
    return f"# yaml-language-server: $schema={relative}\n"
