"""`Background.wait_for_line`: a line of a background process's output, as it comes.

A `Background` over pipes this test writes (no process, no sandbox): the window read
so far counts, a line split across chunks and stderr lines count, the end of the
output stops the wait.
"""

from __future__ import annotations

import os
import re
import threading
import time

from langchain_fstools.shell.session.background import Background


def _background() -> tuple[Background, int, int, threading.Event]:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ended = threading.Event()
    background = Background(
        "p1",
        "server",
        fds=[out_r, err_r],
        stdin=None,
        ended=ended,
        status=lambda: 0,
        stop=ended.set,
        output_limit=10_000,
    )
    return background, out_w, err_w, ended


def _end(out_w: int, err_w: int, ended: threading.Event) -> None:
    os.close(out_w)
    os.close(err_w)
    ended.set()


def test_a_line_split_across_chunks_is_found_as_it_comes() -> None:
    background, out_w, err_w, ended = _background()
    try:
        os.write(out_w, b"starting\nlisten")
        found: list[bool] = []
        waiter = threading.Thread(
            target=lambda: found.append(
                background.wait_for_line(re.compile(r"^listening on \d+$"), 10)
            )
        )
        waiter.start()
        os.write(out_w, b"ing on 8000\n")
        waiter.join(10)
        assert found == [True]
    finally:
        _end(out_w, err_w, ended)


def test_a_stderr_line_already_in_the_window_counts_unmarked() -> None:
    background, out_w, err_w, ended = _background()
    try:
        os.write(err_w, b"ready to serve\n")
        for _ in range(1000):  # until the reader has it (10 s at most)
            if "ready" in background._buffer.text():
                break
            ended.wait(0.01)
        assert background.wait_for_line(re.compile(r"^ready"), 0)
        assert "ready to serve" in background.read().text  # the window is left to read
    finally:
        _end(out_w, err_w, ended)


def test_the_end_of_the_output_stops_the_wait() -> None:
    background, out_w, err_w, ended = _background()
    os.write(out_w, b"address already in use\n")
    threading.Timer(0.2, _end, (out_w, err_w, ended)).start()
    started = time.monotonic()
    assert not background.wait_for_line(re.compile("listening"), 30)
    assert time.monotonic() - started < 20  # the end, not the 30 s timeout, stopped it
