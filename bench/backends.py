"""Store backends: `ls` and `glob` of one small directory in a store holding 10,000 files.

    python bench/backends.py [--files 10000] [--repeat 7] [--no-postgres]

The store holds `--files` files in 100 directories plus a directory `/small` of 10
files, once in our layout (namespace `("ours",)`) and once in deepagents' (namespace
`("theirs",)`), in the same store. Times (median of `--repeat`, warm) our `ls` and
`glob` tools on `StoreBackend` against deepagents' `StoreBackend.ls` / `.glob` on:

- an `InMemoryStore`;
- a `PostgresStore` on a throwaway PostgreSQL started here (initdb + pg_ctl, as in the
  integration tests), unless `--no-postgres`.

A benchmark, not a test: it asserts only that both list the same files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepagents.backends import StoreBackend as TheirStore
from deepagents.backends.utils import create_file_data
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langchain_fstools import FileToolkit, StoreBackend
from langchain_fstools.backends.store import ENTRIES, directory_value, file_value

if TYPE_CHECKING:
    from collections.abc import Callable

    from langgraph.store.base import BaseStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DIRECTORIES = 100
SMALL = 10


def layout(files: int) -> dict[str, str]:
    """Path -> content: `files` files in 100 directories, plus 10 in /small."""
    tree = {f"/d{n % DIRECTORIES:03d}/f{n:05d}.txt": f"file {n}\nline two\n" for n in range(files)}
    tree.update({f"/small/s{n}.txt": f"small {n}\n" for n in range(SMALL)})
    return tree


def fill(store: BaseStore, tree: dict[str, str]) -> None:
    """Put the tree in both layouts, in batches of 1,000 puts."""
    ops: list[PutOp] = []
    directories = sorted({path.rsplit("/", 1)[0] for path in tree})
    ops += [PutOp(("ours", ENTRIES), d[1:], directory_value(), index=False) for d in directories]
    for path, text in tree.items():
        directory, name = path.rsplit("/", 1)
        ops.append(
            PutOp(("ours", directory[1:], ENTRIES), name, file_value(text.encode()), index=False)
        )
        their = create_file_data(text)
        ops.append(PutOp(("theirs",), path, dict(their), index=False))
    for start in range(0, len(ops), 1000):
        store.batch(ops[start : start + 1000])


def median_ms(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def measure(name: str, store: BaseStore, repeat: int) -> list[tuple[str, float, float]]:
    tools = {t.name: t for t in FileToolkit(StoreBackend(store, namespace=("ours",))).get_tools()}
    theirs = TheirStore(store=store, namespace=lambda _rt: ("theirs",))

    def ours_ls() -> list[str]:
        text = tools["ls"].invoke({"path": "/small"})
        return sorted(line.split()[-1].rsplit("/", 1)[-1] for line in str(text).splitlines())

    def ours_glob() -> list[str]:
        text = tools["glob"].invoke({"pattern": "*.txt", "path": "/small"})
        return sorted(line.rsplit("/", 1)[-1] for line in str(text).splitlines() if "/" in line)

    def their_ls() -> list[str]:
        return sorted(e["path"].rsplit("/", 1)[-1] for e in theirs.ls("/small").entries or [])

    def their_glob() -> list[str]:
        return sorted(e["path"].rsplit("/", 1)[-1] for e in theirs.glob("*.txt", "/small").matches)

    rows = []
    for op, ours, their in (
        ("ls /small", ours_ls, their_ls),
        ("glob *.txt", ours_glob, their_glob),
    ):
        ours_ms, ours_names = median_ms(ours, repeat)
        their_ms, their_names = median_ms(their, repeat)
        expected = [f"s{n}.txt" for n in range(SMALL)]
        assert ours_names == expected, (op, ours_names)
        assert their_names == expected, (op, their_names)
        rows.append((f"{name}: {op}", ours_ms, their_ms))
    return rows


def postgres_rows(tree: dict[str, str], repeat: int) -> list[tuple[str, float, float]]:
    from langgraph.store.postgres import PostgresStore
    from tests.integration.postgres import PostgresServer

    server = PostgresServer()
    try:
        server.init()
        server.start()
        server.wait_ready()
        url = server.create_database("bench")
        with PostgresStore.from_conn_string(url) as store:
            store.setup()
            fill(store, tree)
            return measure("PostgresStore", store, repeat)
    finally:
        server.stop()
        server.remove()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    tree = layout(args.files)
    memory = InMemoryStore()
    fill(memory, tree)
    rows = measure("InMemoryStore", memory, args.repeat)
    if not args.no_postgres:
        rows += postgres_rows(tree, args.repeat)
    print(
        f"store: {args.files:,} files in {DIRECTORIES} directories + /small ({SMALL} files),"
        f" in each layout; median of {args.repeat}"
    )
    print()
    print("| store: operation | ours ms | deepagents ms | deepagents / ours |")
    print("|---|---:|---:|---:|")
    for label, ours_ms, their_ms in rows:
        print(f"| {label} | {ours_ms:,.2f} | {their_ms:,.2f} | {their_ms / ours_ms:,.1f}x |")


if __name__ == "__main__":
    main()
