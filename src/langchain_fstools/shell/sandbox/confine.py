"""The confinement of one local command: what the session supervisor applies before `exec`.

The session supervisor (`shell.sandbox.supervisor`, a script) imports this file as a sibling and
confines each command's process before exec (`restrict_ahead` before its request, while
it waits for it, and `restrict_after` once its view is mounted; `restrict` is both at
once), so it imports only light standard-library modules. The options (`options`
builds them, `parse` reads them) say what `restrict` applies, in this order:

0. Limits (`restrict` applies them first): with `--oom-first`, `oom_score_adj` 1000
   (the command is the OOM killer's first choice, never the agent); `--memory`,
   `--processes`, `--cpu-seconds`, `--open-files`, `--file-size` set rlimits
   (`RLIMITS`; `--processes` only inside a user namespace, see `apply_rlimits`).
1. `no_new_privs`: nothing it runs can gain privileges (setuid binaries stay plain).
2. Landlock (`--landlock`), when the kernel has it: writes only beneath the
   `--writable` folders and to the `--writable-file` files; with `--hide`, reads
   everywhere except the hidden paths; TCP `bind`/`connect` refused (ABI 4+) without
   `--network`; abstract Unix sockets (unless `--unix-sockets`) and signals limited to
   its own processes (ABI 6+). `--required` makes a kernel without Landlock an error
   (exit 125) instead of a skipped layer. Without `--landlock`, `--scope-signals`
   limits only signals so (an unconfined command: `scope_signals`).
3. With `--drop-capabilities`, the bounding and inheritable capability sets are
   emptied, so the command has no capability even as uid 0 (`drop_capabilities`).
   A seccomp filter (`--deny-family N`, repeated; `--deny-keyring`): `socket()` of
   those families fails with EPERM; for `AF_UNIX` no path or abstract Unix socket can
   be created or connected, and `socketpair(AF_UNIX, SOCK_DGRAM)` fails too (a
   datagram socket can `sendto` any path); stream and seqpacket pairs still work
   (asyncio, Node), and being connected they refuse or ignore a destination. For
   `AF_INET`, `AF_INET6` and `AF_PACKET` no network socket of any protocol (Landlock's
   TCP rules miss UDP and ICMP); `AF_VSOCK` (40) leaves any network namespace, so it
   is denied without the network. `--deny-keyring` refuses `add_key`, `request_key`
   and `keyctl` (EPERM): the agent's kernel keyring stays out of reach. Whichever
   options install it (every sandboxed command has `--deny-keyring`), the filter lets
   nothing act on a process but the command's own, so its keeper and the supervisor
   keep what they need to end it: `prlimit64`, `sched_set*`, `migrate_pages` and
   `move_pages` only on the caller (pid 0), `setpriority` and `ioprio_set` only on the
   caller or its process group (`who` 0); `process_vm_readv`/`writev`, `kcmp`,
   `pidfd_getfd` and `process_madvise` are refused (EPERM), `pidfd_open` fails with
   ENOSYS (programs fall back to plain pids; signals and ptrace are Landlock's). And
   `io_uring_setup` fails with ENOSYS (io_uring could open sockets past the filter);
   system calls of another ABI (32-bit x86, x32) kill the process, so the filter cannot
   be stepped around. The filter is built here by hand (`seccomp_program`), a few
   classic-BPF instructions with labelled forward jumps.
A step that cannot be applied raises `ConfineError`; the supervisor then reports it in
one line and the command does not run (exit status 125, `FAILED`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import struct
from stat import S_ISDIR

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the helper starts with every command

FAILED = 125
"""The exit status when confinement could not be applied (the command did not run)."""

_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_MODE_FILTER = 2

# Landlock (linux/landlock.h); the system call numbers are the same on every architecture.
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_ALL = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_NET_ALL = (1 << 0) | (1 << 1)  # bind and connect TCP, ABI 4
_SCOPE_SIGNAL = 1 << 1
_SCOPE_ALL = (1 << 0) | _SCOPE_SIGNAL  # abstract Unix sockets and signals, ABI 6
_FILE_RIGHTS = _FS_WRITE_FILE | _FS_READ_FILE | _FS_EXECUTE | _FS_TRUNCATE
"""The rights a rule on a file (not a folder) may carry."""

# Seccomp: classic BPF over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
_ARCHES = {
    # machine: (AUDIT_ARCH_*, {system call: number})
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "socketpair": 53,
            "io_uring_setup": 425,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kcmp": 312,
            "pidfd_getfd": 438,
            "process_madvise": 440,
            "pidfd_open": 434,
            "prlimit64": 302,
            "sched_setaffinity": 203,
            "sched_setscheduler": 144,
            "sched_setparam": 142,
            "sched_setattr": 314,
            "migrate_pages": 256,
            "move_pages": 279,
            "setpriority": 141,
            "ioprio_set": 251,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "socketpair": 199,
            "io_uring_setup": 425,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kcmp": 272,
            "pidfd_getfd": 438,
            "process_madvise": 440,
            "pidfd_open": 434,
            "prlimit64": 261,
            "sched_setaffinity": 122,
            "sched_setscheduler": 119,
            "sched_setparam": 118,
            "sched_setattr": 274,
            "migrate_pages": 238,
            "move_pages": 239,
            "setpriority": 140,
            "ioprio_set": 30,
        },
    ),
}
_KEYRING_CALLS = ("add_key", "request_key", "keyctl")
OTHER_PROCESS_CALLS = (
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "process_madvise",
)
"""Refused outright (EPERM): each reads, writes or compares another process's memory or files."""
SELF_ONLY_CALLS = (
    "prlimit64",
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "migrate_pages",
    "move_pages",
)
"""Allowed only on the calling process (the pid argument 0), else EPERM."""
WHO_CALLS = {"setpriority": 2, "ioprio_set": 3}
"""Allowed only on the caller or its process group (`who` 0, `which` not the user's
number given here: `PRIO_USER`, `IOPRIO_WHO_USER`), else EPERM."""
_X32_BIT = 0x40000000
_AF_UNIX = 1
_AF_INET = 2
_AF_INET6 = 10
_AF_PACKET = 17
_SOCK_DGRAM = 2
_SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK and SOCK_CLOEXEC
_SIGKILL = 9
_PR_CAPBSET_DROP = 24
_CAP_LAST = 63
_CAPABILITY_V3 = 0x20080522
_EPERM = 1
_ENOSYS = 38
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_JA = 0x05  # BPF_JMP | BPF_JA
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
_ARG0, _ARG1 = 16, 24  # low words of the first two arguments (little-endian)
_Instruction = tuple[int, "int | str", "int | str", "int | str"]
"""One BPF instruction: op, jump if true, jump if false, k; a string jump names a label."""


