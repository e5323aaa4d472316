"""ripgrep run straight from the sandbox's shell: a glob or grep in one light round trip.

The helper (`backends.sandbox.helper`) pays for Python's start, its loader and the
search modules' imports before rg even starts; deepagents' `BaseSandbox` runs one
`grep -r`. Here one `execute` runs a fixed shell script that

    1. enters the workspace root and the search directory with `cd -P` (links
       resolved by the shell) and checks that the directory it reached is inside the
       root; anything else (a file, a missing path, a link out of the root) prints
       `ODD` and nothing runs: the caller then asks the helper, whose search checks
       the root as the tools' `stat` does (`search.roots`);
    2. runs rg with the local backend's own command line
       (`search.ripgrep.listing_command`, `grep_command`), its standard error and its
       pid kept in the helper's private folder, its exit status appended to its output;
    3. pipes that output into `python3 -I -S -c STAMP`, which starts while rg walks,
       stops rg at the search's deadline, stats the files rg named (their
       modification times, as on local disk), then prints rg's output, its standard
       error, the folder it ran in and the times as one reply in the helper's wire
       format (`helper.pack`, framed), spilled to the private folder when long, as the
       helper's replies are.

The reply is parsed here by `search.ripgrep`'s own parsers, so the answers are the
local backend's. Used when the sandbox has rg (its own, or one uploaded:
`backends.sandbox.ripgrep_upload`).
"""

from __future__ import annotations

import io
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

ODD: Final = "<fstools-odd>"
"""What the script prints when the search path is not a directory inside the root."""

TIMED_OUT: Final = 124
"""The status the reply gives rg when it was stopped at its deadline (as `timeout`'s)."""

# $1 root, $2 directory (relative), $3 seconds, $4 python, $5 STAMP, $6 mode,
# $7 private folder, $8 inline limit; then rg's command line. rg runs in the background
# so that its pid can be kept (for STAMP to stop it at the deadline), and is waited for.
_SCRIPT: Final = f"""\
cd -P -- "$1" 2>/dev/null && top=${{PWD%/}} && cd -P -- "$top/$2" 2>/dev/null \\
&& case $PWD/ in "$top"/*) ;; *) false ;; esac || {{ echo '{ODD}'; exit 0; }}
seconds=$3 python=$4 stamp=$5 mode=$6 run=$7/rg.$$ inline=$8
shift 8
{{ "$@" </dev/null 2>"$run.err" & echo $! >"$run.pid"; wait $!; status=$?; rm -f "$run.pid"
printf '\\0\\0\\0%d' "$status"; }} | "$python" -I -S -c "$stamp" "$mode" "$run" "$inline" "$seconds"
"""

# Reads rg's output (and its exit status after three NULs) until the deadline, when it
# stops rg (its pid in `<run>.pid`, gone once rg was waited for); stats the files rg
# named from the folder rg ran in; prints the reply: `helper.pack`'s format, by hand, so
# that nothing but C modules loads.
_STAMP: Final = r"""
import binascii, os, select, sys, time, zlib
mode, run, inline = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + float(sys.argv[4])
poll = select.poll()
poll.register(0, select.POLLIN)
chunks, stopped = [], False
while True:
    left = deadline - time.monotonic()
    if left <= 0 and not stopped:
        stopped = True
        for _ in range(100):
            try:
                with open(run + ".pid") as file:
                    os.kill(int(file.read()), 15)
                break
            except ValueError:
                time.sleep(0.001)
            except OSError:
                break
    if poll.poll(None if stopped else max(left, 0) * 1000):
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
out, _, status = b"".join(chunks).rpartition(b"\0\0\0")
status = 124 if stopped else int(status or -1)
try:
    with open(run + ".err", "rb") as file:
        err = file.read(65536)
    os.unlink(run + ".err")
except OSError:
    err = b""
if mode == "json":
    import _json
    names = []
    for line in out.split(b"\n"):
        if line.startswith(b'{"type":"begin"'):
            text = line.decode("utf-8", "surrogateescape")
            at = text.find('"text":"')
            if at >= 0:
                names.append(_json.scanstring(text, at + 8)[0].encode("utf-8", "surrogateescape"))
elif mode == "count":
    names = [record.rpartition(b"\0")[0] for record in out.split(b"\n")]
else:
    names = out.split(b"\0")
times = []
for name in names:
    if name:
        try:
            times.append(name + b"\0" + repr(os.stat(name).st_mtime).encode() + b"\0")
        except OSError:
            pass
where = os.getcwd().encode("utf-8", "surrogateescape")
header = b'{"ok":[%d,%d,%d,%d]}' % (status, len(out), len(err), len(where))
packed = zlib.compress(header + b"\n" + out + err + where + b"".join(times), 1)
if inline and len(packed) * 4 // 3 > inline:
    name = "out-" + os.urandom(8).hex()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    descriptor = os.open(os.path.join(os.path.dirname(run), name), flags, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(packed)
    packed = zlib.compress(b'{"file":"' + name.encode() + b'"}\n', 1)
sys.stdout.write("<fstools:" + binascii.b2a_base64(packed, newline=False).decode() + ":fstools>\n")
"""


