"""Node.js programs the integration tests run, installed from their lockfiles.

Each is a folder here (`mcp_ts`, `mcp_ts2`, `mcp_inspector`, `s3rver`) with a package.json
and a package-lock.json pinning it; `installed` runs `npm ci` for it once into the cache
folder (`$XDG_CACHE_HOME`, which the suite points into the checkout's `.cache/`; npm's own
cache goes there too) and reuses that install while the lockfile is unchanged. Tests that
need one are skipped, with the reason, only when Node.js or npm is not installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSTALL_TIMEOUT = 600


def installed(package: Path, module: str) -> Path:
    """A copy of `package`'s files with `module` installed by `npm ci` (kept in the cache)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"Node.js and npm are needed to run {module}")
    lock = (package / "package-lock.json").read_bytes()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "langchain-fstools" / f"{package.name}-{hashlib.sha256(lock).hexdigest()[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    # One install at a time: test processes running side by side share the cache.
    with (folder.parent / f"{folder.name}.lock").open("w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        for path in package.iterdir():
            if path.is_file():
                shutil.copyfile(path, folder / path.name)
        if not (folder / "node_modules" / module).is_dir():
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder,
                check=True,
                timeout=INSTALL_TIMEOUT,
            )
    return folder