Rlimit = tuple[str, int, int, int]
"""An rlimit to set: its name, its `resource` constant, the soft and hard values."""


class ConfineError(Exception):
    """A confinement step could not be applied; the message says which and why."""


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    """The C library, loaded once per process (forked processes inherit it)."""
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise ConfineError(f"{what} failed: {os.strerror(code)}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    version = _libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def seccomp_program(
    families: tuple[int, ...] = (_AF_UNIX,), machine: str | None = None, *, keyring: bool = False
) -> bytes:
    """The seccomp filter of step 3, as `struct sock_filter` records.

    Besides the options below, the filter always keeps the command to its own
    processes (`OTHER_PROCESS_CALLS`, `SELF_ONLY_CALLS`, `WHO_CALLS`, `pidfd_open`).

    Args:
        families: Address families `socket()` refuses (EPERM). With `AF_UNIX` among
            them, `socketpair(AF_UNIX, SOCK_DGRAM)` is refused too: a datagram socket
            can `sendto` any path. Default: `AF_UNIX`.
        machine: `uname -m` of the target. Default: this machine's.
        keyring: Also refuse `add_key`, `request_key` and `keyctl` (EPERM). Default: False.

    Raises:
        ConfineError: no filter is known for the architecture.
    """
    machine = machine or os.uname().machine
    if machine not in _ARCHES:
        raise ConfineError(f"no seccomp filter for the {machine} architecture")
    arch, calls = _ARCHES[machine]
    code: list[_Instruction | str] = [
        (_LD_ABS, 0, 0, 4),  # arch
        (_JEQ, 0, "kill", arch),  # another ABI: kill
        (_LD_ABS, 0, 0, 0),  # system call number
        (_JGE, "kill", 0, _X32_BIT),  # x32 numbering: kill
        (_JEQ, "enosys", 0, calls["io_uring_setup"]),
        (_JEQ, "enosys", 0, calls["pidfd_open"]),
        *[(_JEQ, "eperm", 0, calls[name]) for name in OTHER_PROCESS_CALLS],
        *[(_JEQ, "self", 0, calls[name]) for name in SELF_ONLY_CALLS],
        *[(_JEQ, f"who{name}", 0, calls[name]) for name in WHO_CALLS],
    ]
    if keyring:
        code += [(_JEQ, "eperm", 0, calls[name]) for name in _KEYRING_CALLS]
    if _AF_UNIX in families:
        code.append((_JEQ, "pair", 0, calls["socketpair"]))
    code += [(_JEQ, 0, "allow", calls["socket"]), (_LD_ABS, 0, 0, _ARG0)]
    code += [(_JEQ, "eperm", 0, family) for family in families]
    code.append((_JA, 0, 0, "allow"))
    if _AF_UNIX in families:
        code += [
            "pair",
            (_LD_ABS, 0, 0, _ARG0),
            (_JEQ, 0, "allow", _AF_UNIX),
            (_LD_ABS, 0, 0, _ARG1),
            (_AND, 0, 0, _SOCK_TYPE_MASK),
            (_JEQ, "eperm", "allow", _SOCK_DGRAM),
        ]
    code += ["self", (_LD_ABS, 0, 0, _ARG0), (_JEQ, "allow", "eperm", 0)]
    for name, user in WHO_CALLS.items():
        code += [f"who{name}", (_LD_ABS, 0, 0, _ARG0), (_JEQ, "eperm", "who", user)]
    code += ["who", (_LD_ABS, 0, 0, _ARG1), (_JEQ, "allow", "eperm", 0)]
    code += [
        "allow",
        (_RET, 0, 0, _RET_ALLOW),
        "eperm",
        (_RET, 0, 0, _RET_ERRNO | _EPERM),
        "enosys",
        (_RET, 0, 0, _RET_ERRNO | _ENOSYS),
        "kill",
        (_RET, 0, 0, _RET_KILL_PROCESS),
    ]
    return _assemble(code)


