"""glob on every backend (local with and without ripgrep, state), sync and async."""

from __future__ import annotations

import os
import time
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from langchain_fstools import CompositeBackend, FileToolkit, LocalBackend, StoreBackend
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import BACKENDS, Harness

TREE = {
    "/src/app.py": b"x",
    "/src/pkg/mod.py": b"x",
    "/src/pkg/mod.pyi": b"x",
    "/src/web/app.ts": b"x",
    "/src/web/app.tsx": b"x",
    "/README.md": b"x",
    "/.hidden/conf.py": b"x",
    "/build/out.py": b"x",
    "/logs/a.log": b"x",
    "/.gitignore": b"build/\n*.log\nnode_modules/\n",
    "/.git/HEAD": b"ref",
    "/node_modules/dep/index.js": b"x",
    "/src/.ignore": b"pkg/*.pyi\n",
}


def seed(h: Harness) -> None:
    for path, data in TREE.items():
        h.seed(path, data)


def test_name_patterns_match_at_any_depth_and_respect_ignores(h: Harness, run: Run) -> None:
    seed(h)
    assert sorted(run("glob", pattern="*.py").content.splitlines()) == [
        "/.hidden/conf.py",
        "/src/app.py",
        "/src/pkg/mod.py",
    ]


def test_path_patterns_braces_and_search_path(h: Harness, run: Run) -> None:
    seed(h)
    assert sorted(run("glob", pattern="src/**/*.{ts,tsx}").content.splitlines()) == [
        "/src/web/app.ts",
        "/src/web/app.tsx",
    ]
    assert sorted(run("glob", pattern="web/*", path="/src").content.splitlines()) == [
        "/src/web/app.ts",
        "/src/web/app.tsx",
    ]


def test_vcs_directories_are_never_listed(h: Harness, run: Run) -> None:
    seed(h)
    listed = run("glob", pattern="**/*").content.splitlines()
    assert "/.git/HEAD" not in listed
    assert "/.gitignore" in listed
    assert not [p for p in listed if p.startswith(("/build", "/logs", "/node_modules"))]


def test_newest_first_then_by_path(tmp_path: Path) -> None:
    for kind in BACKENDS:
        if kind in {"state", "store", "objectstore"}:  # times are set on disk below
            continue
        h = Harness(kind, tmp_path / kind)
        for index, name in enumerate(["old.txt", "new.txt", "mid.txt", "tie.txt"]):
            h.seed(f"/{name}", b"x")
            stamp = 1_000_000 + {0: 1, 1: 3, 2: 2, 3: 2}[index]
            os.utime(h.root / name, (stamp, stamp))
        assert h.call("glob", pattern="*.txt").content.splitlines() == [
            "/new.txt",
            "/mid.txt",
            "/tie.txt",
            "/old.txt",
        ], kind


def test_truncation_keeps_the_newest_and_breaks_ties_at_the_cut_by_path(tmp_path: Path) -> None:
    stamps = {"e.txt": 1, "d.txt": 3, "a.txt": 5, "c.txt": 3, "b.txt": 3}
    for kind in ["local", "local-python", "composite"]:
        h = Harness(kind, tmp_path / kind, glob_limit=2)
        for name, stamp in stamps.items():
            h.seed(f"/{name}", b"x")
            os.utime(h.root / name, (1_000_000 + stamp, 1_000_000 + stamp))
        lines = h.call("glob", pattern="*.txt").content.splitlines()
        assert lines[:2] == ["/a.txt", "/b.txt"], kind
        assert "of 5 files" in lines[2], kind


def test_truncated_at_limit_with_notice(tmp_path: Path) -> None:
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind, glob_limit=3)
        for n in range(5):
            h.seed(f"/f{n}.txt", b"x")
        lines = h.call("glob", pattern="*.txt").content.splitlines()
        assert len(lines) == 4
        assert lines[-1].startswith(
            "(Results are truncated: showing the 3 most recently modified of 5 files."
        )


def test_no_match_and_bad_input(h: Harness, run: Run) -> None:
    seed(h)
    assert run("glob", pattern="*.nothing").content == "No files found matching '*.nothing' in /."
    assert run("glob", pattern="*.py", path="/src/app.py").status == "error"
    assert run("glob", pattern="*.py", path="/missing").status == "error"
    assert run("glob", pattern="*.py", path="/../x").status == "error"
    assert run("glob", pattern="").status == "error"
    assert run("glob", pattern="[abc").status == "error"


