"""A whole agent run as `nobody`: a folder it owns, and a child script run there.

CI runs as root; these helpers run a script through `setpriv` as `nobody`, on the
system's `python3` with the project's packages on its path (the agent's own interpreter
lives under a home `nobody` cannot enter), in a folder `nobody` owns outside every home.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
SYSTEM_PYTHON = "/usr/bin/python3"
ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def folder_of_nobody(child: str, prefix: str) -> Iterator[Path]:
    """A folder `nobody` owns, holding `child` as `child.py`; removed afterwards."""
    assert os.geteuid() == 0, "these tests switch to nobody, which needs root (as in CI)"
    assert shutil.which("setpriv"), "setpriv (util-linux) is missing"
    assert Path(SYSTEM_PYTHON).exists(), "the system python3 is missing"
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix=prefix))
    base.chmod(0o755)
    os.chown(base, NOBODY, NOBODY)
    (base / "child.py").write_text(child)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_child(place: Path, *args: str) -> dict[str, Any]:
    """Run `place`'s `child.py` with `args` as `nobody`; the JSON its last line printed."""
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT), sysconfig.get_paths()["purelib"]])
    temporary = place / "tmp"  # the waiting sets' folder too: not one root made in /tmp
    temporary.mkdir(exist_ok=True)
    os.chown(temporary, NOBODY, NOBODY)
    env = {"PATH": os.environ["PATH"], "HOME": str(place), "PYTHONPATH": path}
    env["TMPDIR"] = str(temporary)
    done = subprocess.run(
        [*SETPRIV, SYSTEM_PYTHON, str(place / "child.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=place,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found
