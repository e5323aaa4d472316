"""Search edges: hostile patterns and odd workspaces.

Nothing leaks a host path, nothing outlives `search_timeout`, and every engine
(ripgrep, the pure-Python engine on local disk, graph state, a store, a composite
holding the same tree) gives the same answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_fstools import CompositeBackend, LocalBackend, StateBackend
from langchain_fstools.errors import InvalidArgument
from langchain_fstools.middleware.filesystem import FilesystemMiddleware
from langchain_fstools.search import ripgrep
from langchain_fstools.search.contract import GrepRequest
from langchain_fstools.search.filetypes import globs_for
from langchain_fstools.search.rg_types import RG_TYPES
from tests.unit.tools import harness
from tests.unit.tools.harness import BACKENDS, Harness

TREE = [
    "a.py",
    "b.py",
    "c.py",
    "probe.py",
    "aprobe.py",
    "top.md",
    "docs/a.py",
    "docs/note.md",
    "docs/nested/file.py",
    "docs/nested/deep/x.md",
    "odd/b.py",
    "src/a.py",
    "src/x/y/z.md",
    "src/q/x/w.md",
    "src/[x].py",
]
"""In the composite, `docs/` and `odd/` live in graph state, the rest on disk."""

GLOBS = [
    "*.py",
    "{a,{b,c}}.py",
    "{a,}probe.py",
    "*.{py,md}",
    "**/{a,{b,}}.py",
    "[ab].py",
    "[!a].py",
    "?.py",
    "*probe*",
    "**",
    "**/*.py",
    "**/nested/*.py",
    "docs/**",
    "docs/**/*.py",
    "docs/**/x.md",
    "src/**/x/**/*.md",
    "d*/*.py",
    "docs/*/file.py",
    "/*.py",
    "/docs/*.py",
    "/*.md",
    "/docs/nested/**",
    "src/\\[x].py",
]

EXPECTED = {
    "{a,{b,c}}.py": {"/a.py", "/b.py", "/c.py", "/docs/a.py", "/odd/b.py", "/src/a.py"},
    "{a,}probe.py": {"/aprobe.py", "/probe.py"},
    "/docs/*.py": {"/docs/a.py"},
    "/*.md": {"/top.md"},
    "/*.py": {"/a.py", "/b.py", "/c.py", "/probe.py", "/aprobe.py"},
    "docs/**/x.md": {"/docs/nested/deep/x.md"},
    "src/\\[x].py": {"/src/[x].py"},
}

ENGINES = ["local", "local-python", "state", "composite"]


def _seeded(kind: str, tmp_path: Path, **settings: Any) -> Harness:
    h = Harness(kind, tmp_path / kind, glob_limit=1000, **settings)
    for relative in TREE:
        h.seed("/" + relative, b"needle\n")
    return h


def _lines(text: str) -> set[str]:
    return {line for line in text.split("\n") if line.startswith("/")}


@pytest.fixture(scope="module")
def harnesses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Harness]:
    root = tmp_path_factory.mktemp("corpus")
    return {kind: _seeded(kind, root) for kind in ENGINES}


@pytest.mark.parametrize("pattern", GLOBS)
def test_glob_corpus_same_on_every_engine(harnesses: dict[str, Harness], pattern: str) -> None:
    answers = {kind: h.call("glob", pattern=pattern).content for kind, h in harnesses.items()}
    found = {kind: _lines(text) for kind, text in answers.items()}
    assert len({frozenset(f) for f in found.values()}) == 1, found
    assert "Error" not in answers["local"], answers
    if pattern in EXPECTED:
        assert found["local"] == EXPECTED[pattern]


@pytest.mark.parametrize("pattern", GLOBS)
def test_grep_glob_corpus_same_on_every_engine(harnesses: dict[str, Harness], pattern: str) -> None:
    found = {
        kind: _lines(h.call("grep", pattern="needle", glob=pattern).content)
        for kind, h in harnesses.items()
    }
    globbed = _lines(harnesses["local"].call("glob", pattern=pattern).content)
    assert all(f == globbed for f in found.values()), (globbed, found)


def test_ripgrep_reports_a_glob_it_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rg's exit code 2 is an error, not an empty listing (and grep blames the glob)."""
    executable = ripgrep.find_ripgrep()
    assert executable is not None
    (tmp_path / "a.py").write_text("needle\n")
    search = ripgrep.RipgrepSearch(executable, lambda _virtual: tmp_path)
    monkeypatch.setattr(ripgrep, "type_filter", lambda _globs: ["--glob", "{a,{b}}.py"])
    with pytest.raises(InvalidArgument) as listing:
        search.list_files("/", globs=(), deadline=time.monotonic() + 10)
    assert listing.value.argument == "glob"
    assert "nested alternate groups" in listing.value.reason
    with pytest.raises(InvalidArgument) as grep:
        search.grep(GrepRequest("needle", "/"), deadline=time.monotonic() + 10, sink=print)
    assert grep.value.argument == "glob"
    assert str(tmp_path) not in grep.value.reason