def test_deadline_returns_partial_result_and_says_so(tmp_path: Path) -> None:
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind, search_timeout=1e-9)
        h.seed("/a.txt", b"x")
        message = h.call("glob", pattern="*.txt")
        assert message.status == "success"
        assert "stopped at its 1e-09 s deadline" in message.content, kind


def test_nested_mounts_share_one_limit_and_order(tmp_path: Path) -> None:
    store = InMemoryStore()
    backend = CompositeBackend(
        LocalBackend(tmp_path),
        {
            "/mem/": StoreBackend(store, namespace=("shared",)),
            "/mem/user/": StoreBackend(store, namespace=("user",)),
        },
    )
    tools = {t.name: t for t in FileToolkit(backend, glob_limit=3).get_tools()}
    for n, path in enumerate(["/a.txt", "/mem/b.txt", "/mem/user/c.txt", "/mem/user/d/e.txt"]):
        backend.write_bytes(path, b"needle\n")
        time.sleep(0.01)  # distinct modification times
        if path == "/a.txt":
            os.utime(tmp_path / "a.txt", (1_000_000 + n, 1_000_000 + n))
    listed = str(tools["glob"].invoke({"pattern": "**/*.txt"})).splitlines()
    assert listed[:3] == ["/mem/user/d/e.txt", "/mem/user/c.txt", "/mem/b.txt"]
    assert listed[3].startswith("(Results are truncated: showing the 3 most recently modified of 4")
    found = str(tools["grep"].invoke({"pattern": "needle", "path": "/mem"})).splitlines()
    assert found[0] == "Found 3 files"
    assert sorted(found[1:]) == ["/mem/b.txt", "/mem/user/c.txt", "/mem/user/d/e.txt"]


def test_ripgrep_lists_only_the_newest_when_asked_and_counts_all(tmp_path: Path) -> None:
    stamps = {"e.txt": 1, "d.txt": 3, "a.txt": 5, "c.txt": 3, "b.txt": 3}
    for name, stamp in stamps.items():
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (1_000_000 + stamp, 1_000_000 + stamp))
    native = LocalBackend(tmp_path).native_search()
    assert native is not None
    deadline = time.monotonic() + 20
    listing = native.list_files("/", globs=(("*.txt",),), deadline=deadline, newest=2)
    assert sorted(f.path for f in listing.files) == ["/a.txt", "/b.txt", "/c.txt", "/d.txt"]
    assert listing.count == 5  # ties at the cut are kept; the rest is only counted
    whole = native.list_files("/", globs=(("*.txt",),), deadline=deadline)
    assert len(whole.files) == whole.count == 5


def test_a_mount_shadows_the_disk_below_it_in_a_truncated_glob(tmp_path: Path) -> None:
    """The newest files on disk sit under a mount point: they must not fill the top."""
    h = Harness("composite", tmp_path, glob_limit=2)
    stamps = {"docs/new1.txt": 9, "docs/new2.txt": 8, "sub/docs/kept.txt": 5, "a.txt": 3}
    stamps |= {"b.txt": 1}
    for name, stamp in stamps.items():
        (h.root / name).parent.mkdir(parents=True, exist_ok=True)
        (h.root / name).write_bytes(b"x")
        os.utime(h.root / name, (1_000_000 + stamp, 1_000_000 + stamp))
    lines = h.call("glob", pattern="*.txt").content.splitlines()
    assert lines[:2] == ["/sub/docs/kept.txt", "/a.txt"]
    assert "showing the 2 most recently modified of 3 files" in lines[2]


def test_ripgrep_leaves_out_excluded_directories_spelled_literally(tmp_path: Path) -> None:
    for name in ["we[ird]/a.txt", "weird/b.txt", "x/we[ird]/c.txt", "d.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    native = LocalBackend(tmp_path).native_search()
    assert native is not None
    listing = native.list_files(
        "/", globs=(("*.txt",),), deadline=time.monotonic() + 20, excluded=("/we[ird]",)
    )
    assert sorted(f.path for f in listing.files) == [
        "/d.txt",
        "/weird/b.txt",
        "/x/we[ird]/c.txt",
    ]