def command(
    rg: list[str],
    *,
    root: str,
    directory: str,
    seconds: float,
    python: str,
    mode: str,
    folder: str,
    inline: int,
) -> str:
    """The shell command that runs `rg` (its command line) in `directory` below `root`.

    Args:
        rg: rg's command line (its executable first).
        root: The workspace root in the sandbox.
        directory: The canonical virtual directory searched.
        seconds: How long rg may run.
        python: The sandbox's Python.
        mode: How rg names files in its output: `null` (NUL after each), `count`
            (`--count --null`) or `json`.
        folder: The helper's private folder (rg's standard error, a long reply).
        inline: Longest reply printed (base64 characters); 0: no limit.
    """
    arguments = [
        root,
        directory.lstrip("/"),
        f"{max(seconds, 0.0):.3f}",
        python,
        _STAMP,
        mode,
        folder,
        str(inline),
        *rg,
    ]
    return f"set -- {shlex.join(arguments)}\n{_SCRIPT}"


@dataclass(frozen=True)
class Ran:
    """What rg printed in the sandbox, and when its files were last modified.

    Attributes:
        status: rg's exit status (`TIMED_OUT`: stopped at the deadline).
        output: rg's standard output.
        errors: rg's standard error.
        folder: The folder rg ran in (its real path in the sandbox).
        mtimes: Modification time of each file rg named that could be stat'ed.
    """

    status: int
    output: bytes
    errors: str
    folder: str
    mtimes: dict[str, float]

    @property
    def timed_out(self) -> bool:
        """Whether rg was stopped at its deadline."""
        return self.status == TIMED_OUT

    def stream(self, separator: bytes) -> io.BytesIO:
        """Rg's standard output to its last `separator` (a record cut short left out)."""
        return io.BytesIO(self.output[: self.output.rfind(separator) + 1])

    def mtime_of(self, relative: str) -> float | None:
        """The modification time of a file rg named (None: gone, or not named)."""
        return self.mtimes.get(relative)

    def timed(self, names: list[str], keep: Callable[[str], bool]) -> list[tuple[str, float]]:
        """`names` that `keep` keeps, with their times (those without one left out)."""
        mtimes = self.mtimes
        return [(name, mtimes[name]) for name in names if keep(name) and name in mtimes]


def ran(value: list[int], data: bytes) -> Ran:
    """The script's reply (`value`, `data`) as a `Ran`."""
    status, out_size, err_size, where_size = value
    out = data[:out_size]
    err = data[out_size : out_size + err_size]
    where = data[out_size + err_size : out_size + err_size + where_size]
    fields = data[out_size + err_size + where_size :].split(b"\0")
    mtimes = {
        name.decode("utf-8", "surrogateescape"): float(mtime)
        for name, mtime in zip(fields[0::2], fields[1::2], strict=False)
    }
    return Ran(
        status,
        out,
        err.decode("utf-8", "replace"),
        where.decode("utf-8", "surrogateescape"),
        mtimes,
    )


def listed_names(output: bytes) -> list[str]:
    """The relative paths `rg --files --null` printed (a last one cut short left out)."""
    complete, _, _ = output.rpartition(b"\0")
    if not complete:
        return []
    return complete.decode("utf-8", "surrogateescape").split("\0")


__all__ = ["ODD", "TIMED_OUT", "Ran", "command", "listed_names", "ran"]
