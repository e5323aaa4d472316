"""Linux's `openat2(2)`, for one case: a link-free directory path beneath a descriptor.

Python has no binding for `openat2` (Linux 5.6+), so it is called through `ctypes` as
the raw system call. The only use is `open_directory_beneath`: open a relative path of
directories with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, that is, in one system call,
exactly what a walk of `openat(..., O_NOFOLLOW)` calls reaches when no component is a
symlink. Anything else (a symlink on the way, a missing folder, a kernel without
`openat2`, a seccomp filter refusing it) answers None, and the caller walks the
components itself, judging links one by one.
"""

from __future__ import annotations

import functools
import os

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

_SYSCALL_NUMBERS: Final = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437}
"""`openat2`'s number: 437 on every architecture with the generic or x86-64 table."""

_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_NO_SYMLINKS: Final = 0x04
_RESOLVE_BENEATH: Final = 0x08
_RESOLVE: Final = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_FLAGS: Final = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_AT_FDCWD: Final = -100


@functools.cache
def _syscall() -> Callable[[int, str], int] | None:
    """`openat2` bound once per process, if this kernel answers it (probed on `.`).

    `ctypes` is loaded here, on first use, not when the module is: a short-lived
    process that walks beneath a root a few times (a sandbox's helper, which never
    calls this) does not pay for loading it.
    """
    import ctypes  # noqa: PLC0415 - see above
    import platform  # noqa: PLC0415 - the same

    number = _SYSCALL_NUMBERS.get(platform.machine())
    if number is None or os.uname().sysname != "Linux":
        return None

    class OpenHow(ctypes.Structure):
        _fields_ = (
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        )

    function = ctypes.CDLL(None, use_errno=True).syscall
    function.restype = ctypes.c_long
    how = OpenHow(_FLAGS, 0, _RESOLVE)
    reference, size = ctypes.byref(how), ctypes.sizeof(OpenHow)

    def call(directory: int, relative: str) -> int:
        """The new descriptor, or -1."""
        return int(function(number, directory, os.fsencode(relative), reference, size))

    probe = call(_AT_FDCWD, ".")
    if probe < 0:
        return None  # ENOSYS (before 5.6) or refused by a seccomp filter
    os.close(probe)
    return call


def open_directory_beneath(directory: int, relative: str) -> int | None:
    """A lookup (`O_PATH`) descriptor of `relative` under `directory`, reached without links.

    Args:
        directory: A directory descriptor.
        relative: Directory names joined by `/`, no `.` or `..` (a canonical path's).

    Returns:
        The new descriptor, or None: not reachable this way (walk it instead).
    """
    call = _syscall()
    if call is None:
        return None
    result = call(directory, relative)
    return result if result >= 0 else None


__all__ = ["open_directory_beneath"]
