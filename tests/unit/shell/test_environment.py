"""The environment commands run with (`env=`, `inherit_env=`) on local disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox.environment import CommandEnv, looks_secret


def run(backend: LocalBackend, command: str) -> str:
    result = backend.execute(command, timeout=20, output_limit=100_000)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "s3cret")


def test_without_a_sandbox_commands_inherit_the_agents_environment_by_default(
    tmp_path: Path,
) -> None:
    unconfined = LocalBackend(tmp_path, execute=True, sandbox=None)
    assert run(unconfined, "echo $MY_API_KEY") == "s3cret\n"


def test_in_the_sandbox_a_secret_looking_name_passes_only_through_env(tmp_path: Path) -> None:
    for inherit in (True, ["MY_API_KEY"]):
        backend = LocalBackend(tmp_path, execute=True, inherit_env=inherit)
        assert run(backend, 'echo "[$MY_API_KEY]"') == "[]\n"
    given = LocalBackend(tmp_path, execute=True, env={"MY_API_KEY": "chosen"})
    assert run(given, "echo $MY_API_KEY") == "chosen\n"


def test_inherit_env_false_passes_only_env(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True, inherit_env=False, env={"A": "x y $z"})
    assert run(backend, 'echo "[$MY_API_KEY] [$A]"') == "[] [x y $z]\n"


def test_a_list_passes_those_names_and_env_wins_over_them(tmp_path: Path) -> None:
    backend = LocalBackend(
        tmp_path,
        execute=True,
        sandbox=None,
        inherit_env=["MY_API_KEY", "NOT_SET_ANYWHERE"],
        env={"B": "1"},
    )
    names = {line.split("=", 1)[0] for line in run(backend, "env").splitlines()}
    assert {"MY_API_KEY", "B"} <= names
    assert "NOT_SET_ANYWHERE" not in names
    assert "HOME" not in names
    override = LocalBackend(tmp_path, execute=True, env={"MY_API_KEY": "replaced"})
    assert run(override, "echo $MY_API_KEY") == "replaced\n"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"env": {"A": 1}}, "must be a string"),
        ({"env": {"A": "x\0y"}}, "without NUL"),
        ({"env": {"1A": "x"}}, "environment variable names"),
        ({"env": {"A=B": "x"}}, "environment variable names"),
        ({"env": ["A=1"]}, "must be a mapping"),
        ({"inherit_env": "PATH"}, "list of variable names"),
        ({"inherit_env": ["PATH", "BAD NAME"]}, "environment variable names"),
        ({"inherit_env": 1.5}, "list of variable names"),
    ],
)
def test_malformed_settings_fail_at_construction(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LocalBackend(tmp_path, execute=True, **options)


def test_the_settings_need_execute(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="execute=True"):
        LocalBackend(tmp_path, env={"A": "1"})


def test_the_remote_prefix_quotes_values_and_keeps_only_set_names() -> None:
    assert CommandEnv().shell_prefix() == ""
    prefix = CommandEnv.of({"A": "it's $x"}, ["HOME"]).shell_prefix()
    assert prefix == "env -i ${HOME+\"HOME=$HOME\"} 'A=it'\"'\"'s $x' "


SECRETS = {
    "GITHUB_PAT": "ghp_x",
    "MYSQL_PWD": "pw",
    "CI_JOB_JWT": "eyJx",
    "REDIS_URL": "redis://:pw@h",
    "PIP_INDEX_URL": "https://user:tok@pypi.example/simple",
    "UPSTREAM": "https://tok@git.example/r.git",
}
PLAIN = {"PWD": "/w", "OLDPWD": "/v", "HTTP_PROXY": "http://proxy:3128", "NOTE": "a@b"}


@pytest.mark.parametrize(("name", "value"), SECRETS.items())
def test_secret_names_and_credential_urls_look_secret(name: str, value: str) -> None:
    assert looks_secret(name, value)


@pytest.mark.parametrize(("name", "value"), PLAIN.items())
def test_working_directories_and_urls_without_credentials_do_not(name: str, value: str) -> None:
    assert not looks_secret(name, value)


def test_the_sandbox_inherits_no_secret_by_name_or_by_value() -> None:
    built = CommandEnv.of(None, True).build({**SECRETS, **PLAIN}, secrets=False)
    assert built == PLAIN
