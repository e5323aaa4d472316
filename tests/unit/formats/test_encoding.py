"""Encoding detection and byte-exact round trips."""

from __future__ import annotations

import codecs

import pytest

from langchain_fstools.formats.encoding import LATIN1, UTF8, TextCodec, detect, sniff


@pytest.mark.parametrize(
    ("data", "label"),
    [
        (b"plain ascii\n", "utf-8"),
        ("héllo\n".encode(), "utf-8"),
        (codecs.BOM_UTF8 + b"x\r\n", "utf-8 with BOM"),
        (codecs.BOM_UTF16_LE + "hi\n".encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + "hi\n".encode("utf-16-be"), "utf-16-be"),
        ("café\n".encode("latin-1"), "latin-1"),
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


def test_non_utf8_body_after_utf8_head_is_latin1() -> None:
    data = b"a" * 9000 + "é".encode("latin-1")
    assert sniff(data[:8192]) == UTF8
    assert detect(data) == LATIN1


def test_newline_bytes_per_codec() -> None:
    assert TextCodec("utf-16-le").newline == b"\n\x00"
    assert UTF8.newline == b"\n"