def _assemble(code: list[_Instruction | str]) -> bytes:
    """BPF records from instructions whose jumps name a label (a string in `code`).

    Jumps only go forward: a label's offset is counted from the next instruction.
    """
    labels: dict[str, int] = {}
    instructions: list[_Instruction] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    records = []
    for index, (op, true, false, k) in enumerate(instructions):
        jumps = [labels[j] - index - 1 if isinstance(j, str) else j for j in (true, false, k)]
        records.append(struct.pack("=HBBI", op, *jumps))
    return b"".join(records)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install_seccomp(families: tuple[int, ...], *, keyring: bool = False) -> None:
    """Install the filter of `seccomp_program` on this process (needs no_new_privs)."""
    program = _PREPARED.get(("seccomp", keyring, *families))
    if not isinstance(program, bytes):
        program = seccomp_program(families, keyring=keyring)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = _libc()
    _check(
        libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
        "installing the seccomp filter",
    )


def drop_capabilities() -> None:
    """Empty the bounding, inheritable and ambient capability sets (root keeps none).

    After this, a program started as uid 0 gets no capabilities: they are granted on
    `exec` only through the bounding set. Without privileges it is a no-op.
    """
    libc = _libc()
    if not _PREPARED.get("bounding"):
        _drop_bounding(libc)
    header = struct.pack("=Ii", _CAPABILITY_V3, 0)
    current = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable} words
    _check(libc.capget(header, current), "reading capabilities")
    current[2] = current[5] = 0
    _check(libc.capset(header, current), "dropping inheritable capabilities")


