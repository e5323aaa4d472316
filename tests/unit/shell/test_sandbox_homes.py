"""What a command sees of home directories (an allow-list) and of what only root may read."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox import sandbox
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap, home_masks

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

SEEN = [".bashrc", ".gitconfig", ".config/git/config", ".cache/pip/wheel", ".pyenv/version"]
HIDDEN = [
    ".pgpass",
    ".vault-token",
    ".config/rclone/rclone.conf",
    ".cache/huggingface/token",
    ".cargo/credentials.toml",
    "notes/secret.txt",
    ".terraform.d/credentials.tfrc.json",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory holding the files of `SEEN` and `HIDDEN`, each naming itself.

    It lies in the host's `/tmp`, which commands do not see: each test shows it to them
    with `Sandbox(writable=[home])`, under the masks as a real home is.
    """
    folder = tmp_path / "home"
    for name in SEEN + HIDDEN:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"content of {name}\n")
    monkeypatch.setattr(sandbox, "home_directories", lambda: [str(folder)])
    return folder


def test_only_the_allowed_entries_of_a_home_are_seen(home: Path) -> None:
    workspace = home / "projects" / "app"
    workspace.mkdir(parents=True)
    (home / "projects" / "other-secret.txt").write_text("secret\n")
    backend = LocalBackend(workspace, execute=True, sandbox=Sandbox(writable=[str(home)]))
    files = " ".join(str(home / name) for name in SEEN + HIDDEN)

    result = backend.execute(
        f"for f in {files} {home}/projects/other-secret.txt; do cat $f 2>/dev/null; done;"
        " echo built > out.txt",
        timeout=30,
        output_limit=10_000,
    )

    assert result.output.splitlines() == [f"content of {name}" for name in SEEN]
    assert (workspace / "out.txt").read_text() == "built\n"  # the workspace stays usable


def test_the_list_is_configurable_and_credentials_stay_masked(home: Path, tmp_path: Path) -> None:
    allowed = ["notes", ".pgpass"]
    backend = LocalBackend(
        tmp_path, execute=True, sandbox=Sandbox(home_allowed=allowed, writable=[str(home)])
    )

    result = backend.execute(
        f"cat {home}/notes/secret.txt {home}/.pgpass {home}/.bashrc 2>/dev/null",
        timeout=30,
        output_limit=10_000,
    )

    assert result.output == "content of notes/secret.txt\n"


def test_a_home_entry_holding_the_workspace_is_masked_around_it(home: Path) -> None:
    masks = home_masks([".bashrc"], [str(home / "projects" / "app")])

    assert str(home / "projects") not in masks
    assert str(home / "notes") in masks
    assert str(home / ".bashrc") not in masks


def test_allowed_paths_must_be_relative() -> None:
    with pytest.raises(ValueError, match="relative to a home directory"):
        Sandbox(home_allowed=["/root/.bashrc"])


@pytest.mark.skipif(os.geteuid() != 0, reason="a root agent's case")
def test_a_root_agents_commands_cannot_read_what_only_root_may(tmp_path: Path) -> None:
    readable_by_root_only = [
        path
        for path in ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key")
        if Path(path).exists()
    ]
    assert readable_by_root_only, "this machine has none of the usual root-only files"
    backend = LocalBackend(tmp_path, execute=True)

    result = backend.execute(
        " ".join(f"cat {path} 2>/dev/null;" for path in readable_by_root_only) + " echo done",
        timeout=30,
        output_limit=10_000,
    )

    assert result.output == "done\n"


def _read(backend: LocalBackend, command: str) -> str:
    return backend.execute(command, timeout=30, output_limit=10_000).output


def _beside(home: Path, tmp_path: Path) -> LocalBackend:
    """A backend whose workspace lies beside `home`, not around it (masks found once before)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return LocalBackend(workspace, execute=True, sandbox=Sandbox(writable=[str(home)]))


def test_a_credential_made_after_the_first_command_is_masked_in_the_next(
    home: Path, tmp_path: Path
) -> None:
    backend = _beside(home, tmp_path)
    assert _read(backend, f"cat {home}/.bashrc") == "content of .bashrc\n"  # the session runs
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("AWS-SECRET\n")
    (home / ".cache" / "huggingface" / "token").unlink()
    (home / ".cache" / "huggingface" / "token").write_text("HF-SECRET\n")  # a new inode
    output = _read(
        backend, f"cat {home}/.aws/credentials {home}/.cache/huggingface/token 2>&1; echo end"
    )

    assert "AWS-SECRET" not in output
    assert "HF-SECRET" not in output
    assert output.endswith("end\n")


def test_a_masked_file_replaced_by_a_rename_stays_masked(home: Path, tmp_path: Path) -> None:
    """The kernel drops the session's mask when its path is renamed over: each command masks it."""
    (home / ".netrc").write_text("OLD-NETRC\n")
    backend = _beside(home, tmp_path)
    assert "OLD-NETRC" not in _read(backend, f"cat {home}/.netrc")
    (home / ".netrc.new").write_text("NEW-NETRC\n")
    (home / ".netrc.new").replace(home / ".netrc")

    output = _read(backend, f"cat {home}/.netrc 2>&1; echo end")  # one pipe: in order

    assert "NEW-NETRC" not in output
    assert output.endswith("end\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="a root agent's case")
def test_a_root_only_file_made_under_var_after_the_first_command_is_masked(
    tmp_path: Path,
) -> None:
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="fstools-root-only-"))
    try:
        folder.chmod(0o755)
        (folder / "open.txt").write_text("OPEN\n")
        backend = LocalBackend(tmp_path, execute=True)
        assert _read(backend, f"cat {folder}/open.txt") == "OPEN\n"
        (folder / "root-only.txt").write_text("ROOT-ONLY\n")
        (folder / "root-only.txt").chmod(0o600)

        output = _read(backend, f"cat {folder}/root-only.txt {folder}/open.txt")

        assert "ROOT-ONLY" not in output
        assert "OPEN" in output
    finally:
        shutil.rmtree(folder)


def _age(home: Path) -> None:
    """Every folder of `home`, and its parent, last changed long ago (trusted listings)."""
    for folder in [home.parent, home, *(path for path in home.rglob("*") if path.is_dir())]:
        os.utime(folder, (1_000_000_000, 1_000_000_000))


def test_an_unchanged_home_is_not_listed_again(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _age(home)
    scan = sandbox._HomeScan()
    first = scan.find(sandbox.HOME_ALLOWED, [])
    listed: list[str] = []
    listdir = os.listdir

    def recording(path: str) -> list[str]:
        listed.append(path)
        return listdir(path)

    monkeypatch.setattr(os, "listdir", recording)

    assert scan.find(sandbox.HOME_ALLOWED, []) == first
    assert listed == []


def test_a_credential_made_below_a_folder_long_unchanged_is_found(home: Path) -> None:
    shutil.rmtree(home / ".cache" / "huggingface")
    _age(home)
    scan = sandbox._HomeScan()
    credentials, masks = scan.find(sandbox.HOME_ALLOWED, [])
    assert str(home / ".aws") not in masks
    assert str(home / ".cache" / "huggingface" / "token") not in credentials

    (home / ".cache" / "huggingface").mkdir()  # the home's own entries stay as they were
    (home / ".cache" / "huggingface" / "token").write_text("HF\n")
    credentials, _masks = scan.find(sandbox.HOME_ALLOWED, [])
    assert str(home / ".cache" / "huggingface" / "token") in credentials

    (home / ".aws").mkdir()
    _credentials, masks = scan.find(sandbox.HOME_ALLOWED, [])
    assert str(home / ".aws") in masks
