"""The sandbox as an unprivileged user (issue 24): the same escapes fail, nothing is left.

CI runs as root; these tests start a sandbox session (bubblewrap plus the supervisor,
Landlock alone, or the supervisor only) as `nobody` through `setpriv`, exactly as
`LocalBackend.execute` starts one. The agent's own interpreter lives under a home
`nobody` cannot enter, so the supervisor runs on the system's `python3` from a copy
`nobody` can read (it needs the standard library only).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.sandbox import confine, supervisor
from langchain_fstools.shell.sandbox import sandbox as sandbox_module
from langchain_fstools.shell.sandbox.limits import DEFAULT_LIMITS, Limits, MiB
from langchain_fstools.shell.sandbox.overlay import Overlay
from langchain_fstools.shell.sandbox.sandbox import Confinement, Sandbox, find_bwrap
from langchain_fstools.shell.sandbox.unreadable import unreadable_paths
from langchain_fstools.shell.session.session import Session
from tests.e2e.agent_runs import run_command, surviving_sleepers
from tests.e2e.test_attacks import DISARM
from tests.e2e.test_hidden_from_commands import COPIES, COULD_NOT_READ

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
SYSTEM_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.integration


def _as_nobody(argv: list[str]) -> bool:
    done = subprocess.run([*SETPRIV, *argv], capture_output=True, check=False, timeout=30)
    return done.returncode == 0


@pytest.fixture(scope="module")
def bwrap() -> str:
    assert os.geteuid() == 0, "these tests switch to nobody, which needs root (as in CI)"
    assert shutil.which("setpriv"), "setpriv (util-linux) is missing"
    assert Path(SYSTEM_PYTHON).exists(), "the system python3 is missing"
    for candidate in (find_bwrap(), shutil.which("bwrap"), "/usr/bin/bwrap"):
        if candidate and _as_nobody([candidate, "--version"]):
            return candidate
    pytest.fail("no bwrap that nobody can run (scripts/setup installs Debian's bubblewrap)")


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder nobody can reach: the workspace, a fake home and an open folder outside."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="fstools-nobody-"))
    base.chmod(0o755)
    for name in ("ws", "home", "open", "helper"):
        (base / name).mkdir()
        os.chown(base / name, NOBODY, NOBODY)
    (base / "open").chmod(0o777)
    for name in (".ssh/id_rsa", ".aws/credentials", ".netrc"):
        (base / "home" / name).parent.mkdir(parents=True, exist_ok=True)
        (base / "home" / name).write_text("CREDENTIAL\n")
        (base / "home" / name).chmod(0o644)
        (base / "home" / name).parent.chmod(0o755)
    for script in (confine.__file__, supervisor.__file__):
        shutil.copy(script, base / "helper")
        (base / "helper" / Path(script).name).chmod(0o644)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(place: Path, confinement: Confinement, command: str, timeout: float = 20) -> str:
    plan = confinement.session()
    os.chown(plan.folder, NOBODY, NOBODY)
    if plan.temporary is not None:
        os.chown(plan.temporary, NOBODY, NOBODY)
    session = Session(replace(plan, argv=[*SETPRIV, *plan.argv]))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(place / "home")}
    try:
        result, _state, _moved = session.run(
            command, interpreter="/bin/bash", env=env, timeout=timeout, output_limit=100_000
        )
    finally:
        session.close()
    return result.output


def _confinement(
    place: Path, bwrap: str, method: str, limits: Limits | None = DEFAULT_LIMITS
) -> Confinement:
    helper = (SYSTEM_PYTHON, "-I", "-S", str(place / "helper" / "supervisor.py"))
    sandbox = (
        None if method == "none" else Sandbox(method=method, workspace="direct", limits=limits)  # type: ignore[arg-type]
    )
    return Confinement(sandbox, str(place / "ws"), bwrap if method == "bwrap" else None, helper)


@pytest.fixture(autouse=True)
def homes_of_nobody(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The home directories as nobody finds them: its own (root's cannot be entered)."""
    monkeypatch.setattr(sandbox_module, "home_directories", lambda: [str(place / "home")])


