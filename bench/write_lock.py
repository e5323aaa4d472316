"""What the folder lock of local writes costs: batches timed with it and without it.

    python bench/write_lock.py [--repeat 31]

`LocalBackend.write_many` of 100 files (one line changed in each, in 10 folders, as
`apply_patch` writes them) and `write_bytes` of one file, each timed with the folder
lock (`backends.write_locks`) and with it replaced by a no-op, interleaved, durable
(`fsync`) and with `durability="rename"`. Reported: medians and the ratio with/without
(target: at most 1.10x, the issue's "not slower by more than 10%"). A benchmark, not a
test: it checks only that both ways wrote the same bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_fstools import LocalBackend
from langchain_fstools.backends.local import atomic_writes
from langchain_fstools.core.results import Write

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@contextlib.contextmanager
def _unlocked(directories: object, timeout: float) -> Iterator[None]:
    del directories, timeout
    yield


def workspace(root: Path) -> list[str]:
    paths = []
    for folder in range(10):
        (root / f"d{folder}").mkdir()
        for index in range(10):
            path = root / f"d{folder}" / f"f{index}.py"
            path.write_text("".join(f"line {n}\n" for n in range(200)))
            paths.append(f"/d{folder}/f{index}.py")
    return paths


def batch(backend: LocalBackend, paths: list[str], counter: list[int]) -> None:
    """One line changed in each file, as one batch."""
    counter[0] += 1
    text = "".join(f"line {n}\n" for n in range(200)) + f"# {counter[0]}\n"
    backend.write_many([Write(p, text.encode()) for p in paths])


def one(backend: LocalBackend, path: str, counter: list[int]) -> None:
    """One small file rewritten."""
    counter[0] += 1
    backend.write_bytes(path, f"{counter[0]}\n".encode())


def timed(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=31)
    repeat = parser.parse_args().repeat
    locked_function = atomic_writes.directories_locked
    for durability in ("fsync", "rename"):
        root = Path(tempfile.mkdtemp())
        paths = workspace(root)
        backend = LocalBackend(root, durability=durability)
        runs = {
            "write_many, 100 files in 10 folders": functools.partial(batch, backend, paths, [0]),
            "write_bytes, 1 file": functools.partial(one, backend, paths[0], [0]),
        }
        for name, run in runs.items():
            with_lock: list[float] = []
            without: list[float] = []
            for _ in range(repeat):
                atomic_writes.directories_locked = locked_function  # type: ignore[assignment]
                with_lock.append(timed(run))
                atomic_writes.directories_locked = _unlocked  # type: ignore[assignment]
                without.append(timed(run))
            atomic_writes.directories_locked = locked_function  # type: ignore[assignment]
            a, b = statistics.median(with_lock) * 1000, statistics.median(without) * 1000
            verdict = "PASS" if a <= 1.10 * b else "FAIL"
            print(
                f"{durability:6} {name:38} with lock {a:8.2f} ms  without {b:8.2f} ms"
                f"  {a / b:.2f}x  {verdict} (target at most 1.10x)"
            )


if __name__ == "__main__":
    main()
