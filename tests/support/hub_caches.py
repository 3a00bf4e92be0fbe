"""Hugging Face caches written by hand, so a test resolves hub ids with nothing downloaded.

A model: huggingface_hub's layout, ``models--<org>--<name>/snapshots/<commit>/<file>``,
each a relative link to ``blobs/<sha256 of the file>``, with ``refs/main`` naming the
commit.

A dataset: what ``datasets`` keeps of a hub dataset it has prepared, and reads offline,
``<org>___<name>/<config>/<version>/<hash>/`` with ``dataset_info.json`` and
``<name>-train.arrow``. datasets' own JSON builder writes the folder (under the name it
gives a local file) and it is moved to the hub id's name.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

#: The commit a hand-written model snapshot claims to be.
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def write_hub_model(cache: Path, repo: str, model: Path) -> Path:
    """The files of the model folder ``model`` as the hub model ``repo`` in the hub cache
    ``cache``; returns the snapshot folder."""
    root = cache / ("models--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir()
    for file in sorted(model.iterdir()):
        blob = root / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        shutil.copyfile(file, blob)
        (snapshot / file.name).symlink_to(Path("../..") / "blobs" / blob.name)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(COMMIT)
    return snapshot


def write_hub_dataset(cache: Path, repo: str, rows_file: Path) -> Path:
    """The JSON lines file ``rows_file`` as the ``train`` split of the hub dataset ``repo``
    (lower-case name, ``org/name``), prepared in the datasets cache ``cache``; returns the
    prepared folder."""
    from datasets.packaged_modules.json.json import Json

    org, name = repo.split("/")
    builder = Json(
        cache_dir=str(cache),
        dataset_name=name,
        hash="0123456789abcdef",
        data_files={"train": [str(rows_file)]},
    )
    builder.download_and_prepare()
    (config,) = (cache / name).iterdir()  # default-<hash of the data files>
    config.rename(config.parent / "default")  # a hub dataset's default configuration
    (cache / name).rename(cache / f"{org}___{name}")
    (prepared,) = (cache / f"{org}___{name}" / "default").glob("*/*/")
    return prepared