def test_type_filter_never_hands_rg_a_glob_it_reads_otherwise() -> None:
    assert ripgrep.type_filter((("{a,{b,c}}.py",),)) == [
        *("--type-add", "fstoolsfilter:a.py", "--type-add", "fstoolsfilter:b.py"),
        *("--type-add", "fstoolsfilter:c.py", "--type", "fstoolsfilter"),
    ]
    assert "fstoolsfilter:probe.py" in ripgrep.type_filter((("{a,}probe.py",),))
    assert ripgrep.type_filter((("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}",),)) == []


# ----- no host path in any reply ---------------------------------------------------------


def _host_spellings(h: Harness) -> list[str]:
    spellings = [
        str(h.root),
        os.path.realpath(h.root),
        tempfile.gettempdir(),
        str(Path.home()),
        sys.prefix,
        str(ripgrep.find_ripgrep()),
    ]
    return [s for s in spellings if s not in ("", "/")]


@pytest.mark.parametrize("kind", [*BACKENDS])
def test_no_host_path_in_search_replies(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path)
    h.seed("/a.py", b"needle\n")
    special: list[str] = []
    if kind.startswith("local") or kind == "composite":
        os.mkfifo(h.root / "fifo")
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(h.root / "sock"))
        (h.root / "null").symlink_to("/dev/null")
        special = ["/fifo", "/sock", "/null"]
    huge = "x" * 200_000
    calls: list[tuple[str, dict[str, Any]]] = [
        ("grep", {"pattern": huge}),
        ("grep", {"pattern": huge, "regex": True}),
        ("grep", {"pattern": "needle", "glob": huge}),
        ("grep", {"pattern": "needle", "glob": "{" * 50_000}),
        ("glob", {"pattern": huge}),
        ("glob", {"pattern": "*" + huge + "/**"}),
        ("ls", {"path": "/" + "d/" * 30_000}),
        ("grep", {"pattern": "needle", "path": "/dev/null"}),
        ("glob", {"pattern": "*", "path": "/dev"}),
        ("ls", {"path": "/dev/zero"}),
        ("grep", {"pattern": "needle", "path": "/../../etc"}),
    ]
    for path in special:
        calls += [
            ("grep", {"pattern": "needle", "path": path}),
            ("glob", {"pattern": "*", "path": path}),
            ("ls", {"path": path}),
        ]
    for name, args in calls:
        reply = h.call(name, **args).content
        assert "failed unexpectedly" not in reply, (name, args, reply[:300])
        for spelling in _host_spellings(h):
            assert spelling not in reply, (name, {k: v[:40] for k, v in args.items()}, reply)
    if special:
        assert h.call("grep", pattern="n", path="/fifo").content == (
            "Error: /fifo is a FIFO, not a regular file; it cannot be read or written."
        )
        assert "/a.py" in h.call("grep", pattern="needle").content  # special files skipped


# ----- deadlines ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["state", "store", "local-python", "local"])
def test_backtracking_regex_is_linear(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path, search_timeout=5)
    h.seed("/evil.txt", b"a" * 40 + b"!\n" + b"aaaa\n")
    started = time.monotonic()
    reply = h.call("grep", pattern="(a+)+$", regex=True, output_mode="content").content
    assert time.monotonic() - started < 3
    assert reply == "/evil.txt:2:aaaa"


@pytest.mark.parametrize("kind", ["state", "local-python", "local"])
def test_constructs_re2_lacks_say_what_to_do(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path)
    h.seed("/a.txt", b"abab\n")
    look = h.call("grep", pattern="a(?=b)", regex=True).content
    assert look == (
        "Error: invalid regex: 'a(?=b)' does not compile as a regular expression:"
        " look-ahead and look-behind are not supported; match the surrounding text as part"
        " of the pattern instead, or search for it literally with regex=false."
    )
    back = h.call("grep", pattern=r"(ab)\1", regex=True).content
    assert back.startswith("Error: invalid regex:"), back
    assert "backreference" in back


def test_unicode_classes_match_like_ripgrep(tmp_path: Path) -> None:
    answers = set()
    for kind in ["local", "state"]:
        h = Harness(kind, tmp_path / kind)
        h.seed("/u.txt", "café au lait\n١٢٣\nplain\n".encode())
        answers.add(
            h.call("grep", pattern=r"caf\w\s|^\d+$", regex=True, output_mode="content").content
        )
    assert answers == {"/u.txt:1:café au lait\n/u.txt:2:١٢٣"}