def _drop_bounding(libc: ctypes.CDLL) -> None:
    """Empty the bounding set (what `exec` may grant): effective capabilities stay."""
    for capability in range(_CAP_LAST + 1):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) < 0:
            code = ctypes.get_errno()
            if code == errno.EINVAL:
                break  # past the kernel's last capability
            if code != errno.EPERM:
                raise ConfineError(f"dropping capabilities failed: {os.strerror(code)}")


def _readable(hidden: list[str]) -> list[str]:
    """Paths whose subtrees together cover the file system except `hidden`.

    Walked by real paths only: a link is left out (what it leads to is covered where
    it is), so a link to `/` or to a parent cannot send the walk round in a loop.
    """
    hidden_set = {os.path.realpath(path) for path in hidden}
    found: list[str] = []

    def visit(directory: str) -> None:
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                continue  # its target is covered where it really is (a link to / loops)
            real = os.path.realpath(path)
            if real in hidden_set or any(real.startswith(h + "/") for h in hidden_set):
                continue
            if any(h.startswith(real.rstrip("/") + "/") for h in hidden_set):
                if os.path.isdir(real):
                    visit(real)
                continue
            found.append(real)

    visit("/")
    return found


def apply_landlock(spec: Spec) -> bool:
    """Restrict this process as `spec` says (step 2); False when the kernel lacks Landlock.

    Raises:
        ConfineError: a rule could not be added or the ruleset not enforced.
    """
    prepared = _PREPARED.get("ruleset")
    if isinstance(prepared, int):
        restrict_to(prepared)
        return True
    ruleset = landlock_ruleset(spec)
    if ruleset is None:
        return False
    try:
        restrict_to(ruleset)
    finally:
        os.close(ruleset)
    return True


def _write_rights(abi: int) -> int:
    """Every right to change the file system that Landlock ABI `abi` knows."""
    writes = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE_ALL
    return writes | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)  # noqa: PLR2004


def landlock_ruleset(spec: Spec, skip: list[str] | None = None) -> int | None:
    """The Landlock ruleset of `spec` (a close-on-exec descriptor), or None without Landlock.

    `skip`: writable paths whose rules are left out (`add_writable` adds them later).

    Raises:
        ConfineError: a rule could not be added.
    """
    abi = landlock_abi()
    if abi < 1:
        return None
    writes = _write_rights(abi)
    reads = _FS_READ_FILE | _FS_READ_DIR | _FS_EXECUTE if spec.lists["hide"] else 0
    net = _NET_ALL if abi >= 4 and not spec.flags["network"] else 0  # noqa: PLR2004
    scope = _SCOPE_ALL if abi >= 6 else 0  # noqa: PLR2004
    if spec.flags["unix_sockets"]:
        scope &= ~1
    attr = struct.pack("=QQQ", writes | reads, net, scope)
    size = 8 if abi < 4 else 16 if abi < 6 else 24  # noqa: PLR2004
    libc = _libc()
    ruleset = _check(
        libc.syscall(_SYS_CREATE_RULESET, attr[:size], size, 0), "creating the Landlock ruleset"
    )
    try:
        skipped = set(skip or ())
        add_writable(spec, ruleset, [path for path in _writable(spec) if path not in skipped])
        if reads:
            for path in _readable(spec.lists["hide"]):
                _add_path_rule(libc, ruleset, path, reads)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _writable(spec: Spec) -> list[str]:
    return [*spec.lists["writable"], *spec.lists["writable_file"]]


def add_writable(spec: Spec, ruleset: int, paths: list[str]) -> None:
    """Add `spec`'s rules for the writable `paths` to `ruleset`, as they resolve now.

    Raises:
        ConfineError: a rule could not be added.
    """
    rights = _write_rights(landlock_abi())
    if spec.lists["hide"]:
        rights |= _FS_READ_FILE | _FS_READ_DIR | _FS_EXECUTE
    libc = _libc()
    for path in paths:
        _add_path_rule(libc, ruleset, path, rights)