@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_as_nobody_the_sandbox_holds(place: Path, bwrap: str, method: str) -> None:
    confinement = _confinement(place, bwrap, method)
    home = place / "home"
    output = _run(
        place,
        confinement,
        "id -u; grep -E 'CapEff|CapBnd' /proc/self/status; echo inside > made.txt;"
        f" echo escaped > {place}/open/escaped.txt; echo status=$?;"
        f" cat {home}/.ssh/id_rsa {home}/.aws/credentials {home}/.netrc;"
        " python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1;"
        " umount -l /proc; echo umount=$?",
    )
    assert "65534" in output
    assert "CapEff:\t0000000000000000" in output
    if method == "bwrap":  # Landlock alone: nobody cannot empty its bounding set; no need
        assert "CapBnd:\t0000000000000000" in output
    assert (place / "ws" / "made.txt").read_text() == "inside\n"
    assert not (place / "open" / "escaped.txt").exists()
    assert "status=0" not in output
    assert "CREDENTIAL" not in output
    assert "Operation not permitted" in output
    assert "umount=0" not in output


@pytest.mark.parametrize("method", ["bwrap", "landlock", "none"])
def test_as_nobody_no_process_outlives_the_call(place: Path, bwrap: str, method: str) -> None:
    duration = f"{3000 + time.monotonic_ns() % 1_000_000}.{os.getpid()}"
    confinement = _confinement(place, bwrap, method)
    _run(
        place,
        confinement,
        f"setsid sleep {duration} & nohup setsid sleep {duration} >/dev/null 2>&1 &"
        f" (setsid sleep {duration} &); sleep 0.3; echo done",
    )
    assert not surviving_sleepers(duration)


@pytest.mark.parametrize("method", ["bwrap", "landlock", "none"])
def test_as_nobody_the_timeout_kills_everything(place: Path, bwrap: str, method: str) -> None:
    duration = f"{4000 + time.monotonic_ns() % 1_000_000}.{os.getpid()}"
    confinement = _confinement(place, bwrap, method)
    started = time.monotonic()
    _run(place, confinement, f"setsid sleep {duration} & sleep {duration}", timeout=1)
    assert time.monotonic() - started < 6
    assert not surviving_sleepers(duration)


def test_as_nobody_a_fork_loop_stops_at_the_process_limit(place: Path, bwrap: str) -> None:
    """Without a cgroup, RLIMIT_NPROC inside bubblewrap's user namespace holds it."""
    confinement = _confinement(place, bwrap, "bwrap", Limits(processes=32))
    output = _run(
        place,
        confinement,
        "python3 -c 'import os, time\nn = 0\ntry:\n    while True:\n"
        "        if os.fork() == 0:\n            time.sleep(10)\n            os._exit(0)\n"
        '        n += 1\nexcept OSError as exc:\n    print("refused after", n, exc.errno)\'',
    )
    assert "refused after" in output, output
    count, code = output.split("refused after")[1].split()[:2]
    assert int(count) < 32
    assert code == "11"  # EAGAIN


def test_as_nobody_a_tmpfs_fill_stops_at_its_size(place: Path, bwrap: str) -> None:
    confinement = _confinement(place, bwrap, "bwrap", Limits(tmp_size=16 * MiB))
    output = _run(place, confinement, "head -c 100M /dev/zero > /tmp/fill; du -m /tmp/fill")
    assert "No space left on device" in output
    assert "16\t/tmp/fill" in output


@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_as_nobody_no_datagram_socketpair_and_no_keyring(
    place: Path, bwrap: str, method: str
) -> None:
    confinement = _confinement(place, bwrap, method)
    output = _run(
        place,
        confinement,
        "python3 -c 'import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)'"
        " 2>&1 | tail -1; python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True);"
        ' r = libc.syscall(250, 0, -3, 1); print("keyctl", os.strerror(ctypes.get_errno()))\'',
    )
    assert "PermissionError" in output
    assert "keyctl Operation not permitted" in output


@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_as_nobody_a_command_cannot_disarm_its_keeper(place: Path, bwrap: str, method: str) -> None:
    """The keeper's and the supervisor's descriptors stay theirs: what the command left dies."""
    confinement = _confinement(place, bwrap, method)
    output = _run(
        place,
        confinement,
        "echo benign > note.txt; supervisor=$(cut -d' ' -f4 /proc/$PPID/stat);"
        " prlimit --pid $supervisor --nofile=0:0; prlimit --pid $PPID --nofile=0:0;"
        " setsid bash -c 'exec 3<>note.txt; sleep 1; echo EVIL >&3' </dev/null >/dev/null 2>&1 &"
        " sleep 0.2",
    )
    time.sleep(2)  # the left process's second has passed, had it lived
    assert (place / "ws" / "note.txt").read_text() == "benign\n"
    assert "Operation not permitted" in output


