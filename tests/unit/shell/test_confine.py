"""The confinement helper's seccomp filter, rlimits and OOM score, on real system calls.

Each test confines a process as the session supervisor confines a command (`confine.parse`
the options, `confine.restrict`, then `exec`), without bubblewrap, and lets a Python child
try the system call.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_fstools.shell.sandbox import confine

AF_VSOCK = 40

RESTRICTED = f"""
import os, sys
sys.path.insert(0, {str(Path(confine.__file__).parent)!r})
import confine
try:
    spec, argv = confine.parse(sys.argv[1:])
    confine.restrict(spec)
except confine.ConfineError as exc:
    sys.stderr.write(f"sandbox: {{exc}}\\n")
    os._exit(confine.FAILED)
os.execv(argv[0], argv)
"""
"""What the supervisor's command process does, as a program: `RESTRICTED OPTIONS -- ARGV`."""


def _restricted(options: list[str], argv: list[str]) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", RESTRICTED, *options, "--", *argv]


def _confined(options: list[str], code: str) -> str:
    """The output of Python `code` run under the helper with `options`."""
    done = subprocess.run(
        _restricted(options, [sys.executable, "-I", "-c", textwrap.dedent(code)]),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_datagram_socketpair_is_refused_a_stream_one_works() -> None:
    output = _confined(
        confine.options(deny_family=["1"]),
        """
        import socket
        for kind in ("SOCK_DGRAM", "SOCK_STREAM", "SOCK_SEQPACKET"):
            for flags in (0, socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC):
                try:
                    socket.socketpair(socket.AF_UNIX, getattr(socket, kind) | flags)
                    print(kind, flags, "made")
                except PermissionError:
                    print(kind, flags, "refused")
        """,
    )
    flags = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
    assert f"SOCK_DGRAM 0 refused\nSOCK_DGRAM {flags} refused\n" in output
    assert f"SOCK_STREAM 0 made\nSOCK_STREAM {flags} made\n" in output
    assert f"SOCK_SEQPACKET 0 made\nSOCK_SEQPACKET {flags} made\n" in output


@pytest.mark.parametrize("host_kind", [socket.SOCK_DGRAM, socket.SOCK_STREAM])
def test_a_stream_or_seqpacket_pair_cannot_address_a_host_socket(
    tmp_path: Path, host_kind: int
) -> None:
    """Connected pairs ignore or refuse a destination: nothing reaches the host's socket."""
    path = tmp_path / "host.sock"
    host = socket.socket(socket.AF_UNIX, host_kind)
    host.bind(str(path))
    if host_kind == socket.SOCK_STREAM:
        host.listen()
    host.setblocking(False)
    try:
        output = _confined(
            confine.options(deny_family=["1"]),
            f"""
            import socket
            for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
                a, b = socket.socketpair(socket.AF_UNIX, kind)
                for name, call in (
                    ("sendto", lambda: a.sendto(b"leak", {str(path)!r})),
                    ("sendmsg", lambda: a.sendmsg([b"leak"], [], 0, {str(path)!r})),
                    ("connect", lambda: a.connect({str(path)!r})),
                ):
                    try:
                        call()
                        print(kind, name, "sent")
                    except OSError as exc:
                        print(kind, name, exc.errno)
            """,
        )
        with pytest.raises(BlockingIOError):
            host.accept() if host_kind == socket.SOCK_STREAM else host.recv(10)
    finally:
        host.close()
    assert "connect sent" not in output
    assert "1 sendto 106" in output  # a stream pair: EISCONN
    assert "1 sendmsg 106" in output
    # a seqpacket pair sends to its peer whatever the address says: the host saw nothing


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (confine.options(deny_family=["1", str(AF_VSOCK)]), "refused"),
        (confine.options(deny_family=["1"]), "made"),  # the control: the network is on
    ],
)
def test_a_vsock_socket_is_refused_when_its_family_is(options: list[str], expected: str) -> None:
    output = _confined(
        options,
        f"""
        import socket
        try:
            socket.socket({AF_VSOCK}, socket.SOCK_STREAM).close()
            print("made")
        except PermissionError:
            print("refused")
        except OSError:
            print("made")  # the kernel has no vsock transport: not the filter's doing
        """,
    )
    assert output.strip() == expected


def test_the_keyring_calls_are_refused_with_deny_keyring() -> None:
    code = """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, create=1)
        result = libc.syscall(250, 0, -3, 1)
        print(result if result >= 0 else os.strerror(ctypes.get_errno()))
        """
    if os.uname().machine != "x86_64":
        pytest.skip("the system call number in this test is x86-64's")
    refused = _confined(confine.options(deny_keyring=True), code)
    allowed = _confined([], code)
    assert refused.strip() == "Operation not permitted"
    assert allowed.strip().lstrip("-").isdigit()  # the control: the keyring answers


def test_the_limits_are_rlimits_and_the_command_is_the_oom_killers_first_choice() -> None:
    output = _confined(
        [
            *confine.options(oom_first=True),
            *("--memory", str(256 << 20), "--open-files", "64", "--cpu-seconds", "30"),
            *("--file-size", str(1 << 20), "--processes", "50"),
        ],
        """
        import resource
        print(open("/proc/self/oom_score_adj").read().strip())
        for name in ("DATA", "NOFILE", "CPU", "FSIZE", "NPROC"):
            print(name, *resource.getrlimit(getattr(resource, "RLIMIT_" + name)))
        """,
    )
    lines = output.splitlines()
    assert lines[0] == "1000"
    assert f"DATA {256 << 20} {256 << 20}" in lines
    assert "NOFILE 64 64" in lines
    assert "CPU 30 31" in lines  # SIGXCPU at 30 s, SIGKILL a second later
    assert f"FSIZE {1 << 20} {1 << 20}" in lines
    nproc = next(line for line in lines if line.startswith("NPROC"))
    assert nproc != "NPROC 50 50"  # outside a user namespace it would count the whole user


def test_a_bad_limit_value_fails_the_helper_before_the_command() -> None:
    done = subprocess.run(
        _restricted(["--memory", "lots"], ["/bin/true"]),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == confine.FAILED
    assert "sandbox:" in done.stderr


def test_the_readable_walk_survives_a_link_to_the_root_beside_a_hidden_path(
    tmp_path: Path,
) -> None:
    """Landlock alone walks down to each hidden path: a link to `/` there once looped."""
    secret = tmp_path / "home" / ".ssh"
    secret.mkdir(parents=True)
    (tmp_path / "home" / "root-link").symlink_to("/")
    (tmp_path / "home" / "notes.txt").write_text("n\n")
    found = confine._readable([str(secret)])
    assert str(tmp_path / "home" / "notes.txt") in found
    assert str(secret) not in found
    assert not any(path.startswith(str(secret) + "/") for path in found)
