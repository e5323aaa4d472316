"""LocalBackend never reaches outside its root, and never says where the root is."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.backends import beneath
from langchain_fstools.errors import InvalidPath, OutsideRoot
from langchain_fstools.tools.toolkit import FileToolkit


@pytest.fixture(autouse=True, params=["openat2", "walk"])
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every case twice: with `openat2`'s one-call fast path, and walking every component."""
    if request.param == "walk":
        monkeypatch.setattr(beneath, "open_directory_beneath", lambda _directory, _path: None)
    return str(request.param)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A root and, beside it, an outside directory holding a secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "inside.txt").write_text("inside\n")
    return root, outside


Setup = Callable[[Path, Path], str]


def plain(path: str) -> Setup:
    return lambda root, outside: path


def link_file_out(root: Path, outside: Path) -> str:
    (root / "link").symlink_to(outside / "secret.txt")
    return "/link"


def link_dir_out(root: Path, outside: Path) -> str:
    (root / "dirlink").symlink_to(outside)
    return "/dirlink/secret.txt"


def link_grandparent_out(root: Path, outside: Path) -> str:
    (outside / "deep").mkdir()
    (outside / "deep" / "f.txt").write_text("x")
    (root / "a").mkdir()
    (root / "a" / "up").symlink_to(outside)
    return "/a/up/deep/f.txt"


def dangling_out(root: Path, outside: Path) -> str:
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    return "/dangling"


def chain_in_in_out(root: Path, outside: Path) -> str:
    (root / "hop2").symlink_to(outside / "secret.txt")
    (root / "hop1").symlink_to(root / "hop2")
    return "/hop1"


def relative_link_out(root: Path, outside: Path) -> str:
    (root / "rel").symlink_to(Path("..") / "outside" / "secret.txt")
    return "/rel"


def link_to_root_parent(root: Path, outside: Path) -> str:
    (root / "parent").symlink_to(root.parent)
    return "/parent/outside/secret.txt"


def link_to_dev(root: Path, outside: Path) -> str:
    (root / "zero").symlink_to("/dev/zero")
    return "/zero"


def link_to_etc(root: Path, outside: Path) -> str:
    (root / "etc").symlink_to("/etc")
    return "/etc/hostname"


ESCAPES: dict[str, Setup] = {
    "dotdot": plain("../outside/secret.txt"),
    "dotdot-absolute": plain("/../../outside/secret.txt"),
    "dotdot-after-dir": plain("a/../../outside/secret.txt"),
    "dot-then-dotdot": plain("/./../outside/secret.txt"),
    "many-dotdots": plain("/" + "../" * 30 + "etc/passwd"),
    "symlink-file": link_file_out,
    "symlink-dir": link_dir_out,
    "symlinked-grandparent": link_grandparent_out,
    "dangling-symlink": dangling_out,
    "symlink-chain": chain_in_in_out,
    "relative-symlink": relative_link_out,
    "symlink-to-root-parent": link_to_root_parent,
    "symlink-to-device": link_to_dev,
    "symlink-to-etc": link_to_etc,
    "home": plain("~/.bashrc"),
    "home-user": plain("~root/.ssh/id_rsa"),
    "nul-byte": plain("/inside.txt\x00/../../outside/secret.txt"),
    "unc-slashes": plain("//host/share/secret.txt"),
    "unc-backslashes": plain("\\\\host\\share\\secret.txt"),
    "backslash-dotdot": plain("..\\outside\\secret.txt"),
    "drive-letter": plain("C:\\Windows\\win.ini"),
    "overlong-name": plain("/" + "n" * 300),
    "overlong-path": plain("/" + "/".join(["d" * 200] * 30)),
}


@pytest.mark.parametrize("setup", ESCAPES.values(), ids=ESCAPES.keys())
@pytest.mark.parametrize("operation", ["stat", "read", "write", "list", "mkdir", "delete"])
def test_escape_is_refused(world: tuple[Path, Path], setup: Setup, operation: str) -> None:
    root, outside = world
    path = setup(root, outside)
    backend = LocalBackend(root)
    before = sorted(p.name for p in outside.rglob("*"))
    actions = {
        "stat": lambda: backend.stat(path),
        "read": lambda: backend.read_bytes(path),
        "write": lambda: backend.write_bytes(path, b"pwned"),
        "list": lambda: backend.list_dir(path),
        "mkdir": lambda: backend.mkdir(path + "/sub"),
        "delete": lambda: backend.delete(path + "/x"),
    }
    with pytest.raises((OutsideRoot, InvalidPath)) as caught:
        actions[operation]()
    assert str(root.parent) not in str(caught.value)
    assert str(root.parent) not in repr(caught.value.args)
    assert sorted(p.name for p in outside.rglob("*")) == before
    assert (outside / "secret.txt").read_text() == "secret\n"


