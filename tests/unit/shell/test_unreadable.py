"""Finding the workspace paths a rule denies reading, for a command's masks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.errors import CommandRefused
from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap
from langchain_fstools.shell.sandbox.unreadable import Unreadable, hiding, unreadable_paths

if TYPE_CHECKING:
    from langchain_fstools.shell.sandbox.overlay import LowerTree


def _unreadable(*globs: str) -> Unreadable:
    found = Policy([Permission(operations=["read"], paths=list(globs), action="deny")]).unreadable()
    assert found is not None
    return found


def _tree(root: Path, *files: str) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)


def test_no_rule_denying_or_asking_before_reads_hides_nothing() -> None:
    policy = Policy(
        [
            Permission(operations=["write"], paths=["/secrets"], action="deny"),
            Permission(operations=["read"], paths=["/docs"], action="allow"),
            Permission(operations=["execute"], commands=["cat"], action="deny"),
        ]
    )
    assert policy.unreadable() is None


def test_a_rule_that_asks_before_a_read_hides_its_path_from_commands(tmp_path: Path) -> None:
    _tree(tmp_path, "docs/private/plan.md", "docs/readme.md", "src/app.py")
    policy = Policy([Permission(operations=["read"], paths=["/docs/private"], action="ask")])
    unreadable = policy.unreadable()
    assert unreadable is not None

    assert unreadable_paths(str(tmp_path), unreadable) == ["/docs/private"]
    assert unreadable.why("/docs/private") == "permission rule 1"


def test_in_bypass_mode_a_rule_that_asks_hides_nothing_but_a_deny_rule_still_does() -> None:
    asking = Permission(operations=["read"], paths=["/docs"], action="ask")
    denying = Permission(operations=["read"], paths=["/secrets"], action="deny")

    assert Policy([asking], mode="bypass").unreadable() is None
    found = Policy([asking, denying], mode="bypass").unreadable()
    assert found is not None
    assert found.starts == (("secrets",),)


def test_protected_paths_ask_before_a_read_but_stay_visible_to_commands(tmp_path: Path) -> None:
    _tree(tmp_path, ".git/HEAD", ".env", "secrets/key")

    found = unreadable_paths(str(tmp_path), _unreadable("/secrets"))

    assert found == ["/secrets"]


def test_the_search_starts_where_each_denying_glob_is_literal() -> None:
    assert _unreadable("/secrets/**", "/A/*/b", "*.pem", "conf/{x,y}").starts == (
        (),
        ("a",),
        ("conf",),
        ("secrets",),
    )


def test_a_denied_folder_is_hidden_whole_and_a_denied_glob_file_by_file(tmp_path: Path) -> None:
    _tree(tmp_path, "secrets/key", "secrets/deep/more", "src/app.py", "src/site.pem", "a.pem")

    found = unreadable_paths(str(tmp_path), _unreadable("/Secrets", "**/*.pem"))

    assert sorted(found) == ["/a.pem", "/secrets", "/src/site.pem"]


def test_a_folder_whose_every_entry_is_hidden_looks_empty_whole(tmp_path: Path) -> None:
    _tree(tmp_path, "certs/a.pem", "certs/b.pem", "mixed/c.pem", "mixed/readme")

    found = unreadable_paths(str(tmp_path), _unreadable("*.pem"))

    assert sorted(found) == ["/certs", "/mixed/c.pem"]


def test_an_earlier_allow_rule_keeps_its_file_visible(tmp_path: Path) -> None:
    _tree(tmp_path, "secrets/public.txt", "secrets/key")
    policy = Policy(
        [
            Permission(operations=["read"], paths=["/secrets/public.txt"]),
            Permission(operations=["read"], paths=["/secrets/**"], action="deny"),
        ]
    )
    unreadable = policy.unreadable()
    assert unreadable is not None

    assert unreadable_paths(str(tmp_path), unreadable) == ["/secrets/key"]
    assert unreadable.why("/secrets/key") == "permission rule 2"


def test_only_folders_on_the_way_to_a_literal_start_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, "a/b/secret", "a/b/kept", "a/other/x", "big/many/files")
    listed: list[str] = []
    scandir = os.scandir

    def recording(path: str) -> object:
        listed.append(os.path.relpath(path, tmp_path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", recording)

    found = unreadable_paths(str(tmp_path), _unreadable("/a/b/secret"))

    assert found == ["/a/b/secret"]
    assert sorted(listed) == [".", "a", "a/b"]


class _Branch:
    """A layer holding one file of a branch, laid over the workspace."""

    def build(self, folder: str) -> None:
        (Path(folder) / "certs").mkdir()
        (Path(folder) / "certs" / "branch.pem").write_text("BRANCH-KEY\n")
        (Path(folder) / "certs" / "branch.crt").write_text("BRANCH-CERT\n")

    def lower(self, workspace: LowerTree) -> LowerTree:
        return workspace


@pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")
def test_a_denied_file_of_a_layer_laid_over_the_workspace_is_hidden(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        with hiding(_unreadable("*.pem")):
            result = backend.execute_changes(
                "cat certs/branch.pem certs/branch.crt",
                timeout=30,
                output_limit=10_000,
                layer=_Branch(),
            )
    finally:
        backend.close()
    assert "BRANCH-KEY" not in result.output
    assert "BRANCH-CERT" in result.output
    if result.changes is not None:
        result.changes.discard()


@pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")
def test_a_denied_link_is_masked_where_it_leads_but_never_over_the_workspace(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    workspace = tmp_path / "ws"
    outside.mkdir()
    (outside / "token").write_text("OUTSIDE-SECRET\n")
    _tree(workspace, "src/app.py")
    (workspace / "vault").symlink_to(outside)
    (workspace / "here").symlink_to(workspace)
    backend = LocalBackend(workspace, execute=True, sandbox=Sandbox(writable=[str(outside)]))
    try:
        with hiding(_unreadable("/vault", "/here")):
            result = backend.execute(
                f"cat vault/token {outside}/token; cat src/app.py", timeout=30, output_limit=10_000
            )
    finally:
        backend.close()
    assert result.output.endswith("src/app.py")  # the workspace stays as it is
    assert "OUTSIDE-SECRET" not in result.output


def test_a_denied_name_no_file_tool_can_spell_is_hidden_all_the_same(tmp_path: Path) -> None:
    """A backslash, or bytes that are not UTF-8: the tools refuse the path, a shell does not."""
    (tmp_path / "a\\b.pem").write_text("x")
    (tmp_path / os.fsdecode(b"caf\xe9.pem")).write_text("x")
    (tmp_path / "plain.txt").write_text("x")

    found = unreadable_paths(str(tmp_path), _unreadable("*.pem"))

    assert sorted(found) == sorted(["/a\\b.pem", "/" + os.fsdecode(b"caf\xe9.pem")])


@pytest.mark.parametrize("sandbox", [Sandbox(method="landlock"), None], ids=["landlock", "none"])
def test_a_backend_without_a_mount_namespace_refuses_a_command_it_cannot_hide_a_path_from(
    tmp_path: Path, sandbox: Sandbox | None
) -> None:
    """The backend's own guarantee, below the permission layer (which asks first)."""
    _tree(tmp_path, "secrets/key", "notes.txt")
    backend = LocalBackend(tmp_path, execute=True, sandbox=sandbox)
    assert not backend.hides_from_commands()
    try:
        with hiding(_unreadable("/secrets")), pytest.raises(CommandRefused) as refused:
            backend.execute("cat secrets/key", timeout=20, output_limit=1000)
        with hiding(_unreadable("/elsewhere")):
            ran = backend.execute("cat notes.txt", timeout=20, output_limit=1000)
    finally:
        backend.close()
    assert "permission rule 1 keeps /secrets from reads" in str(refused.value)
    assert ran.output == "notes.txt"
