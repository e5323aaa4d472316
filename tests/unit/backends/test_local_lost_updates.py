"""Agents sharing one disk never lose an edit: a stale write is refused, never applied.

Each agent (its own `FileToolkit(LocalBackend(root))`, in a thread or a process of its
own) increments its own line of one shared file through `read_file` + `edit_file`,
re-reading and retrying when refused as stale. Every increment an agent was told is
done must be in the file afterwards. The same holds for `apply_patch` changing two
files in two folders at once, with agents naming the files in opposite orders (a lock
order that depended on the patch would deadlock here).
"""

from __future__ import annotations

import multiprocessing
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from langchain_fstools import FileToolkit, LocalBackend
from tests.unit.tools.harness import Harness

if TYPE_CHECKING:
    from pathlib import Path

AGENTS = 8
INCREMENTS = 12
"""Increments each agent makes (each one may take several tries under contention)."""

TRIES = 400
"""Most tries an agent makes in all; the test fails rather than run on."""


def _value(text: str, slot: int) -> int:
    """The number on `slot`'s line in a `read_file` answer (or a file's text)."""
    found = re.search(rf"slot_{slot} = (\d+)", text)
    assert found is not None, text
    return int(found.group(1))


class _Reader:
    """What an agent knows of each slot's number: its last read (an "unchanged" reply keeps it)."""

    def __init__(self, agent: Harness, slot: int) -> None:
        self.agent, self.slot = agent, slot
        self.known: dict[str, int] = {}

    def __call__(self, path: str) -> int:
        text = self.agent.call("read_file", file_path=path).text
        if not text.startswith("File unchanged"):
            self.known[path] = _value(text, self.slot)
        return self.known[path]


def _agent(root: Path) -> Harness:
    """An agent of its own on `root`: a toolkit over a `LocalBackend` of its own."""
    agent = Harness("local-python", root.parent)
    agent.toolkit = FileToolkit(LocalBackend(root, use_ripgrep=False, durability="rename"))
    agent.tools = {tool.name: tool for tool in agent.toolkit.get_tools()}
    return agent


def increment_with_edits(root: Path, slot: int, increments: int) -> int:
    """One agent: read, edit `slot`'s number up by one, until `increments` edits succeeded.

    Returns:
        The edits the agent was told succeeded.
    """
    agent = _agent(root)
    read = _Reader(agent, slot)
    done = 0
    for _ in range(TRIES):
        if done == increments:
            break
        value = read("/shared.txt")
        reply = agent.call(
            "edit_file",
            file_path="/shared.txt",
            old_string=f"slot_{slot} = {value}\n",
            new_string=f"slot_{slot} = {value + 1}\n",
        )
        if reply.status != "error":
            done += 1
        else:
            assert "modified since it was last read" in reply.text, reply.text
    return done


def increment_with_patches(root: Path, slot: int, increments: int) -> int:
    """One agent: one `apply_patch` that increments `slot` in both files, retried when refused.

    Odd agents list `/b/two.txt` first, even ones `/a/one.txt`.
    """
    agent = _agent(root)
    files = ["/a/one.txt", "/b/two.txt"]
    if slot % 2:
        files.reverse()
    read = _Reader(agent, slot)
    done = 0
    for _ in range(TRIES):
        if done == increments:
            break
        values = {f: read(f) for f in files}
        hunks = "".join(
            f"*** Update File: {f}\n@@\n-slot_{slot} = {v}\n+slot_{slot} = {v + 1}\n"
            for f, v in values.items()
        )
        reply = agent.call("apply_patch", patch=f"*** Begin Patch\n{hunks}*** End Patch\n")
        if reply.status != "error":
            done += 1
    return done


def _shared_file(root: Path, name: str = "shared.txt") -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"slot_{slot} = 0\n" for slot in range(AGENTS)))
    return path


def _in_threads(root: Path, agent: object, slots: range) -> list[int]:
    with ThreadPoolExecutor(len(slots)) as pool:
        return list(pool.map(agent, [root] * len(slots), slots, [INCREMENTS] * len(slots)))  # type: ignore[arg-type]


def _two_threads(root: Path, first: int) -> list[int]:
    """A process's share: two agents in threads, slots `first` and `first + 1`."""
    return _in_threads(root, increment_with_edits, range(first, first + 2))


def test_threads_lose_no_edit(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shared = _shared_file(root)
    started = time.perf_counter()

    done = _in_threads(root, increment_with_edits, range(AGENTS))

    seconds = time.perf_counter() - started
    text = shared.read_text()
    print(f"{sum(done)} edits by {AGENTS} threads in {seconds:.2f} s")  # noqa: T201 - throughput, -s
    assert done == [INCREMENTS] * AGENTS
    assert [_value(text, slot) for slot in range(AGENTS)] == done
    assert text.count("\n") == AGENTS  # nothing torn


def test_processes_lose_no_edit(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shared = _shared_file(root)
    context = multiprocessing.get_context("spawn")
    started = time.perf_counter()

    with context.Pool(AGENTS // 2) as pool:
        shares = pool.starmap(_two_threads, [(root, first) for first in range(0, AGENTS, 2)])

    seconds = time.perf_counter() - started
    done = [n for share in shares for n in share]
    print(f"{sum(done)} edits by {AGENTS // 2} processes in {seconds:.2f} s")  # noqa: T201
    assert done == [INCREMENTS] * AGENTS
    assert [_value(shared.read_text(), slot) for slot in range(AGENTS)] == done


def test_patches_over_two_files_lose_no_hunk_and_never_deadlock(tmp_path: Path) -> None:
    root = tmp_path / "root"
    one, two = _shared_file(root, "a/one.txt"), _shared_file(root, "b/two.txt")

    done = _in_threads(root, increment_with_patches, range(AGENTS))

    assert done == [INCREMENTS] * AGENTS
    for path in (one, two):
        assert [_value(path.read_text(), slot) for slot in range(AGENTS)] == done