@pytest.mark.parametrize("setup", ESCAPES.values(), ids=ESCAPES.keys())
def test_tools_report_escapes_without_host_paths(world: tuple[Path, Path], setup: Setup) -> None:
    root, outside = world
    path = setup(root, outside)
    tools = {t.name: t for t in FileToolkit(LocalBackend(root)).get_tools()}
    calls = [
        ("read_file", {"file_path": path}),
        ("write_file", {"file_path": path, "content": "pwned"}),
        ("edit_file", {"file_path": path, "old_string": "", "new_string": "pwned"}),
        ("ls", {"path": path}),
    ]
    for name, args in calls:
        message = tools[name].invoke({"type": "tool_call", "id": "1", "name": name, "args": args})
        assert message.status == "error", (name, message.content)
        assert str(root.parent) not in message.content
    assert not (outside / "not-yet.txt").exists()
    assert (outside / "secret.txt").read_text() == "secret\n"


@pytest.mark.parametrize(
    "name",
    [
        "%2e%2e%2fsecret.txt",
        "..%2f..%2fsecret.txt",
        "\u2024\u2024",
        "..\u2215outside",
        "...",
        "....//x",
    ],
)
def test_odd_but_legal_names_stay_inside(world: tuple[Path, Path], name: str) -> None:
    root, outside = world
    backend = LocalBackend(root)
    info = backend.write_bytes("/" + name, b"data")
    assert backend.read_bytes(info.path) == b"data"
    written = [p for p in root.rglob("*") if p.is_file() and p.read_bytes() == b"data"]
    assert len(written) == 1
    assert root in written[0].parents
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_host_absolute_path_is_a_virtual_path(world: tuple[Path, Path]) -> None:
    root, outside = world
    backend = LocalBackend(root)
    target = str(outside / "secret.txt")
    info = backend.write_bytes(target, b"inside now")
    assert info.path == target
    assert (root / target.lstrip("/")).read_bytes() == b"inside now"
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_case_tricks_stay_inside(world: tuple[Path, Path]) -> None:
    root, _ = world
    backend = LocalBackend(root)
    upper = str(root).upper() + "/X.TXT"
    backend.write_bytes(upper, b"x")
    assert (root / upper.lstrip("/")).exists()
    backend.write_bytes("/INSIDE.TXT", b"other")
    assert (root / "inside.txt").read_text() == "inside\n"


def test_symlinks_inside_root_are_followed_and_survive_writes(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("v1")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    (tmp_path / "f-link").symlink_to(tmp_path / "real" / "f.txt")
    backend = LocalBackend(tmp_path)
    assert backend.read_bytes("/alias/f.txt") == b"v1"
    backend.write_bytes("/f-link", b"v2")
    assert (tmp_path / "f-link").is_symlink()
    assert (tmp_path / "real" / "f.txt").read_text() == "v2"


def test_listing_shows_escaping_links_as_special(world: tuple[Path, Path]) -> None:
    root, outside = world
    link_file_out(root, outside)
    kinds = {e.name: e.kind.value for e in LocalBackend(root).list_dir("/")}
    assert kinds == {"inside.txt": "file", "link": "special"}


@pytest.mark.parametrize("path", ["", "   "])
def test_empty_path_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(InvalidPath):
        LocalBackend(tmp_path).read_bytes(path)


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="existing directory"):
        LocalBackend(tmp_path / "missing")


def test_errors_name_virtual_paths(world: tuple[Path, Path]) -> None:
    root, _ = world
    backend = LocalBackend(root)
    with pytest.raises(FileNotFoundError) as caught:
        backend.read_bytes("/missing/file.txt")
    assert caught.value.filename == "/missing/file.txt"
    assert str(root) not in str(caught.value)
    (root / "inside.txt").chmod(0)
    if os.geteuid() != 0:
        with pytest.raises(PermissionError) as denied:
            backend.read_bytes("/inside.txt")
        assert denied.value.filename == "/inside.txt"
