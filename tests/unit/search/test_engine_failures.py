"""The pure-Python engine under backend failures: what is skipped, what is reported.

A directory that fails to list (whatever the backend raises) is skipped and counted, so
the search keeps what it found elsewhere; a backend's own `TimeoutError` (an RPC timeout)
is a failure, not the search deadline, on the sync and the async path alike.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.protocol import FileInfo


class StoreError(Exception):
    """Not an OSError: what a store client raises for one failed request."""


class FlakyBackend(LocalBackend):
    """Local disk searched by the pure-Python engine; listing `broken` raises `error`."""

    def __init__(self, root: Path, broken: str, error: Exception) -> None:
        super().__init__(root, use_ripgrep=False)
        self.broken = broken
        self.error = error

    def list_dir(self, path: str) -> list[FileInfo]:
        if path == self.broken:
            raise self.error
        return super().list_dir(path)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        if path == self.broken:
            raise self.error
        return await super().alist_dir(path)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.txt").write_text("needle here\n")
    return tmp_path


def call(backend: LocalBackend, name: str, mode: str, **args: object) -> ToolMessage:
    tool = next(t for t in FileToolkit(backend).get_tools() if t.name == name)
    request = {"name": name, "args": args, "id": "1", "type": "tool_call"}
    if mode == "sync":
        return tool.invoke(request)
    return asyncio.run(tool.ainvoke(request))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "error", [StoreError("request failed"), TimeoutError("rpc timed out")], ids=["store", "rpc"]
)
def test_one_failing_directory_is_skipped_and_counted_not_the_whole_search_lost(
    tree: Path, mode: str, error: Exception
) -> None:
    backend = FlakyBackend(tree, "/b", error)
    grep = call(backend, "grep", mode, pattern="needle")
    assert grep.status == "success", grep.content
    assert "/a/notes.txt" in grep.content
    assert "/c/notes.txt" in grep.content
    assert "/b/notes.txt" not in grep.content
    note = (
        "(1 unreadable entry (permission denied, removed during the search, or a storage"
        " error) skipped; the results cover the rest.)"
    )
    assert grep.content.endswith(note)
    found = call(backend, "glob", mode, pattern="**/*.txt")
    assert found.status == "success", found.content
    assert "/a/notes.txt" in found.content
    assert "/c/notes.txt" in found.content
    assert found.content.endswith(note)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", ["grep", "glob"])
def test_a_backend_timeout_is_a_failure_not_the_deadline(tree: Path, mode: str, name: str) -> None:
    backend = FlakyBackend(tree, "/", TimeoutError("rpc timed out"))
    args = {"pattern": "needle"} if name == "grep" else {"pattern": "**/*.txt"}
    message = call(backend, name, mode, **args)
    assert message.status == "error", message.content
    assert "deadline" not in message.content