class SlowStore(InMemoryStore):
    """An in-memory store whose queries take `delay` seconds."""

    delay = 0.0

    def batch(self, ops: Any) -> Any:
        time.sleep(self.delay)
        return super().batch(ops)

    async def abatch(self, ops: Any) -> Any:
        await asyncio.sleep(self.delay)
        return await super().abatch(ops)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_slow_store_stops_at_the_deadline(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "InMemoryStore", SlowStore)
    h = Harness("store", tmp_path, search_timeout=1)
    h.seed("/a.txt", b"needle\n")
    h.toolkit.backend.store.delay = 4  # type: ignore[attr-defined]
    started = time.monotonic()
    for name, args in [("grep", {"pattern": "needle"}), ("glob", {"pattern": "*.txt"})]:
        message = h.call(name, **args) if mode == "sync" else asyncio.run(h.acall(name, **args))
        assert "deadline" in message.content, message.content
    assert time.monotonic() - started < 4.5  # two calls, each stopped near 1 s


# ----- unreadable entries ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["local-python", "state"])
def test_python_engine_skips_what_it_cannot_read(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(kind, tmp_path)
    for path in ["/ok/a.txt", "/locked/b.txt", "/gone.txt", "/z.txt"]:
        h.seed(path, b"needle\n")
    backend_class = type(h.toolkit.backend.bind(h.runtime()))
    list_dir, read_bytes = backend_class.list_dir, backend_class.read_bytes

    def refusing_list_dir(self: Any, path: str) -> Any:
        if path == "/locked":
            raise PermissionError(13, "Permission denied", path)
        return list_dir(self, path)

    def vanishing_read(self: Any, path: str, *args: Any) -> Any:
        if path == "/gone.txt":
            raise FileNotFoundError(2, "No such file or directory", path)
        return read_bytes(self, path, *args)

    monkeypatch.setattr(backend_class, "list_dir", refusing_list_dir)
    monkeypatch.setattr(backend_class, "read_bytes", vanishing_read)
    grep = h.call("grep", pattern="needle").content
    assert _lines(grep) == {"/ok/a.txt", "/z.txt"}
    assert "2 unreadable entries" in grep
    glob = h.call("glob", pattern="*.txt").content
    assert _lines(glob) == {"/ok/a.txt", "/gone.txt", "/z.txt"}
    assert "1 unreadable entry (" in glob


# ----- composite ---------------------------------------------------------------------------


def test_composite_keeps_path_globs_anchored(tmp_path: Path) -> None:
    h = Harness("composite", tmp_path)
    for path in ["/docs/a.py", "/docs/nested/file.py", "/docs/src/b.py", "/docs/note.md"]:
        h.seed(path, b"needle\n")
    h.seed("/top.md", b"needle\n")
    assert _lines(h.call("glob", pattern="/docs/*.py").content) == {"/docs/a.py"}
    assert _lines(h.call("glob", pattern="/*.md").content) == {"/top.md"}
    assert _lines(h.call("grep", pattern="needle", glob="/*.md").content) == {"/top.md"}
    assert _lines(h.call("grep", pattern="needle", glob="/docs/*.py").content) == {"/docs/a.py"}


def test_own_route_for_large_tool_results_is_honoured(tmp_path: Path) -> None:
    mine = LocalBackend(tmp_path)
    middleware = FilesystemMiddleware(
        backend=CompositeBackend(StateBackend(), {"/large_tool_results/": mine})
    )
    storage = middleware.storage
    assert isinstance(storage, CompositeBackend)
    assert set(storage.routes) == {"/large_tool_results"}
    storage.write_bytes("/large_tool_results/call_1", b"evicted")
    assert (tmp_path / "call_1").read_bytes() == b"evicted"  # re-rooted at the mount


# ----- file types --------------------------------------------------------------------------


def test_type_table_equals_current_ripgrep() -> None:
    executable = ripgrep.find_ripgrep()
    assert executable is not None
    listing = subprocess.run(
        [executable, "--no-config", "--type-list"], capture_output=True, check=True, text=True
    ).stdout
    types = {
        name.strip(): tuple(g.strip() for g in globs.split(","))
        for name, _, globs in (line.partition(":") for line in listing.splitlines())
    }
    assert types == RG_TYPES
    assert globs_for("Python") == RG_TYPES["py"]


@pytest.mark.parametrize("kind", BACKENDS)
def test_ripgrep_types_on_every_backend(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path)
    for path in ["/x.lua", "/deploy/Dockerfile", "/ui/App.vue", "/other.txt"]:
        h.seed(path, b"needle\n")
    for name, expected in [("lua", "/x.lua"), ("docker", "/deploy/Dockerfile")]:
        assert _lines(h.call("grep", pattern="needle", type=name).content) == {expected}
    assert _lines(h.call("grep", pattern="needle", type="vue").content) == {"/ui/App.vue"}
    unknown = h.call("grep", pattern="needle", type="nosuchtype").content
    assert unknown.startswith("Error: invalid type: unknown type 'nosuchtype'")


# ----- patterns that cannot be searched as written -----------------------------------------


@pytest.mark.parametrize("kind", ["local", "state"])
def test_literal_alternation_that_is_no_regex_says_how(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path)
    h.seed("/m.py", b"class A:\n    def __init__(self):\n        pass\n")
    reply = h.call("grep", pattern="def __init__(self|def __new__(cls").content
    assert reply.startswith(
        "No literal match for 'def __init__(self|def __new__(cls', and it is not a valid"
        " regular expression. To search for any of its alternatives, set regex=true"
    ), reply
    suggestion = r"def __init__\(self|def __new__\(cls"
    assert repr(suggestion) in reply
    found = h.call("grep", pattern=suggestion, regex=True, output_mode="content").content
    assert found == "/m.py:2:    def __init__(self):"


@pytest.mark.parametrize("kind", ["local", "state"])
def test_nul_and_lone_surrogate_say_what_is_wrong(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path)
    h.seed("/a.txt", b"ab\n")
    nul = h.call("grep", pattern="a\0b").content
    assert nul.startswith("Error: invalid pattern: it contains a NUL character"), nul
    for name, args, argument in [
        ("grep", {"pattern": "a\udc80"}, "pattern"),
        ("grep", {"pattern": "a", "glob": "*\udc80"}, "glob"),
        ("glob", {"pattern": "*\udc80"}, "pattern"),
    ]:
        reply = h.call(name, **args).content
        assert reply.startswith("Error: invalid arguments"), reply
        assert f"{argument} contains a lone surrogate" in reply, reply


@pytest.mark.parametrize("prints", [b"", b"a.txt\\0"], ids=["silent", "printed-one"])
def test_ripgrep_that_hangs_is_killed_at_the_deadline_with_what_it_printed(
    tmp_path: Path, prints: bytes
) -> None:
    """No timer thread watches rg: reading its output waits only for the time left."""
    (tmp_path / "a.txt").write_text("needle\n")
    stub = tmp_path / "rg-stub"
    stub.write_text(f"#!/bin/sh\nprintf '{prints.decode()}'\nexec sleep 30\n")
    stub.chmod(0o755)
    search = ripgrep.RipgrepSearch(str(stub), lambda _virtual: tmp_path)
    started = time.monotonic()
    listing = search.list_files("/", globs=(), deadline=started + 0.3)
    newest = search.list_files("/", globs=(), deadline=time.monotonic() + 0.3, newest=5)
    found: list[str] = []
    complete = search.grep(
        GrepRequest("needle", "/"),
        deadline=time.monotonic() + 0.3,
        sink=lambda hits: found.append(hits.path),
    )
    assert time.monotonic() - started < 10  # not the stub's 30 s
    assert (listing.complete, newest.complete, complete) == (False, False, False)
    expected = ["/a.txt"] if prints else []
    assert [f.path for f in listing.files] == [f.path for f in newest.files] == expected
    assert found == expected


def test_ripgrep_json_lines_read_before_a_hang_are_kept_at_the_deadline(tmp_path: Path) -> None:
    """grep's content mode reads rg's output line by line through the same deadline."""
    (tmp_path / "a.txt").write_text("needle\n")
    records = [
        {"type": "begin", "data": {"path": {"text": "a.txt"}}},
        {
            "type": "match",
            "data": {
                "path": {"text": "a.txt"},
                "lines": {"text": "needle\n"},
                "line_number": 1,
                "submatches": [{"start": 0, "end": 6}],
            },
        },
        {"type": "end", "data": {"path": {"text": "a.txt"}}},
    ]
    output = tmp_path / "rg-output"
    output.write_text("".join(json.dumps(record) + "\n" for record in records))
    stub = tmp_path / "rg-stub"
    stub.write_text(f"#!/bin/sh\ncat '{output}'\nexec sleep 30\n")
    stub.chmod(0o755)
    search = ripgrep.RipgrepSearch(str(stub), lambda _virtual: tmp_path)
    found: list[tuple[str, list[int]]] = []
    started = time.monotonic()
    complete = search.grep(
        GrepRequest("needle", "/", mode="content"),
        deadline=started + 0.3,
        sink=lambda hits: found.append((hits.path, [hit.number for hit in hits.lines])),
    )
    assert time.monotonic() - started < 10  # not the stub's 30 s
    assert (complete, found) == (False, [("/a.txt", [1])])
