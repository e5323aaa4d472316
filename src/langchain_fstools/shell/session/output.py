"""Running shell commands: what an executing backend takes and gives.

A backend that can run commands sets `supports_execute = True` and overrides
`Backend.execute` (and `aexecute` when it has a real async transport). Every
implementation collects output through `OutputBuffer`, so the cap, the head-and-tail
rule and the stderr marking are the same on every backend.
"""

from __future__ import annotations

import codecs
from collections import deque

from langchain_fstools.core import progress
from langchain_fstools.core.wording import plural

STDERR_MARK = b"[stderr] "
"""Prefix of every line a command wrote to standard error."""


class OutputBuffer:
    """A command's output up to a byte cap, keeping its head and its tail.

    The first half of the cap is kept as it arrives; after that, only the last half is
    kept and everything between is counted as dropped. Lines written to standard error
    are marked with `STDERR_MARK`.

    Args:
        limit: Most bytes of output kept (marks included). Must be positive.
    """

    def __init__(self, limit: int) -> None:
        """Start empty; raises ValueError for a cap below 2 bytes."""
        if limit < 2:  # noqa: PLR2004 - one byte for the head, one for the tail
            raise ValueError("limit must be at least 2 bytes")
        self._head_limit = limit // 2
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self._tail_limit = limit - self._head_limit
        self._dropped = 0
        self._line_start = True
        self._last_from_stderr = False

    def add(self, data: bytes, *, stderr: bool = False) -> None:
        """Append a chunk of a command's output, as it was produced.

        Args:
            data: The bytes read from the stream.
            stderr: Whether they came from standard error.
        """
        if data:
            self._keep(data, stderr=stderr)

    def _keep(self, data: bytes, *, stderr: bool) -> None:
        if stderr:
            data = self._mark(data)
        self._line_start = data.endswith(b"\n")
        self._last_from_stderr = stderr
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size > self._tail_limit:
            excess = self._tail_size - self._tail_limit
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_size -= len(first)
                self._dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_size -= excess
                self._dropped += excess

    def _mark(self, data: bytes) -> bytes:
        lines = data.split(b"\n")
        marked = [STDERR_MARK + line if line else line for line in lines[1:]]
        first = lines[0]
        if first and (self._line_start or not self._last_from_stderr):
            first = STDERR_MARK + first
        return b"\n".join([first, *marked])

    def skip(self, count: int) -> None:
        """Count `count` bytes as cut here, where a window kept elsewhere dropped them.

        What is added after is kept as the tail (a remote host's head and tail, replayed).
        """
        if count > 0:
            self._head_limit = len(self._head)
            self._dropped += count

    @property
    def dropped_bytes(self) -> int:
        """Bytes cut from the middle so far."""
        return self._dropped

    def text(self) -> str:
        """The kept output, with a line saying how much was cut where it was cut."""
        head = self._head.decode("utf-8", "replace")
        tail = b"".join(self._tail).decode("utf-8", "replace")
        if not self._dropped:
            return head + tail
        gap = f"\n[... {plural(self._dropped, 'byte')} of output omitted ...]\n"
        return head + gap + tail


class OutputReporter:
    """Reports a command's output while it runs, whole lines at a time, per stream.

    Each chunk is decoded incrementally (a character split between reads is kept for
    the next), and only complete lines are reported; the rest is reported by `flush`.
    Reports are `{"output": text, "stream": "stdout" | "stderr"}`, unmarked and
    uncapped: the final result still goes through `OutputBuffer`.
    """

    def __init__(self) -> None:
        """Start with nothing pending."""
        self._decoders = {
            stream: codecs.getincrementaldecoder("utf-8")("replace")
            for stream in ("stdout", "stderr")
        }
        self._pending = {"stdout": "", "stderr": ""}

    def add(self, data: bytes, *, stderr: bool = False) -> None:
        """Take a chunk read from a stream; report the lines it completes."""
        stream = "stderr" if stderr else "stdout"
        text = self._pending[stream] + self._decoders[stream].decode(data)
        complete, newline, rest = text.rpartition("\n")
        self._pending[stream] = rest
        if newline:
            self._report(complete + newline, stream)

    def flush(self) -> None:
        """Report what is left of each stream (a last line without a newline)."""
        for stream, decoder in self._decoders.items():
            text = self._pending[stream] + decoder.decode(b"", final=True)
            self._pending[stream] = ""
            if text:
                self._report(text, stream)

    def _report(self, text: str, stream: str) -> None:
        progress.report({"output": text, "stream": stream})


def reporter_if_listening() -> OutputReporter | None:
    """An `OutputReporter` when someone listens for progress, else None."""
    return OutputReporter() if progress.listening_now() else None


__all__ = ["STDERR_MARK", "OutputBuffer", "OutputReporter", "reporter_if_listening"]