def scope_signals() -> bool:
    """Let this process signal only its own Landlock domain (ABI 6+); False without it.

    Nothing else is restricted: what an unconfined command (`sandbox=None`) gets, so
    it cannot kill the keeper that ends what it leaves behind.

    Raises:
        ConfineError: the ruleset could not be enforced.
    """
    if landlock_abi() < 6:  # noqa: PLR2004 - scoping came with ABI 6
        return False
    attr = struct.pack("=QQQ", 0, 0, _SCOPE_SIGNAL)
    libc = _libc()
    ruleset = _check(
        libc.syscall(_SYS_CREATE_RULESET, attr, len(attr), 0), "creating the Landlock ruleset"
    )
    try:
        restrict_to(ruleset)
    finally:
        os.close(ruleset)
    return True


def _add_path_rule(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # absent: nothing to allow there
    try:
        _add_rule(libc, ruleset, descriptor, access)
    finally:
        os.close(descriptor)


def _add_rule(libc: ctypes.CDLL, ruleset: int, descriptor: int, access: int) -> None:
    """Allow `access` beneath the open `descriptor` (only file rights on a file)."""
    if not S_ISDIR(os.fstat(descriptor).st_mode):
        access &= _FILE_RIGHTS
    rule = struct.pack("=Qi", access, descriptor)
    _check(
        libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0),
        "adding a Landlock rule",
    )


LOADER_FOLDERS = (
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
)
"""What a dynamically linked program reads before `main`: a program under
`read_only_ruleset` may read and run files beneath these (never list them), besides its
own executable."""


def read_only_ruleset(
    readable: int,
    runnable: list[str],
    libraries: list[str] = [],  # noqa: B006 - never changed
) -> int | None:
    """A Landlock ruleset allowing reads beneath `readable` and running `runnable` only.

    Every file system right the kernel knows is handled, so a process restricted by it
    writes nowhere, reads files and lists folders only beneath the open folder
    `readable`, and reads and runs files only beneath the `runnable` paths (an
    executable and the folders its loader reads; absent ones are skipped), and beneath
    the `libraries` paths also lists folders (an interpreter's standard library, whose
    imports list their folders). Enforce it with `restrict_to`; it may be enforced by
    any number of processes.

    Returns:
        The ruleset's descriptor (close-on-exec), or None when the kernel lacks Landlock.

    Raises:
        ConfineError: a rule could not be added.
    """
    abi = landlock_abi()
    if abi < 1:
        return None
    writes = _write_rights(abi)
    reads = _FS_READ_FILE | _FS_READ_DIR
    attr = struct.pack("=Q", writes | reads | _FS_EXECUTE)
    libc = _libc()
    ruleset = _check(
        libc.syscall(_SYS_CREATE_RULESET, attr, len(attr), 0), "creating the Landlock ruleset"
    )
    try:
        _add_rule(libc, ruleset, readable, reads)
        for path in runnable:
            _add_path_rule(libc, ruleset, path, _FS_READ_FILE | _FS_EXECUTE)
        for path in libraries:
            _add_path_rule(libc, ruleset, path, reads | _FS_EXECUTE)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def restrict_to(ruleset: int) -> None:
    """Set no_new_privs and enforce the Landlock `ruleset` on this process for good.

    Raises:
        ConfineError: the kernel refused.
    """
    libc = _libc()
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")
    _check(libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), "enforcing the Landlock ruleset")


def descendants() -> list[int]:
    """Every process below this one: its children, theirs, and so on.

    Read from each thread's `children` file in /proc (only this subtree is read), or,
    where the kernel has none, from the parent of every process on the machine.
    """
    try:
        return _subtree(os.getpid())
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN
        return _scanned()


def _subtree(root: int) -> list[int]:
    found: list[int] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            if pid == root:
                raise FileNotFoundError(pid) from None
            continue  # gone meanwhile
        for thread in threads:
            try:
                with open(f"/proc/{pid}/task/{thread}/children", "rb") as listing:
                    children = [int(child) for child in listing.read().split()]
            except FileNotFoundError:
                if pid == root:
                    raise
                continue
            except OSError:
                continue
            found += children
            pending += children
    return found


