"""scripts/setup installs python3-venv where `python3 -m venv` cannot work (Debian, Ubuntu)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stub(folder: Path, name: str, body: str) -> None:
    script = folder / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def _run_setup(tmp_path: Path, *, ensurepip: bool) -> list[str]:
    """Run a copy of scripts/setup with stub python3/apt-get/sudo; return apt's calls."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup", checkout / "scripts" / "setup")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "apt.log"
    _stub(stubs, "apt-get", f'echo "$*" >> {log}')
    _stub(stubs, "sudo", '"$@"')
    for tool in ("git", "bwrap", "pg_ctl"):
        _stub(stubs, tool, "exit 0")
    pip = 'mkdir -p "$3/bin" && printf \'#!/bin/sh\\nexit 0\\n\' > "$3/bin/pip"'
    _stub(
        stubs,
        "python3",
        f"""case "$*" in
  "-c import ensurepip") exit {0 if ensurepip else 1};;
  "-m venv "*) {pip} && chmod +x "$3/bin/pip";;
esac""",
    )
    env = {**os.environ, "PATH": f"{stubs}:/usr/bin:/bin"}
    subprocess.run(["bash", "scripts/setup"], cwd=checkout, env=env, check=True)
    return log.read_text().splitlines() if log.exists() else []


def test_setup_installs_python3_venv_when_ensurepip_is_missing(tmp_path: Path) -> None:
    calls = _run_setup(tmp_path, ensurepip=False)
    installs = [call.split() for call in calls if call.startswith("install")]
    assert installs
    assert "python3-venv" in installs[0]


def test_setup_leaves_python3_venv_alone_when_venv_works(tmp_path: Path) -> None:
    calls = _run_setup(tmp_path, ensurepip=True)
    assert not any("python3-venv" in call for call in calls)
