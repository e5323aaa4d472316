"""The confinement helper's seccomp filter, rlimits and OOM score, on real system calls.

Each test confines a process as the session supervisor confines a command (`confine.parse`
the options, `confine.restrict`, then `exec`), without bubblewrap, and lets a Python child
try the system call.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
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


# ----- nothing acts on another process ---------------------------------------------------

_PRIO_USER, _IOPRIO_WHO_USER = 2, 3


def _verdict(program: bytes, arch: int, nr: int, args: tuple[int, ...]) -> str:
    """What the classic-BPF `program` answers for one `struct seccomp_data` (a tiny interpreter)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *args, *[0] * (6 - len(args)))
    records = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        op, true, false, k = records[pc]
        pc += 1
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x54:
            acc &= k
        elif op == 0x05:
            pc += k
        elif op in (0x15, 0x35):  # BPF_JEQ, BPF_JGE
            pc += true if (acc == k if op == 0x15 else acc >= k) else false
        else:
            assert op == 0x06, op
            return {0x7FFF0000: "allow", 0x00050001: "EPERM", 0x00050026: "ENOSYS"}.get(k, hex(k))


OTHER = 4242
"""Another process's pid in the spellings below."""
SPELLINGS = [
    *[(name, (OTHER,), "EPERM") for name in confine.SELF_ONLY_CALLS],
    *[(name, (0,), "allow") for name in confine.SELF_ONLY_CALLS],  # on itself
    *[(name, (OTHER, 0, 0, 0, 0, 0), "EPERM") for name in confine.OTHER_PROCESS_CALLS],
    *[(name, (0, 0, 0, 0, 0, 0), "EPERM") for name in confine.OTHER_PROCESS_CALLS],
    ("pidfd_open", (OTHER, 0), "ENOSYS"),
    ("setpriority", (0, OTHER, 19), "EPERM"),  # PRIO_PROCESS, another process
    ("setpriority", (1, OTHER, 19), "EPERM"),  # PRIO_PGRP, another group
    ("setpriority", (_PRIO_USER, 0, 19), "EPERM"),  # every process of the user
    ("setpriority", (_PRIO_USER, OTHER, 19), "EPERM"),
    ("setpriority", (0, 0, 19), "allow"),  # itself (`nice`)
    ("setpriority", (1, 0, 19), "allow"),  # its own process group
    ("ioprio_set", (1, OTHER, 0), "EPERM"),  # IOPRIO_WHO_PROCESS, another process
    ("ioprio_set", (2, OTHER, 0), "EPERM"),  # IOPRIO_WHO_PGRP
    ("ioprio_set", (_IOPRIO_WHO_USER, 0, 0), "EPERM"),
    ("ioprio_set", (1, 0, 0), "allow"),  # itself (`ionice`)
]


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize(("name", "args", "expected"), SPELLINGS)
def test_the_filter_keeps_a_command_to_its_own_processes(
    machine: str, name: str, args: tuple[int, ...], expected: str
) -> None:
    """Every spelling, on each architecture: a pid in the high word alone is still pid 0."""
    arch, calls = confine._ARCHES[machine]
    for keyring, families in ((False, ()), (True, (1, 2, 10))):
        program = confine.seccomp_program(families, machine, keyring=keyring)
        assert _verdict(program, arch, calls[name], args) == expected, (name, args)
    high = tuple(arg | (1 << 32) if arg == 0 else arg for arg in args)  # the kernel's int
    assert _verdict(program, arch, calls[name], high) == expected


def test_no_command_can_limit_read_or_renice_another_process() -> None:
    """On real system calls, against a process standing for the command's keeper."""
    if os.uname().machine != "x86_64":
        pytest.skip("the system call numbers in this test are x86-64's")
    keeper = subprocess.Popen(["sleep", "30"])
    code = f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        limit = (ctypes.c_uint64 * 2)(0, 0)
        old = (ctypes.c_uint64 * 2)()
        local = (ctypes.c_uint64 * 2)(ctypes.addressof(old), 16)
        mask = ctypes.c_uint64(1)
        nice = os.getpriority(os.PRIO_PROCESS, 0)
        for name, nr, args in (
            ("prlimit64", 302, ({keeper.pid}, 7, limit, None)),
            ("prlimit64 self", 302, (0, 7, None, old)),
            ("process_vm_readv", 310, ({keeper.pid}, local, 1, local, 1, 0)),
            ("kcmp", 312, ({keeper.pid}, os.getpid(), 0, 0, 0)),
            ("pidfd_open", 434, ({keeper.pid}, 0)),
            ("pidfd_getfd", 438, (0, 0, 0)),
            ("sched_setaffinity", 203, ({keeper.pid}, 8, ctypes.byref(mask))),
            ("setpriority", 141, (0, {keeper.pid}, 19)),
            ("setpriority user", 141, (2, 0, nice)),
            ("setpriority self", 141, (0, 0, nice)),
            ("ioprio_set", 251, (1, {keeper.pid}, (2 << 13) | 4)),
        ):
            result = libc.syscall(nr, *args)
            print(name + ":", "ok" if result >= 0 else os.strerror(ctypes.get_errno()))
        """
    try:
        output = _confined(confine.options(deny_keyring=True), code)
    finally:
        keeper.kill()
        keeper.wait()
    said = dict(line.split(": ", 1) for line in output.splitlines())
    assert said.pop("prlimit64 self") == "ok"  # the control: its own limits
    assert said.pop("setpriority self") == "ok"
    assert said.pop("pidfd_open") == "Function not implemented"  # ENOSYS: programs fall back
    assert set(said.values()) == {"Operation not permitted"}, output


def test_a_command_starts_with_sigpipe_and_sigxfsz_at_their_default() -> None:
    """Python ignores both; the command must not inherit that (as `subprocess` restores them)."""
    done = subprocess.run(
        _restricted([], ["/bin/sh", "-c", "grep SigIgn /proc/self/status"]),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    ignored = int(done.stdout.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)), done.stdout
    assert not ignored & (1 << (signal.SIGXFSZ - 1)), done.stdout