def _scanned() -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [os.getpid()]
    while pending:
        children = parents.get(pending.pop(), [])
        found += children
        pending += children
    return found


def kill_descendants() -> None:
    """SIGKILL every process below this one, and reap them, until none is left.

    A process with no child has nothing below it (what a child leaves behind becomes
    its child, for a subreaper, before that child can be reaped; else it is no
    longer below), so that is asked first, without reading /proc.
    """
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue  # one reaped: ask again
        except ChildProcessError:
            return
        for pid in descendants():
            try:  # noqa: SIM105 - contextlib costs the helper's start-up time
                os.kill(pid, _SIGKILL)
            except ProcessLookupError:
                pass
        try:  # noqa: SIM105 - contextlib costs the helper's start-up time
            os.waitpid(-1, 0)
        except ChildProcessError:
            pass


FLAGS = (
    "drop-capabilities",
    "scope-signals",
    "landlock",
    "required",
    "network",
    "unix-sockets",
    "deny-keyring",
    "oom-first",
)
"""Options without a value."""
RLIMITS = {
    "memory": "RLIMIT_DATA",
    "processes": "RLIMIT_NPROC",
    "cpu-seconds": "RLIMIT_CPU",
    "open-files": "RLIMIT_NOFILE",
    "file-size": "RLIMIT_FSIZE",
}
"""The limit options (a number each, the last one given counts) and the rlimit each sets."""
LISTS = ("deny-family", "writable", "writable-file", "hide", *RLIMITS)
"""Options with a value, each given as often as needed."""


class Spec:
    """Parsed options: `flags` (set or not) and `lists` (the values of each option).

    Keys are the option names with `_` for `-` (`drop_capabilities`, `writable_file`).
    """

    def __init__(self) -> None:
        """No flag set, no value given."""
        self.flags = {name.replace("-", "_"): False for name in FLAGS}
        self.lists: dict[str, list[str]] = {name.replace("-", "_"): [] for name in LISTS}


def options(**given: bool | list[str] | list[int]) -> list[str]:
    """The helper's options, from keywords named as the options (`_` for `-`).

    Example: `options(landlock=True, writable=["/w"])` is
    `["--landlock", "--writable", "/w"]`.
    """
    found: list[str] = []
    for key, value in given.items():
        name = key.replace("_", "-")
        if name in FLAGS:
            found += [f"--{name}"] if value else []
        elif name in LISTS and isinstance(value, list):
            for item in value:
                found += [f"--{name}", str(item)]
        else:
            raise ValueError(f"unknown confinement option {key!r}")
    return found


def parse(arguments: list[str]) -> tuple[Spec, list[str]]:
    """The options before `--` and the command after it."""
    spec = Spec()
    index = 0
    while index < len(arguments) and arguments[index] != "--":
        name = arguments[index].removeprefix("--")
        key = name.replace("-", "_")
        if name in FLAGS:
            spec.flags[key] = True
            index += 1
        elif name in LISTS and index + 1 < len(arguments):
            spec.lists[key].append(arguments[index + 1])
            index += 2
        else:
            raise ConfineError(f"unknown option {arguments[index]!r}")
    return spec, arguments[index + 1 :]


def make_oom_first() -> None:
    """Make this process (and what it starts) the OOM killer's first choice (score 1000).

    Raising one's own `oom_score_adj` needs no privilege; it is inherited on fork.
    """
    descriptor = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(descriptor, b"1000")
    finally:
        os.close(descriptor)


def apply_rlimits(spec: Spec) -> None:
    """Set the rlimits the limit options ask for (`RLIMITS`), soft and hard alike.

    A hard limit is never raised above the current one (an unprivileged process may
    not). `--cpu-seconds N` sends SIGXCPU at N seconds of CPU and SIGKILL a second
    later. `--processes` counts the tasks of the user and is set only inside a user
    namespace: in the host's namespace the kernel ignores it for root, and for
    another user it would count every process that user runs on the machine.
    """
    _set_rlimits(rlimit_values(spec))


