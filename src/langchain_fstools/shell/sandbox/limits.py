"""Resource limits of sandboxed commands: what they are, and the cgroups that hold them.

`Limits` is the configuration (`Sandbox(limits=Limits(...))`). Each limit is enforced
by what this machine has, every layer that applies:

1. **rlimits**, set by the confinement helper in each command (`confine.apply_rlimits`):
   `memory` per process (`RLIMIT_DATA`: heap and private writable mappings, so a
   reserved but unused address space, as V8 and Go make, does not count),
   `cpu_seconds` (`RLIMIT_CPU`), `open_files` (`RLIMIT_NOFILE`), `file_size`
   (`RLIMIT_FSIZE`), and `processes` (`RLIMIT_NPROC`) inside bubblewrap's user
   namespace, where it counts the sandbox's tasks (not for a root agent: the kernel
   exempts uid 0).
2. **A cgroup for the command's whole tree** (`CgroupSet`), where one can be made: a
   cgroup v2 child of this process's cgroup when that is delegated (writable, with the
   `memory` and `pids` controllers), else cgroup v1 `memory` and `pids` children (as
   root). `memory` then bounds the sum of the tree, tmpfs pages it wrote included, and
   `processes` its tasks; the kernel's OOM killer acts inside the cgroup.
3. **Sized tmpfs mounts** (bubblewrap): `/tmp`, `/dev/shm` and every mask are tmpfs of
   at most `tmp_size` bytes; a full one fails writes with ENOSPC.

Every sandboxed process is also the OOM killer's first choice (`oom_score_adj` 1000),
so a command that exhausts the machine's memory is killed, never the agent.
`limit_hit` names the limit a command hit, from the cgroup's events and its exit status.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import stat
import time
from dataclasses import dataclass, field, fields
from typing import Final, Literal

from langchain_fstools.core.results import LimitHit

GiB: Final = 1 << 30
MiB: Final = 1 << 20

MINIMUMS: Final = {
    "memory": 32 * MiB,
    "processes": 8,
    "cpu_seconds": 1,
    "open_files": 32,
    "tmp_size": MiB,
    "file_size": 1,
    "changed_bytes": 64 * 1024,
}
"""The least each limit may be set to: below it the sandbox's helper cannot start."""

CHANGED_EVERY: Final = 0.25
"""Least seconds between two checks of a command's upper layer (`ChangedBytes`)."""

_REMOVE_GRACE = 2.0
"""Seconds `CgroupSet.remove` waits for the cgroup's last processes to be reaped."""
_REMOVE_POLL = 0.0005
"""Seconds between its tries: bubblewrap's last processes end within a millisecond or two
of bubblewrap itself, and the command's result waits for the removal."""


