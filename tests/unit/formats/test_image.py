"""Images are resized once from the decoded size; every Pillow format is an image."""

from __future__ import annotations

import io
import math

import pytest
from PIL import Image

from langchain_fstools.formats import image, kinds
from langchain_fstools.formats.kinds import ContentKind
from tests.media import image_bytes

LIMITS = image.ImageLimits()


def expected_size(width: int, height: int) -> tuple[int, int]:
    scale = min(1.0, LIMITS.max_edge / max(width, height))
    scale = min(scale, math.sqrt(LIMITS.max_pixels / (width * height)))
    return round(width * scale), round(height * scale)


@pytest.mark.parametrize("size", [(4000, 3000), (6000, 4000), (3000, 4000)])
@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_one_resize_to_the_limits(size: tuple[int, int], fmt: str) -> None:
    prepared = image.prepare(image_bytes(size, fmt), LIMITS)
    assert prepared.original_size == size
    assert prepared.size == expected_size(*size)
    assert Image.open(io.BytesIO(prepared.data)).size == prepared.size


@pytest.mark.parametrize(
    ("fmt", "mode", "mime"),
    [
        ("BMP", "RGB", "image/bmp"),
        ("TIFF", "RGB", "image/tiff"),
        ("ICO", "RGBA", "image/x-icon"),
        ("PPM", "RGB", "image/x-portable-anymap"),
    ],
)
def test_every_format_pillow_reads_is_an_image(fmt: str, mode: str, mime: str) -> None:
    data = image_bytes((48, 32), fmt, mode)
    assert kinds.detect(data[:8192]) == (ContentKind.IMAGE, mime)
    prepared = image.prepare(data, LIMITS)
    assert prepared.original_format == fmt
    assert prepared.mime_type in {"image/png", "image/jpeg"}  # re-encoded for the model
    assert Image.open(io.BytesIO(prepared.data)).size == prepared.size


def test_sixteen_bit_greyscale_keeps_its_contrast() -> None:
    picture = Image.linear_gradient("L").resize((64, 64)).convert("I").point(lambda v: v * 200)
    buffer = io.BytesIO()
    picture.save(buffer, format="TIFF")
    sent = Image.open(io.BytesIO(image.prepare(buffer.getvalue(), LIMITS).data)).convert("L")
    low, high = sent.getextrema()
    assert (low, high) == (0, 255) or high - low > 200


@pytest.mark.parametrize("text", [b"BM is a text file\n", b"P1\n# a note, not a picture\n"])
def test_text_that_starts_like_an_image_stays_text(text: bytes) -> None:
    assert kinds.detect(text)[0] is ContentKind.TEXT


def test_random_binary_is_not_an_image() -> None:
    assert kinds.detect(bytes(range(256)) * 4) == (ContentKind.BINARY, None)