def rlimit_values(spec: Spec) -> list[Rlimit]:
    """The rlimits `apply_rlimits` sets: (name, `resource` constant, soft, hard) each.

    Raises:
        ConfineError: a value is not a number.
    """
    given = {name: spec.lists[option.replace("-", "_")] for option, name in RLIMITS.items()}
    if not any(given.values()):
        return []
    import resource  # noqa: PLC0415 - only when a limit is given

    found: list[Rlimit] = []
    for name, values in given.items():
        if not values or (name == "RLIMIT_NPROC" and not _in_user_namespace()):
            continue
        which = getattr(resource, name)
        try:
            value = int(values[-1])
            hard = resource.getrlimit(which)[1]
        except (OSError, ValueError) as exc:
            raise ConfineError(f"setting {name} to {values[-1]!r} failed: {exc}") from None
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        grace = name == "RLIMIT_CPU" and (hard == resource.RLIM_INFINITY or value < hard)
        found.append((name, which, value, value + 1 if grace else value))
    return found


def _set_rlimits(limits: list[Rlimit]) -> None:
    if not limits:
        return
    import resource  # noqa: PLC0415 - imported already by `rlimit_values`

    for name, which, soft, hard in limits:
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError) as exc:
            raise ConfineError(f"setting {name} to {soft} failed: {exc}") from None


def _in_user_namespace() -> bool:
    """Whether this process runs in a user namespace other than the host's."""
    with open("/proc/self/uid_map", "rb") as uid_map:
        return uid_map.read().split() != [b"0", b"0", b"4294967295"]


_PREPARED: dict[object, object] = {}
"""What `prepare` did once for the processes this one forks (they inherit it)."""


def prepare(spec: Spec) -> None:
    """Do once what `restrict(spec)` would repeat in every process this one forks.

    For a process that starts many commands (the session supervisor): the seccomp
    program is computed, `resource` imported, the Landlock ruleset built where no
    command mounts a view of its own (with `--hide`: Landlock alone; a view must be
    mounted before its rules are made), and the bounding set emptied here (its own
    effective capabilities stay, so it may still mount); each `restrict` then finds
    them done.

    Raises:
        ConfineError: no seccomp filter for this architecture.
    """
    _libc()
    if any(spec.lists[option.replace("-", "_")] for option in RLIMITS):
        import resource  # noqa: F401, PLC0415 - imported now, found by `apply_rlimits`
    families = tuple(int(family) for family in spec.lists["deny_family"])
    keyring = spec.flags["deny_keyring"]
    if families or keyring:
        _PREPARED[("seccomp", keyring, *families)] = seccomp_program(families, keyring=keyring)
    if spec.flags["landlock"] and spec.lists["hide"]:  # Landlock alone: no view per command
        try:
            ruleset = landlock_ruleset(spec)
        except ConfineError:  # a folder changed while it was walked: each command builds it
            ruleset = None
        if ruleset is not None:
            _PREPARED["ruleset"] = ruleset
    if spec.flags["drop_capabilities"]:
        _drop_bounding(_libc())
        _PREPARED["bounding"] = True


def restrict(spec: Spec) -> None:
    """Apply steps 1 to 3 of `spec` to this process (every confinement but reaping).

    Before them: with `--oom-first`, the process becomes the OOM killer's first
    choice (`make_oom_first`), and the limit options set rlimits (`apply_rlimits`).
    The same as `restrict_ahead`, then `restrict_after` with nothing mounted between.

    Raises:
        ConfineError: a step could not be applied.
    """
    restrict_after(spec, restrict_ahead(spec))


class Ahead:
    """What `restrict_ahead` did, for `restrict_after` to finish.

    Attributes:
        ruleset: The Landlock ruleset begun, or None (no Landlock, or not begun).
        added: The writable paths whose rules it holds (as they resolved then).
        rlimits: The rlimits to set (`rlimit_values`).
    """

    def __init__(self, ruleset: int | None, added: list[str], rlimits: list[Rlimit]) -> None:
        """Hold what was done ahead."""
        self.ruleset = ruleset
        self.added = added
        self.rlimits = rlimits


