"""`langchain-fstools-mcp` (or `python -m langchain_fstools mcp`): serve the file tools.

    langchain-fstools-mcp --root ./repo                              # stdio, local disk
    python -m langchain_fstools mcp --root ./repo --http 127.0.0.1:8765
        (a token is drawn, printed once and kept in ~/.config/langchain-fstools/)
    python -m langchain_fstools mcp --root ./repo --http 0.0.0.0:8765 --allow-host box.lan
        (with the token in LANGCHAIN_FSTOOLS_MCP_TOKEN, or --token)
    python -m langchain_fstools mcp --ssh build-box --ssh-root /srv/app --execute
    python -m langchain_fstools mcp --postgres postgresql://localhost/files
    python -m langchain_fstools mcp --config fstools-mcp.toml

A config file (TOML) holds the same settings under the flags' names (`root`, `ssh`,
`ssh_root`, `ssh_port`, `ssh_user`, `ssh_keys`, `known_hosts`, `postgres`, `namespace`,
`execute`, `sandbox`, `mode`, `http`, `token`, `no_auth`, `allow_hosts`, `objectstore`,
`prefix`, `handle_key`, `stateless`, `trace`), plus `[[permissions]]`
rules (`operations`, `paths`, `commands`, `action`) and a `[settings]` table of
`ToolSettings` fields. A flag given on the command line wins over the file. This module
imports the MCP SDK only when the command runs, so the rest of the CLI works without the
`mcp` extra; without it (or without the extra a backend needs) the command says in one
sentence what to install.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_fstools._version import __version__
from langchain_fstools.core.extras import require
from langchain_fstools.errors import MissingExtra
from langchain_fstools.mcp.door import TOKEN_ENV, TOKEN_FILE, is_loopback, new_token
from langchain_fstools.mcp.handles import HANDLE_KEY_ENV, KEY_FILE, handle_key

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.shell.sandbox.sandbox import Sandbox

OPTIONS = (
    "root",
    "ssh",
    "ssh_root",
    "ssh_port",
    "ssh_user",
    "ssh_keys",
    "known_hosts",
    "postgres",
    "namespace",
    "execute",
    "sandbox",
    "mode",
    "http",
    "token",
    "no_auth",
    "allow_hosts",
    "objectstore",
    "prefix",
    "conditional_writes",
    "handle_key",
    "stateless",
    "trace",
)
"""Settings a flag or the config file may give."""

DESCRIPTION = """Serve the file tools to MCP clients (Claude Code, Cursor, the MCP Inspector,
langchain-mcp-adapters, ...) over stdio, or over streamable HTTP with --http. Give exactly
one backend: --root, --ssh, --postgres or --objectstore. A file must be read before it is
changed: each read answers with a signed read_handle that the change passes back, so no
session is needed (a client that keeps one may leave it out)."""
"""The `mcp` command's description in its help."""

NEEDS: dict[str, tuple[str, str]] = {
    "ssh_root": ("ssh", "--ssh-root"),
    "ssh_port": ("ssh", "--ssh-port"),
    "ssh_user": ("ssh", "--ssh-user"),
    "ssh_keys": ("ssh", "--ssh-key"),
    "known_hosts": ("ssh", "--known-hosts"),
    "namespace": ("postgres", "--namespace"),
    "prefix": ("objectstore", "--prefix"),
    "conditional_writes": ("objectstore", "--conditional-writes"),
    "sandbox": ("execute", "--sandbox"),
    "token": ("http", "--token"),
    "no_auth": ("http", "--no-auth"),
    "allow_hosts": ("http", "--allow-host"),
    "stateless": ("http", "--stateless"),
}
"""Settings that mean something only with another: name -> (needed setting, flag)."""


PROG = "langchain-fstools-mcp"
"""The console script's name."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `langchain-fstools-mcp` console script."""
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_arguments(parser)
    return run_command(parser, parser.parse_args(argv))


