"""The `mcp` command's settings: flags over the config file, one backend, HOST:PORT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.cli import _backend, add_arguments, parse_http, resolve
from langchain_fstools.shell.sandbox import Sandbox


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_flags_override_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('root = "/a"\nmode = "plan"\n[settings]\nread_limit = 5\n')
    resolved = resolve(parse("--config", str(config), "--mode", "default"))
    assert resolved["root"] == "/a"
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
