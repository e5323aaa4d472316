"""The `mcp` command's settings: flags over the config file, one backend, HOST:PORT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.tracers.context import _tracing_v2_is_enabled
from langsmith.utils import get_env_var

from langchain_fstools import LocalBackend
from langchain_fstools.commands import main
from langchain_fstools.mcp import cli
from langchain_fstools.mcp.cli import (
    DESCRIPTION,
    _backend,
    add_arguments,
    http_banner,
    parse_http,
    resolve,
)
from langchain_fstools.mcp.cli import main as cli_main
from langchain_fstools.mcp.door import TOKEN_ENV
from langchain_fstools.shell.sandbox.sandbox import Sandbox


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_flags_override_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'root = "{tmp_path}"\nmode = "plan"\n[settings]\nread_limit = 5\n')
    resolved = resolve(parse("--config", str(config), "--mode", "default"))
    assert resolved["root"] == str(tmp_path)
    assert resolved["mode"] == "default"
    assert resolved["settings"] == {"read_limit": 5}


def test_exactly_one_backend() -> None:
    with pytest.raises(ValueError, match="exactly one backend"):
        resolve(parse())
    with pytest.raises(ValueError, match="exactly one backend"):
        resolve(parse("--root", "/a", "--ssh", "host"))


def test_unknown_config_keys_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('root = "/a"\nroots = "/b"\n')
    with pytest.raises(ValueError, match="roots"):
        resolve(parse("--config", str(config)))


def test_http_address() -> None:
    assert parse_http("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_http(":9000") == ("127.0.0.1", 9000)
    assert parse_http("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_http("localhost")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), Sandbox()),
        (("--sandbox", "auto"), Sandbox()),
        (("--sandbox", "landlock"), Sandbox(method="landlock")),
        (("--sandbox", "none"), None),
    ],
)
def test_execute_is_sandboxed_unless_told_none(
    tmp_path: Path, argv: tuple[str, ...], expected: Sandbox | None
) -> None:
    config = resolve(parse("--root", str(tmp_path), "--execute", *argv))
    backend = asyncio.run(_backend(config, contextlib.AsyncExitStack()))
    assert isinstance(backend, LocalBackend)
    assert backend.sandbox == expected


def test_an_unknown_sandbox_in_the_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'root = "{tmp_path}"\nexecute = true\nsandbox = "docker"\n')
    with pytest.raises(ValueError, match="sandbox must be"):
        asyncio.run(_backend(resolve(parse("--config", str(config))), contextlib.AsyncExitStack()))


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--ssh-root", "/srv"], "--ssh-root applies only with --ssh"),
        (["--ssh-port", "2222"], "--ssh-port applies only with --ssh"),
        (["--ssh-key", "k"], "--ssh-key applies only with --ssh"),
        (["--known-hosts", "kh"], "--known-hosts applies only with --ssh"),
        (["--namespace", "a.b"], "--namespace applies only with --postgres"),
        (["--conditional-writes", "none"], "--conditional-writes applies only with --objectstore"),
        (["--sandbox", "bwrap"], "--sandbox applies only with --execute"),
        (["--token", "t"], "--token applies only with --http"),
        (["--allow-host", "box"], "--allow-host applies only with --http"),
    ],
)
def test_a_flag_without_the_one_it_needs_is_refused_by_name(
    tmp_path: Path, flags: list[str], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        resolve(parse("--root", str(tmp_path), *flags))


def test_execute_needs_a_backend_that_runs_commands() -> None:
    with pytest.raises(ValueError, match="--execute runs commands, which --postgres cannot"):
        resolve(parse("--postgres", "postgresql://127.0.0.1/x", "--execute"))


def test_sandbox_is_for_local_commands_only() -> None:
    with pytest.raises(ValueError, match="--sandbox applies only with --root"):
        resolve(parse("--ssh", "box", "--ssh-root", "/srv", "--execute", "--sandbox", "bwrap"))


def test_a_missing_root_is_named_with_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ValueError, match=f"--root: {missing} is not an existing directory"):
        resolve(parse("--root", str(missing)))
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    with pytest.raises(ValueError, match=r"--root: .*file\.txt is not an existing directory"):
        resolve(parse("--root", str(afile)))


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "192.168.1.5:8765", "[::]:8765", "box:1"])
def test_a_non_loopback_bind_needs_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ValueError, match="needs a bearer token"):
        resolve(parse("--root", str(tmp_path), "--http", address))
    assert resolve(parse("--root", str(tmp_path), "--http", address, "--token", "s3"))["token"]
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert resolve(parse("--root", str(tmp_path), "--http", address))["token"] == "from-env"  # noqa: S105 - a test token


@pytest.mark.parametrize("address", ["127.0.0.1:1", "127.0.0.2:1", "[::1]:1", "localhost:1"])
def test_a_loopback_bind_without_a_token_serves_reading_only_and_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    root = ("--root", str(tmp_path), "--http", address)
    assert not resolve(parse(*root)).get("no_auth")  # a token is drawn at start (`run`)
    assert resolve(parse(*root, "--no-auth"))["no_auth"] is True
    with pytest.raises(ValueError, match="--execute over HTTP needs a token"):
        resolve(parse(*root, "--no-auth", "--execute"))
    with pytest.raises(ValueError, match="answer its own approvals"):
        resolve(parse(*root, "--no-auth", "--mode", "default"))
    with pytest.raises(ValueError, match="contradict"):
        resolve(parse(*root, "--no-auth", "--token", "t"))
    with pytest.raises(ValueError, match="--no-auth applies only with --http"):
        resolve(parse("--root", str(tmp_path), "--no-auth"))


def test_a_server_started_without_a_token_draws_one_and_requires_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_fstools.mcp import cli  # noqa: PLC0415 - patched below

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    served: dict[str, object] = {}

    async def serve(config: dict[str, object]) -> None:
        served.update(config)

    monkeypatch.setattr(cli, "serve", serve)
    assert cli.run(parse("--root", str(tmp_path), "--http", "127.0.0.1:8765")) == 0

    kept = tmp_path / "config" / "langchain-fstools" / "mcp-http-token-8765"
    assert served["token"] == kept.read_text().strip()
    assert served["token_file"] == kept
    assert kept.stat().st_mode & 0o777 == 0o600


def test_the_command_line_names_its_version_and_errors_in_the_subcommand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_fstools import __version__  # noqa: PLC0415 - the name under test

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"python -m langchain_fstools {__version__}"
    with pytest.raises(SystemExit) as failed:
        main(["mcp", "--root", str(tmp_path), "--ssh-root", "/srv"])
    assert failed.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m langchain_fstools mcp" in err
    assert "--ssh-root applies only with --ssh" in err


def test_every_flag_has_a_description() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.description
    for action in parser._actions:
        assert action.help, action.option_strings


def test_an_object_store_may_be_told_what_it_checks() -> None:
    pytest.importorskip("obstore")  # the mcp 2.x environment has no objectstore extra
    options = resolve(parse("--objectstore", "memory:///", "--conditional-writes", "none"))
    backend = asyncio.run(_backend(options, contextlib.AsyncExitStack()))
    assert backend.conditional_writes == "none"  # type: ignore[attr-defined]
    default = asyncio.run(
        _backend(resolve(parse("--objectstore", "memory:///")), contextlib.AsyncExitStack())
    )
    assert default.conditional_writes == "full"  # type: ignore[attr-defined]


def test_the_handle_key_comes_from_the_flag_over_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'root = "{tmp_path}"\nhandle_key = "from-the-file"\n')
    assert resolve(parse("--config", str(config)))["handle_key"] == "from-the-file"
    flagged = resolve(parse("--config", str(config), "--handle-key", "from-the-flag"))
    assert flagged["handle_key"] == "from-the-flag"


@pytest.mark.parametrize(
    ("flags", "module", "sentence"),
    [
        (
            (),
            "mcp",
            (
                "the MCP server needs the mcp extra: pip install '.[mcp]' in a checkout of"
                " langchain-fstools (pip install 'langchain-fstools[mcp]' after its first release)"
            ),
        ),
        (
            ("--objectstore", "memory:///"),
            "obstore",
            (
                "--objectstore needs the objectstore extra: pip install '.[objectstore]' in a"
                " checkout of langchain-fstools (pip install 'langchain-fstools[objectstore]'"
                " after its first release)"
            ),
        ),
    ],
)
def test_a_missing_extra_is_one_sentence_naming_the_pip_install(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
    module: str,
    sentence: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    backend = flags or ("--root", str(tmp_path))
    assert cli_main(list(backend)) == 1
    assert capsys.readouterr().err == f"langchain-fstools-mcp: {sentence}\n"
    assert main(["mcp", *backend]) == 1
    assert capsys.readouterr().err == f"python -m langchain_fstools mcp: {sentence}\n"


def test_help_names_every_backend_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("usage: langchain-fstools-mcp")
    for flag in ("--root", "--ssh", "--postgres", "--objectstore"):
        assert flag in shown
        assert flag in DESCRIPTION


def test_the_console_script_is_declared() -> None:
    project = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    assert (
        project["project"]["scripts"]["langchain-fstools-mcp"] == "langchain_fstools.mcp.cli:main"
    )


def test_the_http_server_says_its_url_and_the_token_it_needs() -> None:
    no_auth = http_banner("127.0.0.1", 8765, token=None)
    assert no_auth.startswith("WARNING: --no-auth: any user of this machine can call")
    assert "http://127.0.0.1:8765/mcp" in no_auth
    assert "reading only" in no_auth
    with_token = http_banner("::1", 9000, token="secret")  # noqa: S106 - a test token
    assert with_token.startswith("Serving MCP over streamable HTTP at http://[::1]:9000/mcp (")
    assert "Authorization: Bearer <token>" in with_token
    assert "secret" not in with_token
    kept = Path("/home/u/.config/langchain-fstools/mcp-http-token-9000")
    drawn = http_banner("::1", 9000, token="drawn-token", drawn=kept)  # noqa: S106
    assert drawn.endswith(f"kept in {kept}: drawn-token)")  # printed once, at start


def test_stateless_is_an_http_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--stateless applies only with --http"):
        resolve(parse("--root", str(tmp_path), "--stateless"))
    stateless = resolve(parse("--root", str(tmp_path), "--http", ":9000", "--stateless"))
    assert stateless["stateless"] is True


@pytest.fixture
def inherited_tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """LANGSMITH_TRACING=true in the environment, as a desktop app may pass it on."""
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    get_env_var.cache_clear()  # langsmith reads each variable once
    yield
    monkeypatch.undo()
    get_env_var.cache_clear()


@pytest.mark.usefixtures("inherited_tracing")
@pytest.mark.parametrize(("argv", "traced"), [((), False), (("--trace",), True)])
def test_the_server_traces_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...], traced: bool
) -> None:
    assert _tracing_v2_is_enabled()  # what the environment alone would do
    config = resolve(parse("--root", str(tmp_path), *argv))
    seen = []

    async def stop(config: dict[str, object], stack: object) -> None:
        seen.append(_tracing_v2_is_enabled())
        raise asyncio.CancelledError  # the backend is where serving would begin

    monkeypatch.setattr(cli, "_backend", stop)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cli.serve(config))
    assert seen == [traced]
    assert _tracing_v2_is_enabled()  # left as it was
