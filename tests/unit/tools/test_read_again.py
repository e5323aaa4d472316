"""read_file of a version read before: no stat first, and a file changed since read afresh.

A read remembers the version it found (`tools.known_texts`); the next read of that file
asks the backend for its window at that version (`Backend.read_checked`), which on an
object store is one ranged GET. These tests pin down that the saving never shows: a
file changed, replaced, removed or made binary since is answered exactly as a first read
would answer it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.view import BackendView
from langchain_fstools.core import calls
from tests.unit.backends.store_requests import watch_requests
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness

NUMBERED = b"".join(b"line %d\n" % n for n in range(1, 2001))


class CallLog(BackendView):
    """A backend that notes the name of every method called on it."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.log: list[str] = []

    def stat(self, path: str) -> Any:
        self.log.append("stat")
        return super().stat(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        self.log.append("read_bytes")
        return super().read_bytes(path, start, size)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        self.log.append("read_checked")
        return super().read_checked(path, start, size, expected_version=expected_version)


def test_a_reread_asks_no_stat_and_reads_at_the_version_it_knows(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_bytes(NUMBERED)
    backend = CallLog(LocalBackend(tmp_path))
    read = {t.name: t for t in FileToolkit(backend).get_tools()}["read_file"]
    first = read.invoke({"file_path": "/n.txt", "offset": 1500, "limit": 3})
    assert first.startswith("1500\tline 1500\n")
    assert backend.log[0] == "stat"
    backend.log.clear()
    again = read.invoke({"file_path": "/n.txt", "offset": 1400, "limit": 3})
    assert again.startswith("1400\tline 1400\n1401\tline 1401\n1402\tline 1402")
    assert set(backend.log) == {"read_checked"}, backend.log


def test_a_read_after_an_edit_asks_no_stat_and_shows_the_edit(tmp_path: Path) -> None:
    """The edit noted the version it wrote: the next read goes to it straight."""
    (tmp_path / "n.txt").write_bytes(NUMBERED)
    backend = CallLog(LocalBackend(tmp_path))
    tools = {t.name: t for t in FileToolkit(backend).get_tools()}
    tools["read_file"].invoke({"file_path": "/n.txt", "offset": 10, "limit": 1})
    edited = tools["edit_file"].invoke(
        {"file_path": "/n.txt", "old_string": "line 10\n", "new_string": "line ten\n"}
    )
    assert "Edited" in edited, edited
    backend.log.clear()
    again = tools["read_file"].invoke({"file_path": "/n.txt", "offset": 9, "limit": 3})
    assert again.startswith("9\tline 9\n10\tline ten\n11\tline 11"), again
    assert set(backend.log) == {"read_checked"}, backend.log


def test_on_an_object_store_a_reread_is_one_get(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness("objectstore", Path("/unused"))
    h.seed("/n.txt", NUMBERED)
    sent: list[str] = []
    watch_requests(monkeypatch, lambda request, _result: sent.append(type(request).__name__))
    assert h.call("read_file", file_path="/n.txt", offset=1990, limit=5).status == "success"
    sent.clear()
    msg = asyncio.run(h.acall("read_file", file_path="/n.txt", offset=1000, limit=5))
    assert msg.content.startswith("1000\tline 1000\n")
    assert sent == ["Peek"]  # a ranged GET whose answer names the version it read


@pytest.mark.parametrize(
    ("change", "answer"),
    [
        (b"other 1\nother 2\nother 3\n", "2\tother 2"),
        (b"", "System reminder: File exists but has empty contents"),
        (b"\x00\x01binary\xff", "Error: /a.txt is a binary file"),
        (None, "Error: /a.txt does not exist."),
    ],
    ids=["rewritten", "emptied", "binary", "removed"],
)
def test_a_file_changed_since_is_answered_as_a_first_read(
    h: Harness, run: Run, change: bytes | None, answer: str
) -> None:
    h.seed("/a.txt", b"line 1\nline 2\nline 3\n")
    assert run("read_file", file_path="/a.txt", offset=2, limit=1).content.startswith("2\tline 2\n")
    if change is None:
        calls.run(calls.delete("/a.txt"), h.toolkit.backend.bind(h.runtime()))
        h.state["files"] = {**h.state["files"], "/a.txt": None}
    else:
        h.change_behind_the_agents_back("/a.txt", change)
    msg = run("read_file", file_path="/a.txt", offset=2 if change else 1, limit=1)
    assert msg.content.startswith(answer), msg.content
    if change and change.startswith(b"other"):
        edit = run("edit_file", file_path="/a.txt", old_string="other 2", new_string="two")
        assert edit.status == "success", edit.content  # the read saw the new version


def test_a_repeat_of_a_read_still_shown_is_still_a_note(h: Harness, run: Run) -> None:
    h.seed("/a.txt", NUMBERED)
    run("read_file", file_path="/a.txt", offset=10, limit=5)
    again = run("read_file", file_path="/a.txt", offset=10, limit=5)
    assert again.content.startswith("File unchanged since your last read")
    h.change_behind_the_agents_back("/a.txt", NUMBERED.replace(b"line 12\n", b"LINE 12\n"))
    fresh = run("read_file", file_path="/a.txt", offset=10, limit=5)
    assert "12\tLINE 12" in fresh.content


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["read", "read", "read", "write"]),
        st.integers(1, 60),
        st.integers(1, 12),
        st.lists(st.sampled_from(["a", "bb", "é", "", "x" * 40, "a\r"]), max_size=50),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("kind", ["local", "objectstore"])
@settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=EDITS)
def test_reads_agree_with_a_toolkit_that_knows_nothing(
    kind: str, tmp_path: Path, steps: list[tuple[str, int, int, list[str]]]
) -> None:
    """Differential: a long-lived toolkit against a new one for every read, on one backend.

    Their answers are equal, but where the long-lived one says a range is unchanged,
    which must then be true.
    """
    h = Harness(kind, tmp_path / f"run{len(list(tmp_path.iterdir()))}")
    h.seed("/f.txt", b"first\n")
    shown: dict[tuple[int, int], str] = {}
    for action, offset, limit, lines in steps:
        if action == "write":
            h.change_behind_the_agents_back("/f.txt", "\n".join(lines).encode())
            continue
        args = {"file_path": "/f.txt", "offset": offset, "limit": limit}
        ours = h.call("read_file", **args)
        fresh = {t.name: t for t in FileToolkit(h.toolkit.backend).get_tools()}["read_file"]
        theirs = fresh.invoke(args)
        if str(ours.content).startswith("File unchanged since your last read"):
            assert shown[offset, limit] == theirs
        else:
            assert ours.content == theirs
            shown[offset, limit] = theirs


@pytest.mark.parametrize("kind", ["local", "objectstore"])
def test_parallel_reads_of_one_file_show_the_lines_they_name(kind: str, tmp_path: Path) -> None:
    """A model's parallel tool calls (tasks on one loop, or threads) share the line index."""
    h = Harness(kind, tmp_path)
    h.seed("/big.txt", b"".join(b"line %d\n" % n for n in range(1, 100_001)))
    read = h.tools["read_file"]
    offsets = [90_000, 30_000, 70_000, 99_990]

    async def at_once() -> list[str]:
        replies = [
            read.ainvoke({"file_path": "/big.txt", "offset": o, "limit": 1}) for o in offsets
        ]
        return list(await asyncio.gather(*replies))

    for offset, reply in zip(offsets, asyncio.run(at_once()), strict=True):
        assert reply.startswith(f"{offset}\tline {offset}\n"), reply
    h.seed("/big.txt", b"".join(b"row %d\n" % n for n in range(1, 100_001)))  # a new version
    with ThreadPoolExecutor(4) as pool:
        replies = pool.map(
            lambda o: read.invoke({"file_path": "/big.txt", "offset": o, "limit": 1}), offsets
        )
        for offset, reply in zip(offsets, replies, strict=True):
            assert reply.startswith(f"{offset}\trow {offset}\n"), reply
    last = read.invoke({"file_path": "/big.txt", "offset": 55_555, "limit": 1})
    assert last.startswith("55555\trow 55555\n")


@pytest.mark.parametrize("kind", ["local", "objectstore"])
def test_a_whole_read_over_the_cap_is_refused_after_a_window_too(kind: str, tmp_path: Path) -> None:
    h = Harness(kind, tmp_path, read_max_bytes=1000)
    h.seed("/big.txt", NUMBERED)
    assert h.call("read_file", file_path="/big.txt", offset=5, limit=2).status == "success"
    whole = h.call("read_file", file_path="/big.txt")
    assert whole.status == "error"
    assert "Read it in windows with offset and limit" in whole.content


def test_a_file_swapped_for_a_link_since_is_read_as_the_link_is(tmp_path: Path) -> None:
    """A link swapped in after a read: inside, its target is read; outside, it is refused."""
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    root.mkdir()
    (root / "a.txt").write_bytes(b"mine 1\nmine 2\n")
    (root / "b.txt").write_bytes(b"theirs 1\ntheirs 2\n")
    outside.write_bytes(b"secret 1\nsecret 2\n")
    read = {t.name: t for t in FileToolkit(LocalBackend(root)).get_tools()}["read_file"]
    assert read.invoke({"file_path": "/a.txt", "offset": 2, "limit": 1}).startswith("2\tmine 2")
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(root / "b.txt")
    inside = read.invoke({"file_path": "/a.txt", "offset": 2, "limit": 1})
    assert inside.startswith("2\ttheirs 2"), inside
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(outside)
    escaped = read.invoke({"file_path": "/a.txt", "offset": 1, "limit": 1})
    assert "secret" not in escaped
    assert str(tmp_path) not in escaped
    assert escaped.startswith("Error:"), escaped
