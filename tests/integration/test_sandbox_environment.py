"""Inside the bwrap sandbox commands get a minimal environment plus `env=`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    assert shutil.which("bwrap"), "bubblewrap is not installed (see .ci/run)"
    monkeypatch.setenv("MY_API_KEY", "s3cret")
    monkeypatch.setenv("LANG", "C.UTF-8")


def names(backend: LocalBackend) -> dict[str, str]:
    result = backend.execute("env", timeout=20, output_limit=100_000)
    assert result.exit_code == 0, result.output
    return dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)


def test_the_sandbox_passes_only_the_minimal_set_and_env(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True, sandbox="bwrap", env={"GREETING": "given"})
    seen = names(backend)
    assert "MY_API_KEY" not in seen
    assert seen["GREETING"] == "given"
    assert seen["LANG"] == "C.UTF-8"
    assert "PATH" in seen
    assert seen["PYTHONPYCACHEPREFIX"] == "/tmp/pycache"  # the session's own caches
    # what bash itself sets (PWD, SHLVL, _) is all that comes on top
    minimal = {"PATH", "HOME", "LANG", "TERM", "TMPDIR", "PYTHONPYCACHEPREFIX", "GREETING"}
    assert set(seen) - minimal <= {
        "PWD",
        "SHLVL",
        "_",
    }


def test_the_sandbox_can_be_told_to_pass_more_but_never_a_secret_by_inheritance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SETTING", "plain")
    backend = LocalBackend(tmp_path, execute=True, inherit_env=["MY_SETTING", "MY_API_KEY"])
    seen = names(backend)
    assert seen["MY_SETTING"] == "plain"
    assert "MY_API_KEY" not in seen
    everything = names(LocalBackend(tmp_path, execute=True, inherit_env=True))
    assert everything["MY_SETTING"] == "plain"
    assert "MY_API_KEY" not in everything
    named = LocalBackend(tmp_path, execute=True, env={"MY_API_KEY": os.environ["MY_API_KEY"]})
    assert names(named)["MY_API_KEY"] == "s3cret"
