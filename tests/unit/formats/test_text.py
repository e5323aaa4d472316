"""Text windows: rows, continuation, token budget, line index, odd line breaks."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_fstools.core import calls
from langchain_fstools.core.calls import Effect
from langchain_fstools.formats import text
from langchain_fstools.formats.text import LineIndex, Window, count_lines, read_window


def _reader(data: bytes, log: list[tuple[int, int]] | None = None) -> text.Reader:
    def read(start: int, size: int) -> Effect[bytes]:
        if log is not None:
            log.append((start, size))
        return data[start : start + size]
        yield

    return read


def window(
    data: bytes,
    offset: int = 1,
    limit: int = 2000,
    budget: int = 25_000,
    index: LineIndex | None = None,
    reader: text.Reader | None = None,
) -> Window:
    effect = read_window(
        reader or _reader(data),
        index or LineIndex(),
        codec="utf-8",
        offset=offset,
        limit=limit,
        token_budget=budget,
        count_tokens=lambda row: len(row),
    )
    return calls.run(effect, None)  # type: ignore[arg-type]


NUMBERED = b"".join(b"line %d\n" % n for n in range(1, 101))


def test_rows_are_cat_n_style() -> None:
    w = window(b"alpha\nbeta\n")
    assert w.rows == ["1\talpha", "2\tbeta"]
    assert (w.total_lines, w.next_offset, w.stopped_by) == (2, None, "end")


def test_limit_gives_exact_next_offset() -> None:
    w = window(NUMBERED, offset=10, limit=5)
    assert w.rows[0] == "10\tline 10"
    assert w.rows[-1] == "14\tline 14"
    assert (w.next_offset, w.stopped_by) == (15, "limit")


def test_window_ending_exactly_at_last_line_says_end() -> None:
    w = window(NUMBERED, offset=96, limit=5)
    assert (w.last_line, w.next_offset, w.total_lines, w.stopped_by) == (100, None, 100, "end")


def test_offset_past_end_is_empty_with_total() -> None:
    w = window(NUMBERED, offset=150, limit=5)
    assert w.rows == []
    assert w.total_lines == 100


def test_crlf_not_shown_and_no_final_newline_counts() -> None:
    w = window(b"a\r\nb\r\nc")
    assert w.rows == ["1\ta", "2\tb", "3\tc"]
    assert w.total_lines == 3


@pytest.mark.parametrize("separator", ["\f", "\u2028", "\u2029", "\x85", "\v", "\r"])
def test_only_newline_splits_lines(separator: str) -> None:
    data = f"a{separator}b\nc\n".encode()
    w = window(data)
    assert len(w.rows) == 2
    assert w.rows[1] == "2\tc"
    assert count_lines(data.decode()) == 2


def test_long_line_continues_on_dotted_rows() -> None:
    data = b"x" * (text.ROW_WIDTH * 2 + 10) + b"\nnext\n"
    w = window(data)
    assert [row.split("\t")[0].strip() for row in w.rows] == ["1", "1.1", "1.2", "2"]
    assert w.rows[2] == "1.2\t" + "x" * 10


def test_rows_count_toward_limit_and_partial_line_is_retried() -> None:
    data = b"short\n" + b"y" * (text.ROW_WIDTH * 3) + b"\nend\n"
    w = window(data, limit=2)
    # line 2 needs 3 rows; only 1 fits, so the window stops after line 1
    assert w.rows == ["1\tshort"]
    assert w.next_offset == 2


def test_a_line_longer_than_the_whole_window_continues_on_its_next_row() -> None:
    data = b"z" * (text.ROW_WIDTH * 3) + b"\nafter\n"
    w = window(data, limit=2)
    assert len(w.rows) == 2
    assert (w.next_offset, w.next_row, w.continuation) == (1, 2, "1.2")
    rest = calls.run(
        read_window(
            _reader(data),
            LineIndex(),
            codec="utf-8",
            offset=1,
            row=2,
            limit=2,
            token_budget=25_000,
            count_tokens=len,
        ),
        None,  # type: ignore[arg-type]
    )
    assert [r.split("\t")[0].strip() for r in rest.rows] == ["1.2", "2"]
    assert (rest.continuation, rest.stopped_by) == (None, "end")


def test_token_budget_ends_on_last_whole_row() -> None:
    w = window(NUMBERED, budget=20)  # each row costs len(row) + 1 = 9 chars here
    assert len(w.rows) == 2
    assert (w.stopped_by, w.next_offset) == ("tokens", 3)


def test_first_row_always_shown_even_over_budget() -> None:
    w = window(b"a fairly long line\n", budget=1)
    assert len(w.rows) == 1


def test_empty_file() -> None:
    w = window(b"")
    assert (w.rows, w.total_lines) == ([], 0)


def test_line_index_makes_second_read_proportional_to_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(text, "CHUNK_BYTES", 64)
    data = b"".join(b"row %05d\n" % n for n in range(1, 5001))
    index = LineIndex()
    first = window(data, offset=4900, limit=10, index=index)
    assert first.rows[0] == "4900\trow 04900"
    log: list[tuple[int, int]] = []
    again = window(data, offset=4890, limit=10, index=index, reader=_reader(data, log))
    assert again.rows[0] == "4890\trow 04890"
    assert sum(size for _, size in log) < 64 * 6
    assert all(start > len(data) - 64 * 200 for start, _ in log)


def test_bom_is_not_part_of_line_one() -> None:
    data = b"\xef\xbb\xbfhello\n"
    w = window(data, index=LineIndex(start=3))
    assert w.rows == ["1\thello"]


def _one_line_at_a_time(data: bytes, offset: int, limit: int, budget: int) -> list[str]:
    """The window's rows as the spec reads: line by line, each row paying its length + 1."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    rows: list[str] = []
    tokens = 0
    for number, raw in enumerate(lines[offset - 1 :], offset):
        candidates = text.line_rows(number, text.decode_line(raw, "utf-8"))
        fitted = 0
        for row in candidates:
            if len(rows) >= limit or (rows and tokens + len(row) + 1 > budget):
                break
            rows.append(row)
            tokens, fitted = tokens + len(row) + 1, fitted + 1
        if fitted < len(candidates):
            if number != offset:
                del rows[len(rows) - fitted :]
            break
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_windows_match_a_line_by_line_reading(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    monkeypatch.setattr(text, "ROW_WIDTH", 8)
    monkeypatch.setattr(text, "CHUNK_BYTES", rng.choice([16, 64, 4096]))
    monkeypatch.setattr(text, "BATCH_BYTES", rng.choice([8, 40, 4096]))
    monkeypatch.setattr(text, "MARK_BYTES", rng.choice([4, 16, 4096]))
    pieces = [b"a", b"bc", b"\xc3\xa9", b"\xe2\x82", b"\xff", b"\r", b"\n", b"\n", b"\r\n", b" "]
    for _ in range(150):
        data = b"".join(rng.choices(pieces, k=rng.randint(0, 60)))
        index = LineIndex()  # shared by the windows of one text, as reads of a version share it
        for _ in range(3):
            offset, limit = rng.randint(1, 25), rng.randint(1, 12)
            budget = rng.choice([1, 15, 40, 25_000])
            w = window(data, offset=offset, limit=limit, budget=budget, index=index)
            assert w.rows == _one_line_at_a_time(data, offset, limit, budget), data


@settings(derandomize=True, max_examples=400, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab é中😀\r\t", max_size=70), max_size=8),
    final_newline=st.booleans(),
    limit=st.integers(1, 6),
    budget=st.integers(1, 120),
)
def test_following_continuations_visits_every_character_once(
    lines: list[str], final_newline: bool, limit: int, budget: int
) -> None:
    data = "\n".join(lines) + ("\n" if final_newline and lines else "")
    expected = {
        n: line.removesuffix("\r")
        for n, line in enumerate(data.split("\n")[: text.count_lines(data)], 1)
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text, "ROW_WIDTH", 8)
        patch.setattr(text, "CHUNK_BYTES", 16)
        patch.setattr(text, "BATCH_BYTES", 24)
        seen: dict[int, str] = {}
        labels: list[str] = []
        index, offset, row = LineIndex(), 1, 0
        for _ in range(len(data) + 2):
            w = calls.run(
                read_window(
                    _reader(data.encode()),
                    index,
                    codec="utf-8",
                    offset=offset,
                    row=row,
                    limit=limit,
                    token_budget=budget,
                    count_tokens=len,
                ),
                None,  # type: ignore[arg-type]
            )
            for shown in w.rows:
                label, _, body = shown.partition("\t")
                labels.append(label.strip())
                number = int(label.strip().partition(".")[0])
                seen[number] = seen.get(number, "") + body
            if w.continuation is None:
                break
            assert w.rows
            assert (w.next_offset, w.next_row) > (offset, row)  # always moves forward
            offset, row = w.next_offset or 0, w.next_row
        else:
            pytest.fail("the continuations did not reach the end")
    assert seen == expected
    assert len(labels) == len(set(labels))  # no row shown twice


@settings(derandomize=True, max_examples=500, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=60),
    tail=st.binary(max_size=10).map(lambda b: b.replace(b"\n", b"")),
    count=st.integers(1, 70),
    cut=st.floats(0, 1),
)
def test_the_line_start_is_found_after_exactly_that_many_newlines(
    lines: list[bytes], tail: bytes, count: int, cut: float
) -> None:
    chunk = b"".join(line + b"\n" for line in lines) + tail
    span = round(len(chunk) * cut)  # only newlines before it count
    ends = [k + 1 for k, byte in enumerate(chunk) if byte == ord("\n") and k < span]
    expected = ends[count - 1] if count <= len(ends) else -1
    assert text._after_newlines(chunk, count, span) == expected


