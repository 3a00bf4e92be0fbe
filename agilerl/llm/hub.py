"""Model and dataset names: a local path, or a Hugging Face hub id.

One rule for ``network.pretrained_model_name_or_path`` and ``environment.dataset``
(:func:`hub_id`). A name is a LOCAL PATH when any of these holds:

- it is a :class:`pathlib.Path` (in Python: only a string can be a hub id);
- it is written as a path: it starts with ``/``, ``./``, ``../`` or ``~`` (or is ``.`` or
  ``..``), or holds a backslash;
- something exists at it, relative to the manifest's folder (``base_dir``; the current
  directory where there is no manifest);
- it ends in a data file suffix (datasets only: ``.jsonl``, ``.json``, ``.csv``, ...);
- it is not of a hub id's form.

Otherwise, ``name`` or ``org/name`` in letters, digits, ``-``, ``_`` and ``.`` (without
``--`` or ``..``, at most 96 characters, as the hub allows), it is a HUB ID. So
``Qwen/Qwen2.5-0.5B-Instruct`` is a hub id unless a folder of that name lies beside the
manifest, and ``./Qwen/Qwen2.5-0.5B-Instruct`` is a path whatever exists.

Hub access honours the libraries' own settings, read when a name is resolved (not only
when they were imported, so a variable set in a notebook counts): downloads are off when
``HF_HUB_OFFLINE`` is true, or ``TRANSFORMERS_OFFLINE`` for models,
``HF_DATASETS_OFFLINE`` for datasets; the caches are ``HF_HUB_CACHE`` (models) and
``HF_DATASETS_CACHE`` (datasets), else under ``HF_HOME``, else the libraries' defaults.
Nothing fetched is ever code: models fetch configs, tokenizer files and safetensors
weights only (:data:`MODEL_FILES`) and load with ``trust_remote_code=False``; ``datasets``
no longer runs dataset scripts at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets import Dataset

#: A hub repository id: ``name`` or ``org/name`` (huggingface_hub's ``validate_repo_id``).
HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")
HUB_ID_MAX = 96
#: How a name written as a path starts.
PATH_PREFIXES = ("/", "./", "../", "~")
#: Dataset formats by file suffix: the ``datasets`` builder that reads each. A dataset
#: name ending in one is a local file, never a hub id.
DATA_FILE_BUILDERS = {
    ".jsonl": "json",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
#: Values of an offline variable that switch downloads off (huggingface_hub's).
TRUE = frozenset({"1", "ON", "YES", "TRUE"})
#: The variables that switch downloads off, by what is fetched.
OFFLINE_VARIABLES = {
    "model": ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"),
    "dataset": ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"),
}
#: The files of a model repository that are fetched: never pickled weights (unpickling
#: runs code), never Python files.
MODEL_FILES = (
    "*.json",
    "*.safetensors",
    "tokenizer.model",
    "*.tiktoken",
    "*.txt",
    "*.jinja",
)


class HubError(LookupError):
    """A hub id that cannot be resolved: the message says what was tried."""


def hub_id(
    name: str | Path, base_dir: Path | None = None, data_suffixes: tuple[str, ...] = ()
) -> str | None:
    """``name`` as a hub id, or None where it names a local path (the module's rule)."""
    if isinstance(name, Path):  # Path("./x") is Path("x"): how it was written is lost
        return None
    text = name
    if text in (".", "..") or text.startswith(PATH_PREFIXES) or "\\" in text:
        return None
    if ((base_dir or Path()) / text).exists():
        return None
    if text.lower().endswith(data_suffixes):
        return None
    if len(text) > HUB_ID_MAX or not HUB_ID.match(text) or "--" in text or ".." in text:
        return None
    return text


def not_found(field: str, name: str | Path, base_dir: Path | None, what: str, err: HubError) -> str:
    """The one line for a name that is neither a local path nor a hub ``what`` (model,
    dataset) this machine can load: both places tried."""
    tried = local_path(name, base_dir).absolute()
    return (
        f"{field}: {name}: no local path (nothing at {tried}), so it was looked up as a "
        f"Hugging Face hub {what}: {err} (write ./{name} to mean a local path)"
    )


def local_path(name: str | Path, base_dir: Path | None = None) -> Path:
    """``name`` as a local path, ``~`` expanded, relative to ``base_dir`` when relative."""
    path = Path(name).expanduser()
    return path if path.is_absolute() or base_dir is None else Path(base_dir) / path


def offline_switch(kind: str) -> str | None:
    """What switches downloads of a ``kind`` ("model", "dataset") off: the first variable
    set true, else the library's flag read at its import; None when downloads are on."""
    for variable in OFFLINE_VARIABLES[kind]:
        if os.environ.get(variable, "").upper() in TRUE:
            return f"{variable}={os.environ[variable]}"
    if kind == "dataset":
        import datasets.config

        return "datasets.config.HF_HUB_OFFLINE" if datasets.config.HF_HUB_OFFLINE else None
    from huggingface_hub import constants

    return "huggingface_hub.constants.HF_HUB_OFFLINE" if constants.HF_HUB_OFFLINE else None


def hub_cache() -> Path:
    """Where hub models are cached: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
    huggingface_hub's default."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def datasets_cache() -> Path:
    """Where hub datasets are cached once prepared: ``HF_DATASETS_CACHE``, else
    ``HF_HOME/datasets``, else datasets' default."""
    if os.environ.get("HF_DATASETS_CACHE"):
        return Path(os.environ["HF_DATASETS_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "datasets"
    import datasets.config

    return Path(datasets.config.HF_DATASETS_CACHE)


def model_snapshot(repo: str) -> Path:
    """The folder of the hub model ``repo`` in the hub cache (its ``main`` revision),
    fetched first (:data:`MODEL_FILES` only) unless downloads are off.

    The folder, not the id, goes to transformers: ``from_pretrained`` of an id asks the
    hub for an adapter config even with ``local_files_only=True`` (transformers 5), so an
    offline machine would wait through its retries on every load."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    switch, cache = offline_switch("model"), hub_cache()
    try:
        folder = snapshot_download(
            repo,
            cache_dir=cache,
            local_files_only=switch is not None,
            allow_patterns=list(MODEL_FILES),
        )
    except LocalEntryNotFoundError:
        if switch is not None:
            raise HubError(
                f"not in the hub cache {cache}, and downloads are off ({switch})"
            ) from None
        raise HubError(f"not in the hub cache {cache}, and the hub cannot be reached") from None
    except GatedRepoError:
        raise HubError(
            "a gated repository: accept its terms on huggingface.co and log in (hf auth login)"
        ) from None
    except RepositoryNotFoundError:
        raise HubError(
            "no such repository on the hub (or a private one: log in with hf auth login)"
        ) from None
    except (HfHubHTTPError, OSError, ValueError) as err:
        raise HubError(f"{type(err).__name__}: {_first_line(err)}") from None
    return Path(folder)


@contextmanager
def datasets_offline(switch: str | None) -> Iterator[None]:
    """``datasets`` with downloads off while ``switch`` says so. datasets reads its
    offline variables once, at import (``datasets.config.HF_HUB_OFFLINE``): a variable
    set later would be missed, and offline is what makes it read its cache without
    asking the hub first."""
    import datasets.config

    before = datasets.config.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = before or switch is not None
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE = before


def hub_dataset(repo: str) -> Dataset:
    """The ``train`` split of the hub dataset ``repo`` (its default configuration), held
    in memory: read from the datasets cache, fetched first unless downloads are off."""
    import datasets

    switch, cache = offline_switch("dataset"), datasets_cache()
    try:
        with datasets_offline(switch):
            table = datasets.load_dataset(
                repo, split="train", cache_dir=str(cache), keep_in_memory=True
            )
    except ConnectionError:  # datasets' word for "not cached, and no hub to ask"
        if switch is not None:
            raise HubError(
                f"not in the datasets cache {cache}, and downloads are off ({switch})"
            ) from None
        raise HubError(
            f"not in the datasets cache {cache}, and the hub cannot be reached"
        ) from None
    except Exception as err:  # the loader's errors come in many types
        raise HubError(f"{type(err).__name__}: {_first_line(err)}") from None
    if not isinstance(table, datasets.Dataset):
        raise HubError(f"loads as a {type(table).__name__}, not a table")
    return table


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [""])[0]