def restrict_ahead(spec: Spec, later: list[str] = ()) -> Ahead:  # type: ignore[assignment]
    """Apply the part of `restrict(spec)` that no mount made afterwards changes.

    For a command's process forked before its request (`shell.sandbox.supervisor`), which then
    mounts the command's view: no_new_privs and the seccomp filter are applied now, the
    rlimits computed, and the Landlock ruleset begun with the rules
    of the writable paths not at or beneath a path in `later` (where mounts may come).

    Raises:
        ConfineError: a step could not be applied.
    """
    rlimits = rlimit_values(spec)
    _check(_libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")
    families = tuple(int(family) for family in spec.lists["deny_family"])
    if families or spec.flags["deny_keyring"]:
        install_seccomp(families, keyring=spec.flags["deny_keyring"])
    if not spec.flags["landlock"] or isinstance(_PREPARED.get("ruleset"), int):
        return Ahead(None, [], rlimits)
    added = [path for path in _writable(spec) if not any(_beneath(path, top) for top in later)]
    ruleset = landlock_ruleset(spec, skip=[path for path in _writable(spec) if path not in added])
    if ruleset is None and spec.flags["required"]:
        raise ConfineError("the kernel has no Landlock")
    return Ahead(ruleset, added if ruleset is not None else [], rlimits)


RESTORED_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
"""Signals Python ignores at start-up and a command expects at their default (as
`subprocess` restores them): `yes | head -1` ends quietly, a write past `--file-size`
kills the writer (SIGXFSZ) instead of failing unseen."""


def restore_signals() -> None:
    """Put `RESTORED_SIGNALS` back to their default action, as the command expects."""
    for signum in RESTORED_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def restrict_after(spec: Spec, ahead: Ahead, mounted: list[str] = ()) -> None:  # type: ignore[assignment]
    """Finish what `restrict_ahead` began, after mounts at the paths `mounted`.

    The OOM score is set (once the process is dumpable: an unprivileged one may then
    write its own `/proc` files), the Landlock rules left out are added and the ruleset
    enforced (built anew when a
    rule added ahead lies at or beneath a path mounted since), the capabilities
    dropped, the rlimits set and the signals Python ignores restored (`restore_signals`).

    Raises:
        ConfineError: a step could not be applied.
    """
    if spec.flags["oom_first"]:
        make_oom_first()
    if spec.flags["landlock"]:
        ruleset = ahead.ruleset
        if ruleset is not None and any(
            _beneath(path, top) for path in ahead.added for top in mounted
        ):
            os.close(ruleset)  # a rule on what the mount now covers: all of them again
            ruleset = landlock_ruleset(spec)
        elif ruleset is not None:
            add_writable(spec, ruleset, [p for p in _writable(spec) if p not in ahead.added])
        if ruleset is not None:
            restrict_to(ruleset)
        elif not apply_landlock(spec) and spec.flags["required"]:
            raise ConfineError("the kernel has no Landlock")
    elif spec.flags["scope_signals"]:
        scope_signals()
    if spec.flags["drop_capabilities"]:
        drop_capabilities()
    _set_rlimits(ahead.rlimits)
    restore_signals()


def _beneath(path: str, top: str) -> bool:
    """Whether `path` is `top` or lies beneath it (by name)."""
    top = top.rstrip("/")
    return path.rstrip("/") == top or path.startswith(top + "/")


__all__ = [
    "FAILED",
    "FLAGS",
    "LISTS",
    "LOADER_FOLDERS",
    "OTHER_PROCESS_CALLS",
    "RESTORED_SIGNALS",
    "RLIMITS",
    "SELF_ONLY_CALLS",
    "WHO_CALLS",
    "Ahead",
    "ConfineError",
    "Spec",
    "add_writable",
    "apply_landlock",
    "apply_rlimits",
    "descendants",
    "drop_capabilities",
    "install_seccomp",
    "kill_descendants",
    "landlock_abi",
    "landlock_ruleset",
    "make_oom_first",
    "options",
    "parse",
    "prepare",
    "read_only_ruleset",
    "restore_signals",
    "restrict",
    "restrict_after",
    "restrict_ahead",
    "restrict_to",
    "rlimit_values",
    "scope_signals",
    "seccomp_program",
]
