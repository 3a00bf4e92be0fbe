"""How fast and how bounded loading a document is (agilerl/files/documents.py).

1. Parse time of the DQN CartPole manifest of ``shared/bench-manifests/``
   (``load_document``: read, decode, parse, build the values; no validation).
2. Linearity: files of comments up to the size limit, and texts of 4 and 8 MB given to
   the parser directly (files that large are refused before they are read).
3. Bombs, each in a child process: peak memory (ru_maxrss) and time of
   ``agilerl validate`` on a 9-level alias bomb, and the size of its error output.

Times are CPU seconds of this process (or the child's), so other work on a shared
machine does not count against them.

    python benchmarks/load_documents.py [--seconds 3] [--manifest PATH]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agilerl.files.documents import MAX_DOCUMENT_BYTES, _load, load_document

ROOT = Path(__file__).resolve().parents[1]
BENCH_MANIFEST = ROOT.parent / "shared" / "bench-manifests" / "dqn_cartpole.yaml"
COMMENT = "# " + "x" * 77 + "\n"


def per_call(action, seconds: float) -> float:
    """CPU seconds per call of ``action``, repeated for ``seconds``."""
    done, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        action()
        done += 1
    return (time.process_time() - start) / done


def comments(size: int) -> str:
    return "a: 1\n" + COMMENT * (size // len(COMMENT))


def alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [" + ",".join(["lol"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def child(args: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, peak MB, output bytes) of ``agilerl`` in a memory-limited child."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "agilerl.cli", *args],
        capture_output=True,
        preexec_fn=limit,
        timeout=600,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, after.ru_maxrss / 1024, len(done.stdout) + len(done.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU time per measurement")
    parser.add_argument("--manifest", type=Path, default=BENCH_MANIFEST, help="bench manifest")
    args = parser.parse_args()

    if args.manifest.exists():
        seconds = per_call(lambda: load_document(args.manifest), args.seconds)
        print(f"{args.manifest.name}: load_document {seconds * 1e6:.0f} us ({1 / seconds:.0f}/s)")

    print("files of comments (load_document):")
    with tempfile.TemporaryDirectory() as folder:
        for size in (MAX_DOCUMENT_BYTES // 4, MAX_DOCUMENT_BYTES // 2, MAX_DOCUMENT_BYTES - 100):
            path = Path(folder) / f"{size}.yaml"
            path.write_text(comments(size))
            seconds = per_call(lambda path=path: load_document(path), args.seconds / 3)
            print(f"  {size / 2**20:5.2f} MiB  {seconds * 1e3:7.1f} ms")
        print("texts of comments beyond the file limit (the parser alone):")
        for size in (4_000_000, 8_000_000):
            text = comments(size)
            seconds = per_call(lambda text=text: _load(text), args.seconds / 3)
            print(f"  {size / 1e6:5.1f} MB   {seconds * 1e3:7.1f} ms")

        bomb = Path(folder) / "bomb.yaml"
        bomb.write_text(alias_bomb(9))
        cpu, peak, output = child(["validate", str(bomb)])
        print(
            f"agilerl validate on a {bomb.stat().st_size}-byte 9-level alias bomb: "
            f"{cpu:.2f} s CPU, peak {peak:.0f} MB, {output} bytes of output"
        )


if __name__ == "__main__":
    main()
