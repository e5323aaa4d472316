"""The sandbox's configuration, how it is found, and why it refuses (issue 24)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.errors import SandboxUnavailable
from langchain_fstools.permissions.rules import AGENT_CONFIGURATION
from langchain_fstools.shell.sandbox import confine, sandbox
from langchain_fstools.shell.sandbox.sandbox import CREDENTIAL_PATHS, DEFAULT_SANDBOX, Sandbox
from tests.e2e.agent_runs import run_command


def test_execute_is_sandboxed_by_default(tmp_path: Path) -> None:
    assert LocalBackend(tmp_path, execute=True).sandbox == DEFAULT_SANDBOX
    assert LocalBackend(tmp_path, execute=True, sandbox=None).sandbox is None
    assert LocalBackend(tmp_path, execute=True, sandbox="bwrap").sandbox == Sandbox(method="bwrap")


def test_a_non_default_sandbox_without_execute_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pass execute=True"):
        LocalBackend(tmp_path, sandbox=Sandbox(network=True))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"writable": ["relative/dir"]}, "must be absolute"),
        ({"hidden": "/one/string"}, "list of paths"),
        ({"method": "docker"}, "unknown sandbox method"),
    ],
)
def test_bad_sandbox_configuration_fails_at_construction(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Sandbox(**options)  # type: ignore[arg-type]


def test_every_agent_configuration_folder_is_masked() -> None:
    for name in AGENT_CONFIGURATION:
        assert name in CREDENTIAL_PATHS


def test_where_no_sandbox_can_start_execute_refuses_naming_each_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    backend = LocalBackend(tmp_path, execute=True)
    with pytest.raises(SandboxUnavailable) as raised:
        backend.execute("echo hi", timeout=5, output_limit=100)
    assert "no bwrap executable" in raised.value.reason
    assert "no Landlock" in raised.value.reason
    assert not (tmp_path / "ran").exists()


def test_the_refusal_reaches_the_model_as_an_error_naming_the_opt_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    outcome = run_command(LocalBackend(tmp_path, execute=True), "touch ran", mode="bypass")
    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "sandbox=None" in outcome.text
    assert "unsafe" in outcome.text
    assert not (tmp_path / "ran").exists()


def test_the_seccomp_filter_checks_the_arch_first_and_kills_foreign_abis() -> None:
    program = confine.seccomp_program((1, 2), machine="x86_64", keyring=True)
    records = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert records[1][3] == 0xC000003E  # AUDIT_ARCH_X86_64
    assert records[-1][3] == 0x80000000  # another ABI: kill the process
    assert {250, 248, 249} <= {record[3] for record in records}  # keyctl, add_key, request_key
    with pytest.raises(confine.ConfineError, match="architecture"):
        confine.seccomp_program(machine="sparc")


def test_bubblewrap_is_found_and_newest_wins() -> None:
    found = sandbox.find_bwrap()
    assert found is not None
    assert sandbox._version(found) >= (0, 11)


def test_the_helpers_options_round_trip_and_unknown_ones_are_refused() -> None:
    flags = confine.options(landlock=True, network=False, writable=["/w", "/x"], deny_family=[1])
    assert flags == ["--landlock", "--writable", "/w", "--writable", "/x", "--deny-family", "1"]
    spec, argv = confine.parse([*flags, "--", "bash", "-c", "true"])
    assert spec.flags["landlock"]
    assert not spec.flags["network"]
    assert spec.lists["writable"] == ["/w", "/x"]
    assert argv == ["bash", "-c", "true"]
    with pytest.raises(ValueError, match="unknown confinement option"):
        confine.options(mount=True)
    with pytest.raises(confine.ConfineError, match="unknown option"):
        confine.parse(["--mount", "--", "true"])


def test_a_mask_over_the_workspace_leaves_the_workspace_usable(tmp_path: Path) -> None:
    workspace = tmp_path / "outer" / "ws"
    workspace.mkdir(parents=True)
    (tmp_path / "outer" / "beside.txt").write_text("hidden\n")
    backend = LocalBackend(
        workspace, execute=True, sandbox=Sandbox(hidden=[str(tmp_path / "outer")])
    )
    result = backend.execute(
        f"echo ok > made.txt && cat made.txt; cat {tmp_path}/outer/beside.txt",
        timeout=30,
        output_limit=1000,
    )
    assert result.output.startswith("ok\n"), result.output
    assert "hidden" not in result.output
    assert (workspace / "made.txt").read_text() == "ok\n"


def test_an_interpreter_reached_through_a_linked_folder_starts_the_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "linked-venv"
    linked.symlink_to(Path(sys.executable).parent, target_is_directory=True)
    monkeypatch.setattr(sys, "executable", str(linked / Path(sys.executable).name))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = LocalBackend(workspace, execute=True)
    result = backend.execute("echo inside", timeout=30, output_limit=1000)
    assert result.output == "inside\n", result.output
