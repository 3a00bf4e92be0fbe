"""A run's output directory holds one run: a new run never overwrites an earlier one's.

Before a run that is not resuming writes anything, :func:`earlier_outputs` lists what an
earlier run left where this one would write: any entry of the output directory (other
than its lock file and the temporaries of a killed writer, which the trainer removes
first) and the run checkpoint file with its kept copies, wherever it lies. If there is
any, the run is refused with :class:`EarlierRunError` unless it was asked to replace the
earlier run (``force``): then :func:`remove_earlier_outputs` deletes exactly the files
an earlier run writes (:data:`OUTPUT_NAMES`, the family's own outputs such as an LLM run's
``best_adapter/`` or a bandit run's ``regret.png``, the checkpoint and its copies) and
nothing else, and says which it deleted.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from agilerl.files.atomic import LOCK_NAME, OutputError

#: The files a run writes into its output directory, by kind (the trainer's outputs).
OUTPUT_NAMES = {
    "agent": "best_agent.pt",
    "population": "population.pt",
    "manifest": "manifest.yaml",
    "plot": "fitness.png",
    "history": "history.json",
}


class EarlierRunError(OutputError):
    """Outputs of an earlier run lie where this run would write; nothing was written."""

    def __init__(self, directory: Path | None, found: list[Path]) -> None:
        self.directory = directory
        self.found = found
        super().__init__(
            f"{self.where()}: holds an earlier run's outputs ({self.names()}); this run "
            "would overwrite them. Continue that run (resume_from_checkpoint=..., or "
            "train(resume=True)), choose another output_dir, or replace it with "
            "train(force=True), which deletes the earlier run's outputs first"
        )

    def _inside(self, path: Path) -> bool:
        return self.directory is not None and path.parent == self.directory

    def where(self) -> str:
        """The output directory when the earlier outputs lie in it, else the checkpoint's."""
        inside = any(self._inside(p) for p in self.found)
        return str(self.directory if inside else self.found[0].parent)

    def names(self, shown: int = 5) -> str:
        """The first ``shown`` earlier outputs: a name in ``where()``, else a path."""
        here = Path(self.where())
        names = [p.name if p.parent == here else str(p) for p in self.found[:shown]]
        more = len(self.found) - shown
        return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _checkpoint_files(checkpoint: Path | None) -> list[Path]:
    """The run checkpoint and the copies ``overwrite_checkpoints: false`` keeps of it."""
    if checkpoint is None or not checkpoint.parent.is_dir():
        return []
    copy = re.compile(re.escape(checkpoint.stem) + r"_\d+" + re.escape(checkpoint.suffix))
    return sorted(
        entry
        for entry in checkpoint.parent.iterdir()
        if entry.is_file() and (entry.name == checkpoint.name or copy.fullmatch(entry.name))
    )


def earlier_outputs(output_dir: Path | None, checkpoint: Path | None) -> list[Path]:
    """Everything an earlier run left where this run would write (see the module)."""
    found = set(_checkpoint_files(checkpoint))
    if output_dir is not None and output_dir.is_dir():
        found.update(entry for entry in output_dir.iterdir() if entry.name != LOCK_NAME)
    return sorted(found)


def remove_earlier_outputs(
    output_dir: Path | None, checkpoint: Path | None, family_outputs: Iterable[str] = ()
) -> list[Path]:
    """Delete the files an earlier run wrote (its outputs, ``family_outputs``: the names of
    the family's own files or directories in ``output_dir``, its checkpoint and kept
    copies); any other entry stays. Returns what was deleted."""
    doomed = _checkpoint_files(checkpoint)
    if output_dir is not None:
        doomed += [output_dir / name for name in (*OUTPUT_NAMES.values(), *family_outputs)]
    removed = []
    for path in doomed:
        if not (path.is_file() or path.is_dir()):
            continue
        try:
            # A family output may be a directory (an LLM run's peft adapter).
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError as err:
            raise OutputError(f"{path}: cannot delete ({err.strerror or err})") from None
        removed.append(path)
    return removed
