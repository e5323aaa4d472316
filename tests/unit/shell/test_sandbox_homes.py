"""What a command sees of home directories (an allow-list) and of what only root may read."""

from __future__ import annotations

import os
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
