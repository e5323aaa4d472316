"""ripgrep for a sandbox that lacks it: this environment's `rg`, uploaded once.

The `ripgrep` wheel's `rg` is linked against glibc alone (`libc`, `libgcc_s`, `libm`,
`libdl`, `libpthread`, `librt`), so it runs on any glibc Linux of the same machine
architecture. Whether it runs is not guessed: it is uploaded into the helper's private
folder under a content-addressed name (`rg-<sha256>`), made executable and asked for
its `--version` there. A sandbox where it cannot run (a musl image, no executable
permission in the folder, an upload that lands elsewhere) gets a `.bad` marker beside
it, so later backends do not upload it again, and searches there run the package's
own engine in the helper (the documented fallback). A sandbox of another architecture
is never sent it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import platform
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_fstools.backends.sandbox.transport import Execute, Upload
from langchain_fstools.errors import StoreUnavailable
from langchain_fstools.search import ripgrep

if TYPE_CHECKING:
    from langchain_fstools.backends.sandbox.transport import Exchange


def uploaded_ripgrep(folder: str, machine: str, timeout: int) -> Exchange[str | None]:
    """This environment's `rg` in the sandbox's private `folder`: its path, or None.

    Args:
        folder: The helper's private folder in the sandbox.
        machine: The sandbox's machine architecture (`uname -m`).
        timeout: Seconds each step may take.
    """
    local = ripgrep.find_ripgrep()
    if local is None or sys.platform != "linux" or machine != platform.machine():
        return None
    path = f"{folder}/rg-{_digest(local)[:32]}"
    if (answer := (yield Execute(_check(path), timeout))) and _runs(answer):
        return path
    if "<fstools-rg-bad>" in str(answer.output):
        return None
    with contextlib.suppress(StoreUnavailable):  # a provider that cannot upload: not run
        yield Upload(((path, Path(local).read_bytes()),))
    if _runs((yield Execute(_check(path), timeout))):
        return path
    yield Execute(f'p={shlex.quote(path)}; : > "$p.bad"; rm -f "$p"', timeout)
    return None


def _check(path: str) -> str:
    """Runs the uploaded rg (made executable), unless it was found not to run before."""
    return (
        f"p={shlex.quote(path)}; if [ -e \"$p.bad\" ]; then echo '<fstools-rg-bad>';"
        ' elif [ -e "$p" ]; then chmod 700 "$p" && "$p" --version </dev/null; fi'
    )


def _runs(response: object) -> bool:
    output = str(getattr(response, "output", ""))
    return getattr(response, "exit_code", None) == 0 and output.startswith("ripgrep ")


@functools.cache
def _digest(local: str) -> str:
    digest = hashlib.sha256()
    with Path(local).open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


__all__ = ["uploaded_ripgrep"]