@pytest.mark.parametrize("seed", range(6))
def test_reads_sharing_an_index_at_once_agree_with_one_read_alone(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parallel tool calls reading one file version share its index; their scans interleave.

    Each window is driven one read at a time, round robin, so every read of one window
    falls between reads of the others: each must still show the lines a lone read shows.
    """
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    monkeypatch.setattr(text, "CHUNK_BYTES", rng.choice([16, 64]))
    monkeypatch.setattr(text, "MARK_BYTES", rng.choice([4, 16]))
    data = b"".join(b"%d %s\n" % (n, b"x" * rng.randint(0, 9)) for n in range(1, 301))
    index = LineIndex()
    offsets = [rng.randint(1, 320) for _ in range(4)]

    def reading(start: int, size: int) -> Effect[bytes]:
        chunk: bytes = yield calls.Call("read_bytes", (start, size))
        return chunk

    def effect(offset: int) -> Effect[Window]:
        return read_window(
            reading,
            index,
            codec="utf-8",
            offset=offset,
            limit=3,
            token_budget=25_000,
            count_tokens=len,
        )

    running = {offset: (effect(offset), None) for offset in offsets}
    windows: dict[int, Window] = {}
    while running:
        for offset, (pending, answer) in list(running.items()):
            try:
                call = pending.send(answer)
            except StopIteration as stop:
                windows[offset] = stop.value
                del running[offset]
            else:
                start, size = call.args
                running[offset] = (pending, data[start : start + size])
    for offset in offsets:
        assert windows[offset].rows == window(data, offset=offset, limit=3).rows, offset
    later = window(data, offset=250, limit=2, index=index)  # the index they left is sound
    assert later.rows == window(data, offset=250, limit=2).rows