def run_command(parser: argparse.ArgumentParser, options: argparse.Namespace) -> int:
    """Run the server `options` describe, ending as a command ends: with its exit status.

    A bad setting is `parser`'s error (exit 2); a missing extra, one sentence naming the
    `pip install` to run (exit 1).
    """
    try:
        return run(options)
    except MissingExtra as exc:
        sys.stderr.write(f"{parser.prog}: {exc}\n")
        return 1
    except ValueError as exc:
        parser.error(str(exc))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `mcp` command's flags to `parser` (every default None: the file's apply)."""
    parser.description = DESCRIPTION
    where = parser.add_argument_group("backend (exactly one)")
    where.add_argument("--root", metavar="DIR", help="serve this local directory as /")
    where.add_argument("--ssh", metavar="HOST", help="serve a directory of HOST over SSH")
    where.add_argument(
        "--postgres", metavar="URL", help="serve files kept in PostgreSQL (a LangGraph store)"
    )
    where.add_argument(
        "--objectstore",
        metavar="URL",
        help="serve objects of a bucket (s3://, gs://, az://; credentials from the environment)",
    )
    parser.add_argument(
        "--prefix", metavar="P", help="with --objectstore: the key prefix served as /"
    )
    parser.add_argument(
        "--conditional-writes",
        choices=["full", "create-only", "none"],
        help="with --objectstore: what the store checks itself (default: what its type says,"
        " proven at the first write; none accepts a store that ignores conditions, unsafe"
        " with concurrent writers)",
    )
    ssh = parser.add_argument_group("SSH (with --ssh)")
    ssh.add_argument("--ssh-root", metavar="DIR", help="the directory on the host served as /")
    ssh.add_argument("--ssh-port", type=int, metavar="N", help="SSH port (default: 22)")
    ssh.add_argument("--ssh-user", metavar="USER", help="SSH user (default: your user name)")
    ssh.add_argument(
        "--ssh-key",
        dest="ssh_keys",
        action="append",
        metavar="FILE",
        help="a private key file; repeat for more (default: your SSH agent and ~/.ssh keys)",
    )
    ssh.add_argument(
        "--known-hosts", metavar="FILE", help="known_hosts file (default: ~/.ssh/known_hosts)"
    )
    parser.add_argument(
        "--namespace",
        metavar="A.B",
        help="with --postgres: the store namespace, dot-separated (default: filesystem)",
    )
    parser.add_argument(
        "--execute",
        action="store_true",
        default=None,
        help="also serve the execute tool, which runs shell commands (default: off)",
    )
    parser.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "landlock", "none"],
        help="with --execute and --root: how commands are confined (default: auto, the OS"
        " sandbox; none runs them unconfined, unsafe)",
    )
    parser.add_argument(
        "--mode",
        choices=["default", "accept_edits", "plan", "bypass"],
        help="permission mode; an ask becomes a form the client shows the person "
        "(default: no permission layer)",
    )
    http = parser.add_argument_group("HTTP (default: stdio)")
    http.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    http.add_argument(
        "--token",
        help="with --http: the token every request must carry as 'Authorization: Bearer"
        f" TOKEN' (default: the {TOKEN_ENV} environment variable, else, on loopback, a token"
        f" drawn at start, printed once and kept (mode 0600) in ~/.config/{TOKEN_FILE})",
    )
    http.add_argument(
        "--no-auth",
        action="store_true",
        default=None,
        help="with --http on loopback: take requests without a token, from any user of this"
        " machine; then only the reading tools are served (no --execute, no --mode) (unsafe"
        " on a shared machine; default: off)",
    )
    http.add_argument(
        "--allow-host",
        dest="allow_hosts",
        action="append",
        metavar="NAME",
        help="with --http: another name clients reach the server by, for Host and Origin "
        "checks; repeat for more (default: the bound address and localhost only)",
    )
    http.add_argument(
        "--stateless",
        action="store_true",
        default=None,
        help="with --http: keep nothing between requests, so instances behind a balancer"
        " (sharing --handle-key) serve one client: no sessions (reads travel in read_handle),"
        " and large results are not saved to /large_tool_results/ (execute's output is cut"
        " in the middle instead) (default: off)",
    )
    parser.add_argument(
        "--handle-key",
        metavar="KEY",
        help="the secret signing read handles; servers that must accept each other's share"
        f" it (default: the {HANDLE_KEY_ENV} environment variable, else a key kept in"
        f" ~/.config/{KEY_FILE})",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        default=None,
        help="send traces of the tool calls (the files they read and write) to LangSmith, as"
        " its LANGSMITH_* variables configure; without it a LANGSMITH_TRACING inherited from"
        " the environment is ignored (default: off)",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="a TOML file with these settings"
    )


def resolve(options: argparse.Namespace) -> dict[str, Any]:
    """The settings: the config file's, overridden by the flags given.

    Raises:
        ValueError: an unreadable or malformed file, an unknown key, or not exactly one
            backend.
    """
    config: dict[str, Any] = {}
    if options.config is not None:
        try:
            config = tomllib.loads(options.config.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"cannot read the config file: {exc}") from None
    unknown = sorted(set(config) - {*OPTIONS, "permissions", "settings"})
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known: {sorted(OPTIONS)}")
    for name in OPTIONS:
        value = getattr(options, name, None)
        if value is not None:
            config[name] = value
    chosen = [name for name in ("root", "ssh", "postgres", "objectstore") if config.get(name)]
    if len(chosen) != 1:
        raise ValueError(
            "give exactly one backend: --root DIR, --ssh HOST, --postgres URL or --objectstore URL"
        )
    _check_combinations(config)
    if config.get("http") and not config.get("token") and not config.get("no_auth"):
        config["token"] = os.environ.get(TOKEN_ENV) or None
    if config.get("http"):
        host, _ = parse_http(config["http"])
        if not config.get("token") and not is_loopback(host):
            raise ValueError(
                f"--http {config['http']}: serving HTTP on an address that is not loopback "
                f"needs a bearer token: pass --token or set {TOKEN_ENV}"
            )
    _check_no_auth(config)
    return config


def _check_no_auth(config: dict[str, Any]) -> None:
    """Refuse `--no-auth` with what a caller without a token may not do or answer.

    Without a token anyone on this machine can call, so only reading is served: not
    `execute`, and no permission layer, whose asks the caller would answer itself.
    """
    if not config.get("no_auth"):
        return
    if config.get("token"):
        raise ValueError("--no-auth and a token (--token or the environment) contradict")
    if config.get("execute"):
        raise ValueError("--execute over HTTP needs a token: leave out --no-auth")
    if config.get("mode") or config.get("permissions"):
        raise ValueError(
            "--no-auth serves reading only, to a caller who would answer its own approvals:"
            " leave out --mode and [[permissions]], or serve with a token"
        )


def _check_combinations(config: dict[str, Any]) -> None:
    """Refuse a setting given without the one it needs, and a missing `--root`."""
    for name, (needed, flag) in NEEDS.items():
        if config.get(name) and not config.get(needed):
            raise ValueError(f"{flag} applies only with --{needed.replace('_', '-')}")
    if config.get("execute") and config.get("postgres"):
        raise ValueError("--execute runs commands, which --postgres cannot: use --root or --ssh")
    if config.get("sandbox") and not config.get("root"):
        raise ValueError("--sandbox applies only with --root (commands on this machine)")
    if config.get("root") and not Path(config["root"]).is_dir():
        raise ValueError(f"--root: {config['root']} is not an existing directory")


def parse_http(address: str) -> tuple[str, int]:
    """`HOST:PORT` (or `:PORT`, on 127.0.0.1) as a host and a port.

    Raises:
        ValueError: no port, or not a number.
    """
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http takes HOST:PORT, e.g. 127.0.0.1:8765; got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def run(options: argparse.Namespace) -> int:
    """Run the server the options describe until the client goes away (or Ctrl-C).

    Raises:
        ValueError: a bad setting.
        MissingExtra: the MCP SDK, or the chosen backend's dependency, is not installed.
    """
    require("mcp", extra="mcp", feature="the MCP server")
    config = resolve(options)
    if config.get("objectstore"):
        require("obstore", extra="objectstore", feature="--objectstore")
    if config.get("postgres"):
        require("langgraph.store.postgres", extra="postgres", feature="--postgres")
    import anyio  # noqa: PLC0415 - the SDK's event loop library

    config["handle_key"] = handle_key(config.get("handle_key"))
    if config.get("http") and not config.get("token") and not config.get("no_auth"):
        config["token"], config["token_file"] = new_token(parse_http(config["http"])[1])
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve, config)
    return 0


async def serve(config: dict[str, Any]) -> None:
    """Build the backend and the server from `config`, and serve over stdio or HTTP."""
    import anyio  # noqa: PLC0415 - the SDK's event loop library

    from langchain_fstools.mcp.listing_cache import cache_folder  # noqa: PLC0415
    from langchain_fstools.mcp.server import create_server  # noqa: PLC0415
    from langchain_fstools.mcp.transports import run_http, run_stdio  # noqa: PLC0415

    rules = _permissions(config.get("permissions", []))
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(tracing(enabled=bool(config.get("trace"))))
        backend = await _backend(config, stack)
        build = functools.partial(
            create_server,
            backend,
            execute=bool(config.get("execute")),
            mode=config.get("mode"),
            permissions=rules,
            handle_key=config.get("handle_key"),
            listing_cache=cache_folder(),
            eviction=not config.get("stateless"),
            processes=not config.get("stateless"),
            reads_only=bool(config.get("no_auth")),
            **config.get("settings", {}),
        )
        server = await anyio.to_thread.run_sync(build)  # reads the kept listing, or builds it
        if config.get("http"):
            host, port = parse_http(config["http"])
            token = config.get("token")
            banner = http_banner(host, port, token=token, drawn=config.get("token_file"))
            await run_http(
                server,
                host=host,
                port=port,
                token=token,
                allowed_hosts=config.get("allow_hosts") or (),
                stateless=bool(config.get("stateless")),
                no_auth=bool(config.get("no_auth")),
                on_listening=lambda: sys.stderr.write(banner + "\n"),
            )
        else:
            await run_stdio(server)


def tracing(*, enabled: bool) -> contextlib.AbstractContextManager[None]:
    """Inside it, traces go to LangSmith only if `enabled` (`--trace`), whatever the env says.

    A server started by a desktop app inherits its environment; with `LANGSMITH_TRACING`
    there, every file a tool reads or writes would go to LangSmith unasked. The tasks
    and threads serving requests start inside it and inherit it.
    """
    from langsmith import tracing_context  # noqa: PLC0415 - langchain-core's dependency

    return tracing_context(enabled=enabled)


def _permissions(rules: list[dict[str, Any]]) -> list[Any]:
    """The config file's `[[permissions]]` rules (the rules module is loaded only for some).

    Raises:
        ValueError: a rule with unknown or missing fields.
    """
    if not rules:
        return []
    from langchain_fstools.permissions.rules import Permission  # noqa: PLC0415

    try:
        return [Permission(**rule) for rule in rules]
    except TypeError as exc:
        raise ValueError(f"bad permission rule: {exc}") from None


def http_banner(host: str, port: int, *, token: str | None, drawn: Path | None = None) -> str:
    """What the HTTP server says on start: its URL, and the token requests need.

    A token given is never shown; one `drawn` for this start is, this once, with the
    file it is kept in. Without a token (`--no-auth`), a warning.
    """
    from langchain_fstools.mcp.transports import HTTP_PATH  # noqa: PLC0415 - needs the SDK

    shown = f"[{host}]" if ":" in host else host
    served = f"Serving MCP over streamable HTTP at http://{shown}:{port}{HTTP_PATH}"
    if not token:
        return (
            f"WARNING: --no-auth: any user of this machine can call this server. {served}"
            " (no token; reading only: no tool that changes files or runs commands)"
        )
    need = "every request needs 'Authorization: Bearer <token>'"
    if drawn is None:
        return f"{served} ({need}, the token given)"
    return f"{served} ({need}; the token, drawn for this start and kept in {drawn}: {token})"


def _sandbox(config: dict[str, Any], execute: bool) -> Sandbox | None:  # noqa: FBT001
    """The sandbox the `sandbox` setting names (`auto` unless given; `none`: unconfined)."""
    from langchain_fstools.shell.sandbox.sandbox import DEFAULT_SANDBOX, Sandbox  # noqa: PLC0415

    method = config.get("sandbox") or "auto"
    if method == "none" or not execute:
        return None if execute else DEFAULT_SANDBOX
    if method not in {"auto", "bwrap", "landlock"}:
        raise ValueError(f"sandbox must be auto, bwrap, landlock or none; got {method!r}")
    return Sandbox(method=method)  # type: ignore[arg-type]  # checked just above


async def _backend(config: dict[str, Any], stack: contextlib.AsyncExitStack) -> Backend:
    execute = bool(config.get("execute"))
    if config.get("root"):
        from langchain_fstools.backends.local.backend import LocalBackend  # noqa: PLC0415

        return LocalBackend(config["root"], execute=execute, sandbox=_sandbox(config, execute))
    if config.get("ssh"):
        from langchain_fstools.backends.ssh import SSHBackend  # noqa: PLC0415

        if not config.get("ssh_root"):
            raise ValueError("--ssh needs --ssh-root, the directory served as /")
        extra = {"known_hosts": config["known_hosts"]} if config.get("known_hosts") else {}
        ssh = SSHBackend(
            config["ssh"],
            root_dir=config["ssh_root"],
            port=int(config.get("ssh_port") or 22),
            username=config.get("ssh_user"),
            client_keys=config.get("ssh_keys"),
            **extra,
        )
        stack.push_async_callback(ssh.aclose)
        return ssh
    if config.get("objectstore"):
        from langchain_fstools.backends.objectstore import ObjectStoreBackend  # noqa: PLC0415

        return ObjectStoreBackend(
            config["objectstore"],
            prefix=config.get("prefix") or "",
            conditional_writes=config.get("conditional_writes"),
        )
    from langgraph.store.postgres import AsyncPostgresStore  # noqa: PLC0415

    from langchain_fstools.backends.store import StoreBackend  # noqa: PLC0415

    store = await stack.enter_async_context(AsyncPostgresStore.from_conn_string(config["postgres"]))
    await store.setup()
    namespace = config.get("namespace")
    if namespace:
        return StoreBackend(store, namespace=tuple(namespace.split(".")))
    return StoreBackend(store)


__all__ = [
    "DESCRIPTION",
    "NEEDS",
    "OPTIONS",
    "PROG",
    "add_arguments",
    "http_banner",
    "main",
    "parse_http",
    "resolve",
    "run",
    "run_command",
    "serve",
    "tracing",
]