def test_as_nobody_a_committed_file_is_what_the_command_left(
    place: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note.txt attack through the copy-on-write view and the commit, the session as nobody."""
    helper = (SYSTEM_PYTHON, "-I", "-S", str(place / "helper" / "supervisor.py"))
    sandbox = Sandbox(method="bwrap")
    confinement = Confinement(sandbox, str(place / "ws"), bwrap, helper)
    plan = confinement.session()
    os.chown(plan.folder, NOBODY, NOBODY)
    session = Session(replace(plan, argv=[*SETPRIV, *plan.argv]))
    backend = LocalBackend(place / "ws", execute=True, sandbox=sandbox)
    backend._commands._confinement = confinement
    monkeypatch.setattr(backend._commands._sessions, "current", lambda _plan: session)
    made = backend._commands._view

    def view_of_nobody(of: Session) -> Overlay | None:
        overlay = made(of)
        assert overlay is not None
        for folder in (overlay.folder, overlay.upper, overlay.work):
            os.chown(folder, NOBODY, NOBODY)
        return overlay

    monkeypatch.setattr(backend._commands, "_view", view_of_nobody)
    try:
        result = backend.execute(DISARM, timeout=20, output_limit=10_000)
        assert (place / "ws" / "note.txt").read_text() == "benign\n", result.output
        time.sleep(2)  # the left process's second has passed, had it lived
        assert (place / "ws" / "note.txt").read_text() == "benign\n"
        assert "Operation not permitted" in result.output
    finally:
        session.close()


@contextlib.contextmanager
def _commands_as_nobody(confinement: Confinement, home: Path) -> Iterator[Callable[[str], str]]:
    """Run commands as nobody in one session, each with the masks found at its start."""
    plan = confinement.session()
    os.chown(plan.folder, NOBODY, NOBODY)
    session = Session(replace(plan, argv=[*SETPRIV, *plan.argv]))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}

    def run(command: str) -> str:
        masks, read_only = confinement.command_masks(plan)
        result, _state, _moved = session.run(
            command,
            interpreter="/bin/bash",
            env=env,
            timeout=20,
            output_limit=100_000,
            masks=masks,
            read_only=read_only,
        )
        return result.output

    try:
        yield run
    finally:
        session.close()


@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_as_nobody_a_credential_made_or_replaced_after_the_first_command_stays_hidden(
    place: Path, bwrap: str, method: str
) -> None:
    """Each command masks what became a credential since its session's sandbox started.

    With Landlock alone, the session's rules hide every credential path, made or not, so
    one made later (its folder too) is as unreadable as one replaced by a rename.
    """
    confinement = _confinement(place, bwrap, method)
    home = place / "home"
    with _commands_as_nobody(confinement, home) as run:
        first = run(f"id -u; cat {home}/.netrc; echo end")
        (home / ".kube").mkdir(mode=0o755)
        (home / ".kube" / "config").write_text("CREDENTIAL kube\n")
        (home / ".kube" / "config").chmod(0o644)
        (home / ".netrc.new").write_text("CREDENTIAL replaced\n")
        (home / ".netrc.new").chmod(0o644)
        (home / ".netrc.new").replace(home / ".netrc")
        second = run(f"cat {home}/.kube/config {home}/.netrc; echo end")

    assert first.startswith("65534\n")
    assert "CREDENTIAL" not in first + second
    assert "end" in second.splitlines()  # it ran (its errors may come after, on stderr)


@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_as_nobody_a_first_credential_made_in_a_home_after_the_first_command_stays_hidden(
    place: Path, bwrap: str, method: str
) -> None:
    """A home that held no credential when the session started: the first one made is hidden."""
    home = place / "home"
    for name in (".ssh", ".aws", ".netrc"):
        shutil.rmtree(home / name) if (home / name).is_dir() else (home / name).unlink()
    (home / ".bashrc").write_text("OPEN\n")  # a shell file: commands see it
    (home / ".bashrc").chmod(0o644)
    confinement = _confinement(place, bwrap, method)
    with _commands_as_nobody(confinement, home) as run:
        first = run(f"cat {home}/.bashrc; echo end")
        (home / ".aws").mkdir(mode=0o755)
        (home / ".aws" / "credentials").write_text("CREDENTIAL aws\n")
        (home / ".aws" / "credentials").chmod(0o644)
        (home / ".netrc").write_text("CREDENTIAL netrc\n")
        (home / ".netrc").chmod(0o644)
        second = run(f"cat {home}/.aws/credentials {home}/.netrc; echo end")

    assert first == "OPEN\nend\n"
    assert "CREDENTIAL" not in second
    assert "end" in second.splitlines()  # it ran (its errors may come after, on stderr)


def test_as_nobody_a_path_a_rule_denies_reading_is_masked_in_the_workspace(
    place: Path, bwrap: str
) -> None:
    """The masks a read-deny rule gives (`shell.sandbox.unreadable`) hold as nobody too."""
    workspace = place / "ws"
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key").write_text("RULE-SECRET\n")
    (workspace / "notes.txt").write_text("NOTES\n")
    for path in (workspace / "secrets", workspace / "secrets" / "key", workspace / "notes.txt"):
        os.chown(path, NOBODY, NOBODY)
    policy = Policy([Permission(operations=["read"], paths=["/secrets"], action="deny")])
    unreadable = policy.unreadable()
    assert unreadable is not None
    masks = [str(workspace) + path for path in unreadable_paths(str(workspace), unreadable)]
    confinement = _confinement(place, bwrap, "bwrap")
    plan = confinement.session()
    os.chown(plan.folder, NOBODY, NOBODY)
    session = Session(replace(plan, argv=[*SETPRIV, *plan.argv]))
    try:
        result, _state, _moved = session.run(
            "id -u; cat secrets/key; ls -A secrets; cat notes.txt",
            interpreter="/bin/bash",
            env={"PATH": "/usr/bin:/bin", "HOME": str(place / "home")},
            timeout=20,
            output_limit=100_000,
            masks=masks,
        )
    finally:
        session.close()
    assert masks == [str(workspace / "secrets")]
    assert result.output.startswith("65534\n")
    assert "RULE-SECRET" not in result.output
    assert "NOTES" in result.output


@pytest.mark.parametrize("command", list(COPIES.values()), ids=list(COPIES))
def test_as_nobody_a_copy_of_a_folder_holding_a_masked_file_commits_no_stand_in(
    place: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Through `create_agent`, the session as nobody: the copy fails loudly, no empty `key`."""
    workspace = place / "ws"
    (workspace / "proj" / "secrets").mkdir(parents=True)
    (workspace / "proj" / "secrets" / "key").write_text("SECRET-KEY\n")
    (workspace / "proj" / "secrets" / "other").write_text("other\n")
    (workspace / "proj" / "a.txt").write_text("a\n")
    for path in [workspace, *workspace.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    helper = (SYSTEM_PYTHON, "-I", "-S", str(place / "helper" / "supervisor.py"))
    sandbox = Sandbox(method="bwrap")
    confinement = Confinement(sandbox, str(workspace), bwrap, helper)
    plan = confinement.session()
    os.chown(plan.folder, NOBODY, NOBODY)
    session = Session(replace(plan, argv=[*SETPRIV, *plan.argv]))
    backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
    backend._commands._confinement = confinement
    monkeypatch.setattr(backend._commands._sessions, "current", lambda _plan: session)
    made = backend._commands._view

    def view_of_nobody(of: Session) -> Overlay | None:
        overlay = made(of)
        assert overlay is not None
        for folder in (overlay.folder, overlay.upper, overlay.work):
            os.chown(folder, NOBODY, NOBODY)
        return overlay

    monkeypatch.setattr(backend._commands, "_view", view_of_nobody)
    rule = Permission(operations=["read"], paths=["/proj/secrets/key"], action="deny")
    try:
        outcome = run_command(backend, command, mode="accept_edits", permissions=[rule])
    finally:
        session.close()

    assert "SECRET-KEY" not in outcome.text
    assert any(words in outcome.text for words in COULD_NOT_READ), outcome.text
    assert (workspace / "copy" / "secrets" / "other").read_text() == "other\n"
    assert not (workspace / "copy" / "secrets" / "key").exists()