def default_memory() -> int:
    """Half of this machine's memory, at most 4 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 4 * GiB
    return max(min(4 * GiB, total // 2), MINIMUMS["memory"])


@dataclass(frozen=True)
class Limits:
    """How much one sandboxed command may use (see the module docstring for how).

    A limit set to None is not set. Every limit is per command.

    Args:
        memory: Bytes of memory: per process (`RLIMIT_DATA`), and for the whole
            command where a cgroup can be made. Default: half of the machine's memory,
            at most 4 GiB.
        processes: Processes and threads at once, where a cgroup or a user
            namespace holds them. Default: 1024.
        cpu_seconds: Seconds of CPU time per process (SIGXCPU, then SIGKILL a second
            later). Default: None (the command's timeout bounds it).
        open_files: Open file descriptors per process. Default: 4096.
        tmp_size: Bytes of each tmpfs the sandbox mounts (`/tmp`, `/dev/shm`, the
            masks), with bubblewrap. Default: 1 GiB.
        file_size: Bytes of any one file a command writes (SIGXFSZ beyond).
            Default: None.
        changed_bytes: Bytes of disk all that a command writes into its copy-on-write
            view of the workspace may take (its upper layer, on the host's disk): the
            command is stopped past it and nothing it changed is kept. Default: 4 GiB.

    Raises:
        ValueError: a limit is not a whole number, or below its minimum (`MINIMUMS`).

    Example:
        `LocalBackend(root, execute=True, sandbox=Sandbox(limits=Limits(memory=8 * GiB)))`
    """

    memory: int | None = field(default_factory=default_memory)
    processes: int | None = 1024
    cpu_seconds: int | None = None
    open_files: int | None = 4096
    tmp_size: int | None = GiB
    file_size: int | None = None
    changed_bytes: int | None = 4 * GiB

    def __post_init__(self) -> None:
        """Refuse values that are not whole numbers at least their minimum."""
        for name, least in MINIMUMS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"Limits({name}=...) takes a whole number or None; got {value!r}")  # noqa: TRY004
            if value < least:
                raise ValueError(f"Limits({name}=...) must be at least {least:,}; got {value:,}")

    def confine_options(self) -> dict[str, list[str]]:
        """The confinement helper's limit options (`confine.RLIMITS`) for these limits."""
        named = {"memory", "processes", "cpu_seconds", "open_files", "file_size"}
        return {
            f.name: [str(getattr(self, f.name))]
            for f in fields(self)
            if f.name in named and getattr(self, f.name) is not None
        }


# ----- cgroups ----------------------------------------------------------------------------

Kind = Literal["v2", "v1"]
"""Which cgroup hierarchy holds a command: a delegated v2 leaf, or v1 controllers."""

_SEQUENCE = itertools.count()

_CGROUP_PREFIX: Final = "fstools-"
"""A command's cgroups are `fstools-{agent pid}-{number}`."""


@functools.cache
def _mounts() -> dict[str, str]:
    """Where each cgroup hierarchy is mounted: `"v2"`, and v1 `"memory"`, `"pids"`."""
    found: dict[str, str] = {}
    for line in _lines("/proc/self/mountinfo"):
        before, _, after = line.partition(" - ")
        point, (kind, _, options) = before.split()[4], after.split()[:3]
        if kind == "cgroup2":
            found.setdefault("v2", point)
        elif kind == "cgroup":
            for controller in ("memory", "pids"):
                if controller in options.split(","):
                    found.setdefault(controller, point)
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path in each hierarchy (`"v2"`, `"memory"`, `"pids"`)."""
    found: dict[str, str] = {}
    for line in _lines("/proc/self/cgroup"):
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            found["v2"] = path
        for controller in controllers.split(","):
            if controller in {"memory", "pids"}:
                found[controller] = path
    return found


def _lines(path: str) -> list[str]:
    """The lines of a small kernel file; none when it cannot be read.

    Read with one `os.read` (these files fit in a page or a few): the counters are read
    twice per command, and a text-mode file object costs twice that.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        chunks = []
        while chunk := os.read(descriptor, 1 << 16):
            chunks.append(chunk)
    except OSError:
        return []
    finally:
        os.close(descriptor)
    return b"".join(chunks).decode("utf-8", "replace").splitlines()


def _write(path: str, value: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(descriptor, value.encode())
    finally:
        os.close(descriptor)


def _counters(path: str) -> dict[str, int]:
    """A flat-keyed cgroup file (`memory.events`, `pids.events`) as a dict; {} if unreadable."""
    pairs = [line.split() for line in _lines(path)]
    return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}  # noqa: PLR2004


@dataclass
class CgroupSet:
    """The cgroups one command's process tree runs in, made for it and removed after.

    Use: `cgroups = CgroupSet.create(limits)` (None where no cgroup can be made),
    `cgroups.place(pid)` as soon as the command's first process exists, then
    `cgroups.events()` once it ended, and `cgroups.remove()`.

    Attributes:
        kind: `"v2"` (one delegated leaf) or `"v1"` (memory and pids children).
        folders: The cgroup folders made, by controller (`"v2"`, `"memory"`, `"pids"`).
    """

    kind: Kind
    folders: dict[str, str]

    @classmethod
    def create(cls, limits: Limits) -> CgroupSet | None:
        """Cgroups holding `limits.memory` and `limits.processes`, or None.

        None when neither limit is set or no cgroup can be made here (no delegated v2
        cgroup, and not root for v1).
        """
        if limits.memory is None and limits.processes is None:
            return None
        name = f"{_CGROUP_PREFIX}{os.getpid()}-{next(_SEQUENCE)}"
        mounts, own = _mounts(), _own_cgroups()
        if "v2" in mounts and "v2" in own:
            made = _make_v2(os.path.join(mounts["v2"], own["v2"].lstrip("/"), name), limits)
            if made is not None:
                return cls("v2", {"v2": made})
        folders: dict[str, str] = {}
        for controller, setting, value in (
            ("memory", "memory.limit_in_bytes", limits.memory),
            ("pids", "pids.max", limits.processes),
        ):
            if value is None or controller not in mounts or controller not in own:
                continue
            folder = os.path.join(mounts[controller], own[controller].lstrip("/"), name)
            if _make(folder, {setting: str(value)}):
                folders[controller] = folder
        return cls("v1", folders) if folders else None

    @property
    def controllers(self) -> list[str]:
        """The limits these cgroups hold: `memory`, `processes`."""
        if self.kind == "v2":
            return ["memory", "processes"]
        return [{"memory": "memory", "pids": "processes"}[c] for c in self.folders]

    def place(self, pid: int) -> None:
        """Move `pid` and every process below it into these cgroups.

        Its children are moved after it, so one forked meanwhile is either found or
        born inside: none escapes. A process already gone is skipped.
        """
        pending = [pid]
        while pending:
            current = pending.pop()
            for folder in self.folders.values():
                with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                    _write(os.path.join(folder, "cgroup.procs"), str(current))
            pending += _children(current)

    def counts(self) -> dict[str, int]:
        """How often each limit bit so far: `memory` (OOM kills), `processes` (forks refused)."""
        if self.kind == "v2":
            memory = _counters(os.path.join(self.folders["v2"], "memory.events"))
            pids = _counters(os.path.join(self.folders["v2"], "pids.events"))
        else:
            memory = _counters(os.path.join(self.folders.get("memory", ""), "memory.oom_control"))
            pids = _counters(os.path.join(self.folders.get("pids", ""), "pids.events"))
        return {"memory": memory.get("oom_kill", 0), "processes": pids.get("max", 0)}

    def events(self) -> list[str]:
        """The limits the tree hit so far: `memory` (OOM kill), `processes` (fork refused)."""
        return [name for name, count in self.counts().items() if count > 0]

    def remove(self) -> None:
        """Kill what is left in these cgroups and remove them (best effort)."""
        until = time.monotonic() + _REMOVE_GRACE
        for folder in self.folders.values():
            while True:
                for pid in _members(folder):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() >= until:
                        break
                    time.sleep(_REMOVE_POLL)


def remove_dead_cgroups() -> None:
    """Remove the cgroups that commands of agents no longer running left behind.

    A cgroup is this package's (`fstools-{pid}-{n}`, beside the ones `CgroupSet.create`
    makes), owned by this user, and its agent process `pid` is gone (a killed agent
    never removes its own); what still runs in it is killed first. Best effort.
    """
    mounts, own = _mounts(), _own_cgroups()
    for controller in ("v2", "memory", "pids"):
        if controller not in mounts or controller not in own:
            continue
        parent = os.path.join(mounts[controller], own[controller].lstrip("/"))
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            owner = name.removeprefix(_CGROUP_PREFIX).partition("-")[0]
            if not name.startswith(_CGROUP_PREFIX) or not owner.isdigit() or running(int(owner)):
                continue
            folder = os.path.join(parent, name)
            with contextlib.suppress(OSError):
                if os.lstat(folder).st_uid == os.geteuid():
                    CgroupSet("v2" if controller == "v2" else "v1", {controller: folder}).remove()


def running(pid: int) -> bool:
    """Whether process `pid` exists (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _make(folder: str, settings: dict[str, str]) -> bool:
    """Make the cgroup `folder` with `settings`; False (and nothing left) if it cannot be."""
    try:
        os.mkdir(folder)
    except OSError:
        return False
    try:
        for setting, value in settings.items():
            _write(os.path.join(folder, setting), value)
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
        return False
    return True


def _make_v2(folder: str, limits: Limits) -> str | None:
    """A delegated v2 leaf with the memory and pids controllers, or None."""
    parent = os.path.dirname(folder)
    enabled = " ".join(_lines(os.path.join(parent, "cgroup.subtree_control"))).split()
    if "memory" not in enabled or "pids" not in enabled:
        return None
    settings: dict[str, str] = {}
    if limits.memory is not None:
        settings["memory.max"] = str(limits.memory)
    if limits.processes is not None:
        settings["pids.max"] = str(limits.processes)
    return folder if _make(folder, settings) else None


def _children(pid: int) -> list[int]:
    """The children of every thread of `pid` (empty once it is gone)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        found += [
            int(child)
            for line in _lines(f"/proc/{pid}/task/{thread}/children")
            for child in line.split()
        ]
    return found


def _members(folder: str) -> list[int]:
    return [int(line) for line in _lines(os.path.join(folder, "cgroup.procs")) if line.strip()]


@functools.cache
def cgroup_support() -> str:
    """Which cgroups hold commands' memory and processes on this machine, in words.

    `"cgroup v2"`, `"cgroup v1 (memory, pids)"`, or `"none"` (rlimits only). Probes by
    making (and removing) one cgroup, once.
    """
    probe = CgroupSet.create(Limits())
    if probe is None:
        return "none"
    probe.remove()
    if probe.kind == "v2":
        return "cgroup v2"
    return f"cgroup v1 ({', '.join(probe.folders)})"


class ChangedBytes:
    """Watches a command's upper layer against `Limits.changed_bytes` (a `Watch.over`).

    The layer's disk use is summed at most every `CHANGED_EVERY` seconds, and more
    seldom when a walk itself takes long, so the check costs a small share of a core.

    Args:
        upper: The upper layer's host folder.
        limit: The bytes it may take.
    """

    def __init__(self, upper: str, limit: int) -> None:
        """Watch `upper`."""
        self.upper = upper
        self.limit = limit
        self.hit: LimitHit | None = None
        """The limit, once the layer went past it."""
        self._next = 0.0

    def __call__(self, *, now: bool = False) -> bool:
        """Whether the layer went past the limit (checked when it is time, or `now`).

        A command that ended is checked `now`: it may have written past the limit
        since the last check.
        """
        started = time.monotonic()
        if self.hit is not None or (started < self._next and not now):
            return self.hit is not None
        used = disk_use(self.upper)
        took = time.monotonic() - started
        self._next = started + max(CHANGED_EVERY, 20 * took)
        if used > self.limit:
            self.hit = LimitHit("changed_bytes", self.limit)
        return self.hit is not None


def disk_use(folder: str) -> int:
    """Bytes of disk the entries below `folder` take (links not followed).

    An entry counts its allocated blocks, and a file at least its apparent size: a sparse
    file takes little disk here, but as much as it says wherever it is copied (a commit
    to another file system, a review reading it).
    """
    total, pending = 0, [folder]
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    found = entry.stat(follow_symlinks=False)
                    apparent = found.st_size if stat.S_ISREG(found.st_mode) else 0
                    total += max(found.st_blocks * 512, apparent)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                except OSError:
                    continue
    return total


SAID: Final = {
    "memory": ("MemoryError", "Cannot allocate memory", "cannot allocate memory", "Out of memory"),
    "processes": (
        "fork: Resource temporarily unavailable",
        "fork: retry",
        "can't start new thread",
    ),
    "open_files": ("Too many open files",),
    "file_size": ("File size limit exceeded", "File too large"),
    "cpu_seconds": ("CPU time limit exceeded",),
}
"""What a command's own processes say when an rlimit refused or killed them: an
allocation past `RLIMIT_DATA` (ENOMEM, Python's `MemoryError`), a fork past
`RLIMIT_NPROC` (EAGAIN), a descriptor past `RLIMIT_NOFILE` (EMFILE), a write past
`RLIMIT_FSIZE` (the shell's note of a child killed by SIGXFSZ, or EFBIG), SIGXCPU."""


def limit_hit(
    limits: Limits, events: list[str], exit_code: int | None, errors: str = ""
) -> LimitHit | None:
    """The limit a command hit: from its cgroup's `events`, its exit status, or `errors`.

    SIGXCPU means `cpu_seconds`, SIGXFSZ `file_size` (each only when that limit is set);
    a limit that only an rlimit holds, hit by a process the shell started, is found by
    what the process said on its standard error (`errors`, matched against `SAID`), so
    a shell that went on still names it (what it printed, a `grep MemoryError`, never).
    """
    for name in ("memory", "processes"):
        value = getattr(limits, name)
        if name in events and value is not None:
            return LimitHit(name, value)
    by_signal = {
        128 + signal.SIGXCPU: ("cpu_seconds", limits.cpu_seconds),
        128 + signal.SIGXFSZ: ("file_size", limits.file_size),
    }
    if exit_code in by_signal:
        name, value = by_signal[exit_code]
        if value is not None:
            return LimitHit(name, value)
    for name, phrases in SAID.items():
        value = getattr(limits, name)
        if value is not None and any(phrase in errors for phrase in phrases):
            return LimitHit(name, value)
    return None


DEFAULT_LIMITS: Final = Limits()
"""The limits `Sandbox()` sets."""

__all__ = [
    "DEFAULT_LIMITS",
    "MINIMUMS",
    "SAID",
    "CgroupSet",
    "GiB",
    "Kind",
    "Limits",
    "MiB",
    "cgroup_support",
    "default_memory",
    "limit_hit",
    "remove_dead_cgroups",
    "running",
]
