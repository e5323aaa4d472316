"""OutputBuffer: the head-and-tail cap and the stderr marks every executing backend shares."""

from __future__ import annotations

import pytest

from langchain_fstools.shell.session.output import STDERR_MARK, OutputBuffer


def test_output_under_the_cap_is_kept_whole() -> None:
    buffer = OutputBuffer(100)
    buffer.add(b"one\n")
    buffer.add(b"two\n")
    assert buffer.text() == "one\ntwo\n"
    assert buffer.dropped_bytes == 0


def test_over_the_cap_the_head_and_the_tail_are_kept_and_the_cut_is_counted() -> None:
    buffer = OutputBuffer(20)
    data = b"".join(b"%03d\n" % n for n in range(100))  # 400 bytes
    for start in range(0, len(data), 7):
        buffer.add(data[start : start + 7])
    assert buffer.dropped_bytes == 380
    text = buffer.text()
    head, gap, tail = text.partition("\n[... 380 bytes of output omitted ...]\n")
    assert gap
    assert head == data[:10].decode()
    assert tail == data[-10:].decode()


def test_one_huge_chunk_is_cut_the_same_way() -> None:
    buffer = OutputBuffer(10)
    buffer.add(b"a" * 5 + b"b" * 1000 + b"c" * 5)
    assert buffer.dropped_bytes == 1000
    assert buffer.text() == "aaaaa\n[... 1,000 bytes of output omitted ...]\nccccc"


def test_stderr_lines_are_marked_and_stdout_lines_are_not() -> None:
    buffer = OutputBuffer(1000)
    buffer.add(b"out 1\n")
    buffer.add(b"err 1\nerr 2\n", stderr=True)
    buffer.add(b"out 2\n")
    assert buffer.text() == "out 1\n[stderr] err 1\n[stderr] err 2\nout 2\n"


def test_a_stderr_line_split_across_chunks_is_marked_once() -> None:
    buffer = OutputBuffer(1000)
    buffer.add(b"warn", stderr=True)
    buffer.add(b"ing: x\nnext\n", stderr=True)
    assert buffer.text() == "[stderr] warning: x\n[stderr] next\n"


def test_stderr_after_a_partial_stdout_line_is_still_marked() -> None:
    buffer = OutputBuffer(1000)
    buffer.add(b"progress ")
    buffer.add(b"oops\n", stderr=True)
    assert buffer.text() == "progress [stderr] oops\n"


def test_marks_count_toward_the_cap() -> None:
    buffer = OutputBuffer(len(STDERR_MARK) * 2 + 4)
    buffer.add(b"ab\n", stderr=True)
    assert buffer.dropped_bytes == 0
    buffer.add(b"cd\n", stderr=True)
    assert buffer.dropped_bytes == 2


def test_bytes_that_are_not_utf8_are_replaced_not_raised() -> None:
    buffer = OutputBuffer(100)
    buffer.add(b"caf\xe9\n")
    assert buffer.text() == "caf\ufffd\n"


def test_a_cap_below_two_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        OutputBuffer(1)


def test_a_window_replayed_with_skip_keeps_its_gap_where_it_was() -> None:
    buffer = OutputBuffer(100)
    buffer.add(b"head\n")
    buffer.skip(1234)
    buffer.add(b"tail\n")
    assert buffer.dropped_bytes == 1234
    assert buffer.text() == "head\n\n[... 1,234 bytes of output omitted ...]\ntail\n"


def test_skipping_nothing_leaves_the_buffer_whole() -> None:
    buffer = OutputBuffer(100)
    buffer.add(b"one\n")
    buffer.skip(0)
    buffer.add(b"two\n")
    assert (buffer.text(), buffer.dropped_bytes) == ("one\ntwo\n", 0)
