"""scripts/setup installs python3-venv where `python3 -m venv` cannot work (Debian, Ubuntu),
says each step with its time, reuses what is there, and leaves the mcp 2.x venv to its test
(through scripts/venv)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stub(folder: Path, name: str, body: str) -> None:
    script = folder / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def _checkout(tmp_path: Path, *, ensurepip: bool) -> tuple[Path, dict[str, str]]:
    """A copy of scripts/setup and scripts/venv with stub python3/pip/apt-get/sudo, and the environment to
    run it in; apt-get and pip log their calls to apt.log and pip.log in `tmp_path`."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    for script in ("setup", "venv"):
        shutil.copy(ROOT / "scripts" / script, checkout / "scripts" / script)
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    _stub(stubs, "apt-get", f'echo "$*" >> {tmp_path / "apt.log"}')
    _stub(stubs, "sudo", '"$@"')
    for tool in ("git", "bwrap", "pg_ctl", "dockerd", "debootstrap"):
        _stub(stubs, tool, "exit 0")
    pip = f'mkdir -p "$3/bin" && printf \'#!/bin/sh\\necho "$0 $*" >> {tmp_path / "pip.log"}\\n\' > "$3/bin/pip"'
    _stub(
        stubs,
        "python3",
        f"""case "$*" in
  "-c import ensurepip") exit {0 if ensurepip else 1};;
  "-m venv "*) {pip} && chmod +x "$3/bin/pip";;
esac""",
    )
    # FSTOOLS_DOCKER=0: no Docker Engine started (the Docker tests run scripts/docker-engine)
    return checkout, {**os.environ, "PATH": f"{stubs}:/usr/bin:/bin", "FSTOOLS_DOCKER": "0"}


def _setup(checkout: Path, env: dict[str, str]) -> list[str]:
    """Run the checkout's scripts/setup; return what it printed, line by line."""
    done = subprocess.run(
        ["bash", "scripts/setup"], cwd=checkout, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.splitlines()


def _logged(tmp_path: Path, name: str) -> list[str]:
    log = tmp_path / name
    return log.read_text().splitlines() if log.exists() else []


def _run_setup(tmp_path: Path, *, ensurepip: bool) -> list[str]:
    """Run setup once in a fresh checkout; return apt's calls."""
    _setup(*_checkout(tmp_path, ensurepip=ensurepip))
    return _logged(tmp_path, "apt.log")


def test_setup_installs_python3_venv_when_ensurepip_is_missing(tmp_path: Path) -> None:
    calls = _run_setup(tmp_path, ensurepip=False)
    installs = [call.split() for call in calls if call.startswith("install")]
    assert installs
    assert "python3-venv" in installs[0]


def test_setup_leaves_python3_venv_alone_when_venv_works(tmp_path: Path) -> None:
    calls = _run_setup(tmp_path, ensurepip=True)
    assert not any("python3-venv" in call for call in calls)


def test_setup_says_each_step_with_its_time_and_reuses_what_is_there(tmp_path: Path) -> None:
    checkout, env = _checkout(tmp_path, ensurepip=True)
    first = _setup(checkout, env)
    assert "setup: system packages: all present" in first
    timed = [line for line in first if re.fullmatch(r"setup: .+: done in \d+s", line)]
    assert [line.split(":")[1].strip() for line in timed] == [".venv", ".venv"]
    installs = _logged(tmp_path, "pip.log")
    assert [line.split()[0] for line in installs] == [".venv/bin/pip"]
    assert "-e .[test]" in installs[0]

    again = _setup(checkout, env)
    assert again == ["setup: system packages: all present", "setup: .venv: up to date, reused"]
    assert _logged(tmp_path, "pip.log") == installs  # pip not run again

    (checkout / "pyproject.toml").write_text((checkout / "pyproject.toml").read_text() + "\n")
    _setup(checkout, env)
    assert len(_logged(tmp_path, "pip.log")) == 2 * len(installs)  # a changed pyproject reinstalls


def test_setup_leaves_the_mcp2_venv_to_its_test(tmp_path: Path) -> None:
    checkout, env = _checkout(tmp_path, ensurepip=True)
    _setup(checkout, env)
    assert not (checkout / ".venv-mcp2").exists()


def _venv(checkout: Path, env: dict[str, str], *args: str) -> list[str]:
    """Run the checkout's scripts/venv with `args`; return what it printed."""
    done = subprocess.run(
        ["bash", "scripts/venv", *args],
        cwd=checkout,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.splitlines()


def test_scripts_venv_makes_a_venv_once_for_the_same_requirements(tmp_path: Path) -> None:
    checkout, env = _checkout(tmp_path, ensurepip=True)
    first = _venv(checkout, env, ".venv-mcp2", "-e", ".", "mcp>=2,<3")
    assert first[0] == "setup: .venv-mcp2: create ..."
    assert first[-1].startswith("setup: .venv-mcp2: pip install -e . mcp>=2,<3: done in ")
    assert _logged(tmp_path, "pip.log") == [
        ".venv-mcp2/bin/pip install --quiet --disable-pip-version-check -e . mcp>=2,<3"
    ]

    assert _venv(checkout, env, ".venv-mcp2", "-e", ".", "mcp>=2,<3") == [
        "setup: .venv-mcp2: up to date, reused"
    ]
    _venv(checkout, env, ".venv-mcp2", "-e", ".", "mcp>=2,<3", "pytest>=8")
    assert len(_logged(tmp_path, "pip.log")) == 2  # other requirements install again


def test_scripts_venv_without_requirements_says_how_to_call_it(tmp_path: Path) -> None:
    checkout, env = _checkout(tmp_path, ensurepip=True)
    done = subprocess.run(
        ["bash", "scripts/venv", ".venv-x"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "usage: scripts/venv DIR PIP-ARGS...\n"
    assert not (checkout / ".venv-x").exists()


def _steps(*commands: str) -> subprocess.CompletedProcess[str]:
    """Run `commands` after sourcing scripts/venv, with a heartbeat every second."""
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source scripts/venv; {'; '.join(commands)}"],
        cwd=ROOT,
        env={**os.environ, "FSTOOLS_SETUP_BEAT": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_long_step_says_it_still_runs() -> None:
    done = _steps("step nap sleep 2.5")
    lines = done.stdout.splitlines()
    assert lines[0] == "setup: nap ..."
    assert re.fullmatch(r"setup: nap: still running, \d+s so far", lines[1])
    assert lines[-1].startswith("setup: nap: done in ")


def test_a_failing_step_stops_the_script_with_its_status() -> None:
    done = _steps("step fails false", "echo after")
    assert done.returncode == 1
    assert done.stdout == "setup: fails ...\n"
