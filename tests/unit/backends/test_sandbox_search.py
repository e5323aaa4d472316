"""Glob and grep in a sandbox answer as on local disk (ripgrep there, or the engine there).

One fixed tree with what searches must get right (`.gitignore` at two levels, `.ignore`,
a negated rule, hidden files, a `.git` folder, a binary file, a long line, CRLF, a
symlinked folder) is searched on `LocalBackend` with ripgrep and on `SandboxBackend`
over a `sh -c` provider, with ripgrep in the sandbox, with this environment's uploaded
there, and with the engine; the answers must be equal, modification times included.
A glob or grep through the tools is one round trip, and a search path that is not a
folder inside the root gets the error a `stat` gives.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import FileToolkit
from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.search.contract import FileHits, GrepRequest, InvalidPattern
from tests.unit.backends.guards import HidePrefix
from tests.unit.backends.sandbox_double import ShellSandbox, path_with_ripgrep

TREE: dict[str, bytes] = {
    ".gitignore": b"*.log\nbuild/\n!keep.log\n",
    ".ignore": b"scratch.txt\n",
    ".env": b"needle=1\n",
    ".hidden/inner.py": b"# needle in a hidden folder\n",
    ".git/config": b"needle in git\n",
    "app.py": b"import os\n\ndef needle():\n    return 'Needle'\n",
    "debug.log": b"needle in an ignored log\n",
    "keep.log": b"needle kept by a negated rule\n",
    "build/out.py": b"needle built\n",
    "scratch.txt": b"needle scratch\n",
    "sub/.gitignore": b"local.txt\n",
    "sub/local.txt": b"needle local\n",
    "sub/deep/mod.py": b"x = 1\nneedle = 2\ny = 3\nneeedle = 4\n",
    "sub/crlf.txt": b"one\r\nneedle two\r\nthree\r\n",
    "blob.bin": b"needle\x00\x01\x02 binary",
    "long.txt": b"a" * 12_000 + b" needle at the end\nshort needle\n",
    "unicode/été.md": "naïve needle ☃\n".encode(),
}

REQUESTS: list[dict[str, Any]] = [
    {"pattern": "needle"},
    {"pattern": "needle", "mode": "content", "before": 1, "after": 1},
    {"pattern": "needle", "mode": "count", "ignore_case": True},
    {"pattern": "ne+dle", "regex": True, "mode": "content"},
    {"pattern": "needle", "globs": (("*.py",),)},
    {"pattern": "needle", "directory": "/sub", "mode": "content"},
    {"pattern": "needle", "directory": "/sub/deep/mod.py", "mode": "content"},
    {"pattern": "x = 1\nneedle", "regex": True, "multiline": True, "mode": "content"},
    {"pattern": "absent"},
]

GLOBS: list[tuple[str, tuple[tuple[str, ...], ...]]] = [
    ("/", ()),
    ("/", (("*.py",),)),
    ("/", (("**/*.{py,md}",),)),
    ("/sub", ()),
    ("/unicode", (("*.md",),)),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree") / "workspace"
    for name, data in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "linked").symlink_to(root / "sub")  # a linked folder is not entered
    stamp = time.time() - 1000
    for number, path in enumerate(sorted(root.rglob("*"))):
        if not path.is_symlink():
            time_ns = int((stamp + number) * 1e9) + 123_456_789
            os.utime(path, ns=(time_ns, time_ns))
    return root


@pytest.fixture(scope="module", params=["ripgrep", "uploaded", "engine"])
def sandbox(
    request: pytest.FixtureRequest, tree: Path, tmp_path_factory: pytest.TempPathFactory
) -> SandboxBackend:
    home = tmp_path_factory.mktemp("sandbox")
    path = (
        path_with_ripgrep(home / "bin")
        if request.param == "ripgrep"
        else ShellSandbox().env["PATH"]
    )
    backend = SandboxBackend(
        ShellSandbox(path=path),
        str(tree),
        helper_folder=str(home / "helper"),
        use_ripgrep=request.param != "engine",
    )
    backend.native_search()
    assert backend.searches_with_ripgrep == (request.param != "engine")
    if request.param == "uploaded":
        assert [p.name[:3] for p in (home / "helper").glob("rg-*")] == ["rg-"]
    return backend


def hits_of(backend: LocalBackend | SandboxBackend, request: GrepRequest) -> list[Any]:
    found: list[FileHits] = []
    search = backend.native_search()
    assert search is not None
    complete = search.grep(request, deadline=time.monotonic() + 60, sink=found.append)
    assert complete
    counted = request.mode != "files_with_matches"  # else a count is not part of the answer
    return sorted(
        (hits.path, hits.mtime, counted and hits.count, [vars_of(line) for line in hits.lines])
        for hits in found
    )


def vars_of(line: Any) -> tuple[Any, ...]:
    return (line.number, line.text, line.is_match, line.column)


@pytest.mark.parametrize("fields", REQUESTS, ids=lambda fields: repr(fields)[:60])
def test_grep_agrees_with_local_ripgrep(
    tree: Path, sandbox: SandboxBackend, fields: dict[str, Any]
) -> None:
    request = GrepRequest(**{"directory": "/", **fields})
    expected = hits_of(LocalBackend(tree), request)
    assert hits_of(sandbox, request) == expected
    if fields["pattern"] == "needle" and len(fields) == 1:  # the corpus means what it says
        assert [path for path, *_ in expected] == [
            "/.env",
            "/.hidden/inner.py",
            "/app.py",
            "/keep.log",
            "/long.txt",
            "/sub/crlf.txt",
            "/sub/deep/mod.py",
            "/unicode/été.md",
        ]


@pytest.mark.parametrize(("directory", "globs"), GLOBS)
def test_listing_agrees_with_local_ripgrep(
    tree: Path, sandbox: SandboxBackend, directory: str, globs: tuple[tuple[str, ...], ...]
) -> None:
    deadline = time.monotonic() + 60
    local = LocalBackend(tree).native_search()
    assert local is not None
    expected = local.list_files(directory, globs=globs, deadline=deadline)
    got = sandbox.native_search().list_files(directory, globs=globs, deadline=deadline)
    assert got.complete
    assert sorted(got.files, key=lambda f: f.path) == sorted(expected.files, key=lambda f: f.path)
    assert expected.files


def test_a_bad_regex_is_the_same_error(sandbox: SandboxBackend) -> None:
    with pytest.raises(InvalidPattern):
        hits_of(sandbox, GrepRequest(pattern="[", directory="/", regex=True))


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep", {"pattern": "needle", "path": "/sub"}),
        ("grep", {"pattern": "needle", "output_mode": "content"}),
        ("glob", {"pattern": "**/*.py"}),
    ],
)
def test_a_search_through_the_tools_is_one_round_trip(
    tree: Path, sandbox: SandboxBackend, tool: str, args: dict[str, Any]
) -> None:
    provider = sandbox.transport.sandbox
    assert isinstance(provider, ShellSandbox)
    found = {t.name: t for t in FileToolkit(sandbox).get_tools()}[tool]
    local = {t.name: t for t in FileToolkit(LocalBackend(tree)).get_tools()}[tool]
    before = provider.calls["execute"]
    text = found.invoke(args)
    assert provider.calls["execute"] - before == 1
    assert text == local.invoke(args)


def _wrapped(backend: Backend, wrapper: str, empty: Path) -> Backend:
    """`backend` behind a permission guard, or mounted at `/repo/` of a composite."""
    if wrapper == "guarded":
        return GuardedBackend(backend, lambda _runtime: HidePrefix("mod")).bind(None)
    return CompositeBackend(LocalBackend(empty), {"/repo/": backend})


@pytest.mark.parametrize("wrapper", ["guarded", "mounted"])
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep", {"pattern": "needle", "path": "/sub", "output_mode": "content"}),
        ("glob", {"pattern": "**/*.py", "path": "/sub"}),
        ("grep", {"pattern": "needle", "path": "/missing"}),
        ("glob", {"pattern": "*", "path": "/app.py"}),
    ],
)
def test_a_search_through_a_guard_or_a_mount_keeps_its_round_trips_and_answers_as_local_disk(
    tree: Path,
    sandbox: SandboxBackend,
    tmp_path: Path,
    wrapper: str,
    tool: str,
    args: dict[str, Any],
) -> None:
    """The wrappers pass on that the sandbox's search checks its own root (no `stat` first).

    A guard resolves the path once per call (links followed in the sandbox) to check
    it: one round trip more, not one per look at the search's layout.
    """
    if wrapper == "mounted":
        args = {**args, "path": "/repo" + args["path"]}
    provider = sandbox.transport.sandbox
    assert isinstance(provider, ShellSandbox)
    found = {t.name: t for t in FileToolkit(_wrapped(sandbox, wrapper, tmp_path)).get_tools()}
    local = {
        t.name: t for t in FileToolkit(_wrapped(LocalBackend(tree), wrapper, tmp_path)).get_tools()
    }
    before = provider.calls["execute"]
    text = found[tool].invoke(args)
    if not text.startswith("Error:"):  # an error may ask more to say what is wrong
        assert provider.calls["execute"] - before == (2 if wrapper == "guarded" else 1)
    assert text.replace("sandbox backend", "local backend") == local[tool].invoke(args)
    assert "/repo/" in text or wrapper != "mounted"  # errors and hits named outward


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep", {"pattern": "needle", "path": "/missing"}),
        ("grep", {"pattern": "needle", "path": "/linked"}),
        ("grep", {"pattern": "needle", "path": "/app.py"}),
        ("glob", {"pattern": "*", "path": "/app.py"}),
        ("glob", {"pattern": "*", "path": "/missing/deeper"}),
        ("glob", {"pattern": "*.py", "path": "/linked"}),
    ],
)
def test_a_path_that_is_no_folder_in_the_root_answers_as_on_local_disk(
    tree: Path, sandbox: SandboxBackend, tool: str, args: dict[str, Any]
) -> None:
    found = {t.name: t for t in FileToolkit(sandbox).get_tools()}[tool]
    local = {t.name: t for t in FileToolkit(LocalBackend(tree)).get_tools()}[tool]
    assert found.invoke(args) == local.invoke(args)


def test_a_search_past_its_deadline_returns_part_of_the_answer_and_says_so(
    sandbox: SandboxBackend,
) -> None:
    request = GrepRequest(pattern="needle", directory="/", mode="content")
    whole = hits_of(sandbox, request)
    found: list[FileHits] = []
    search = sandbox.native_search()
    complete = search.grep(request, deadline=time.monotonic() - 1, sink=found.append)
    listing = search.list_files("/", globs=(), deadline=time.monotonic() - 1)
    got = sorted((h.path, h.mtime, h.count, [vars_of(line) for line in h.lines]) for h in found)
    assert complete is False or got == whole
    assert all(entry in whole for entry in got)  # what came before the deadline is right
    assert listing.complete is False or listing.files


class _RefusingRipgrep(ShellSandbox):
    """A provider whose upload of ripgrep fails (as one that refuses large files)."""

    def upload_files(self, files: list[tuple[str, bytes]]) -> Any:
        if any("/rg-" in path for path, _ in files):
            raise OSError("the provider refused the upload")
        return super().upload_files(files)


def test_a_provider_that_cannot_take_ripgrep_searches_with_the_engine(
    tree: Path, tmp_path: Path
) -> None:
    provider = _RefusingRipgrep()
    backend = SandboxBackend(provider, str(tree), helper_folder=str(tmp_path / "helper"))
    request = GrepRequest(pattern="needle", directory="/", mode="content")
    assert hits_of(backend, request) == hits_of(LocalBackend(tree), request)
    assert not backend.searches_with_ripgrep
    assert [p.name.endswith(".bad") for p in (tmp_path / "helper").glob("rg-*")] == [True]


def test_an_rg_that_outlives_the_deadline_is_stopped_there(tree: Path, tmp_path: Path) -> None:
    slow = tmp_path / "bin" / "rg"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nexec sleep 60\n")
    slow.chmod(0o755)
    provider = ShellSandbox(path=f"{slow.parent}:{ShellSandbox().env['PATH']}")
    backend = SandboxBackend(provider, str(tree), helper_folder=str(tmp_path / "helper"))
    search = backend.native_search()
    started = time.monotonic()
    request = GrepRequest(pattern="needle", directory="/")
    complete = search.grep(request, deadline=started + 1.5, sink=lambda _hits: None)
    listing = search.list_files("/", globs=(), deadline=time.monotonic() + 1)
    assert (complete, listing.complete, listing.files) == (False, False, [])
    assert time.monotonic() - started < 20  # not the 60 s the fake rg sleeps, twice
