"""Encoding detection and byte-exact round trips."""

from __future__ import annotations

import array
import codecs
import time

import pytest

from langchain_fstools.formats.encoding import CP1252, UTF8, TextCodec, detect, sniff


@pytest.mark.parametrize(
    ("data", "label"),
    [
        (b"plain ascii\n", "utf-8"),
        ("héllo\n".encode(), "utf-8"),
        (codecs.BOM_UTF8 + b"x\r\n", "utf-8 with BOM"),
        (codecs.BOM_UTF16_LE + "hi\n".encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + "hi\n".encode("utf-16-be"), "utf-16-be"),
        ("café\n".encode("latin-1"), "cp1252"),
    ],
)
def test_detects_and_round_trips(data: bytes, label: str) -> None:
    codec = detect(data)
    assert codec is not None
    assert codec.label == label
    assert codec.encode(codec.decode(data)) == data


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01\x02\x03",
        b"PK\x03\x04\x00\x00",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"\x01\x02\x03\x04\x05\x06 x",
    ],
)
def test_binary_is_refused(data: bytes) -> None:
    assert sniff(data) is None


def test_utf8_cut_mid_character_in_head_is_still_utf8() -> None:
    head = ("é" * 10).encode()[:-1]
    assert sniff(head) == UTF8


def test_non_utf8_body_after_utf8_head_is_a_code_page() -> None:
    data = b"a" * 9000 + "é".encode("latin-1")
    assert sniff(data[:8192]) == UTF8
    assert detect(data) == CP1252


@pytest.mark.parametrize(
    "data",
    [
        "naïve café\n".encode("cp1252") + b"\x81\x8d",  # undefined in Windows-1252
        "日本語\n".encode("shift_jis") + b"\xff\xfe\x80",
        b"x" * 9000 + "日本語のテキスト\n".encode("shift_jis") * 50,
    ],
)
def test_the_codec_for_edits_round_trips_every_byte(data: bytes) -> None:
    codec = detect(data)
    assert codec is not None
    assert codec.encode(codec.decode(data)) == data


@pytest.mark.parametrize(
    ("text", "codec", "label"),
    [
        ("Größe: Übung für die Straße, “schön” – 5€.\n" * 20, "cp1252", "cp1252"),
        ("日本語のテキストです。ファイルを読む。\n" * 20, "shift_jis", "cp932"),
        ("Привет мир, это тест кодировки файла.\n" * 20, "cp1251", "cp1251"),
        ("hello wörld\nline two\n" * 20, "utf-16-le", "utf-16-le"),
        ("hello wörld\nline two\n" * 20, "utf-16-be", "utf-16-be"),
    ],
)
def test_legacy_and_bomless_encodings_are_themselves(text: str, codec: str, label: str) -> None:
    data = text.encode(codec)
    for found in (sniff(data[:8192]), detect(data)):
        assert found is not None
        assert found.label == label
        assert found.decode(data) == text


def test_utf16_without_bom_needs_readable_text() -> None:
    assert sniff(array.array("h", range(200)).tobytes()) is None  # small integers
    assert sniff(bytes(range(256)) * 8) is None


def test_utf8_detection_stays_fast() -> None:
    head = ("plain text, line after line\n" * 400).encode()[:8192]
    started = time.perf_counter()
    for _ in range(1000):
        assert sniff(head) == UTF8
    assert time.perf_counter() - started < 0.5  # about 5 µs each


def test_newline_bytes_per_codec() -> None:
    assert TextCodec("utf-16-le").newline == b"\n\x00"
    assert UTF8.newline == b"\n"
