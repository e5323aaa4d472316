"""Images for vision models: decode, orient, shrink to the model's limits, re-encode.

Pillow does the work. The pipeline, in order:
    1. refuse images whose header promises more pixels than `max_source_pixels`
       (decompression bombs) before decoding anything;
    2. take the first frame of animations and apply the EXIF orientation;
    3. scale down (never up) to fit `max_edge` and `max_pixels`: the target size is
       computed once from the original size, and the decoded image (which a JPEG
       decoder may already have reduced by a power of two) is resized to it once;
    4. send the original bytes when nothing had to change, the format is one every
       vision model takes (PNG, JPEG, GIF, WebP) and they fit `max_bytes`; otherwise
       encode PNG (for transparency) or JPEG at falling quality, shrinking further
       until the result fits `max_bytes`.
Every format Pillow reads (BMP, TIFF, ICO, ...) is accepted. Corrupt, truncated and
unreadable files raise `Unreadable`.
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from langchain_fstools.formats.kinds import Unreadable

_ORIENTATION = 0x0112
SUPPORTED = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
"""Formats sent as they are when nothing has to change; others are re-encoded."""


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """What a vision model accepts.

    Attributes:
        max_edge: Longest side in pixels. Default: 1568.
        max_pixels: Most pixels. Default: 1,150,000 (about 1.15 megapixels).
        max_bytes: Largest encoded image. Default: 3,750,000 (5 MB once base64-encoded).
        max_source_pixels: Largest image decoded at all. Default: 89,478,485 (Pillow's
            decompression-bomb threshold).
    """

    max_edge: int = 1568
    max_pixels: int = 1_150_000
    max_bytes: int = 3_750_000
    max_source_pixels: int = 89_478_485


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """An image ready to send, and what was done to it."""

    data: bytes
    mime_type: str
    original_size: tuple[int, int]
    original_format: str
    size: tuple[int, int]
    frames: int


def prepare(data: bytes, limits: ImageLimits) -> PreparedImage:
    """Make `data` fit `limits`.

    Raises:
        Unreadable: not an image, unsupported, truncated, corrupt, or too large.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return _prepare(data, limits)
    except Unreadable:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Unreadable("it has too many pixels to decode safely") from None
    except UnidentifiedImageError:
        raise Unreadable("it is not an image format that can be read") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise Unreadable(f"it is corrupt or truncated ({_first_line(exc)})") from None


def _prepare(data: bytes, limits: ImageLimits) -> PreparedImage:
    with Image.open(io.BytesIO(data)) as opened:
        format_name = opened.format or "unknown"
        width, height = opened.size
        if width * height > limits.max_source_pixels:
            raise Unreadable(f"it is {width}x{height}, too many pixels to decode safely")
        frames = getattr(opened, "n_frames", 1)
        scale = min(
            1.0,
            limits.max_edge / max(width, height),
            math.sqrt(limits.max_pixels / (width * height)),
        )
        if format_name == "JPEG" and scale < 1:
            opened.draft("RGB", (max(1, int(width * scale)), max(1, int(height * scale))))
        rotated = opened.getexif().get(_ORIENTATION, 1) not in (0, 1)
        opened.seek(0)
        opened.load()
        if (
            scale >= 1
            and not rotated
            and frames == 1
            and format_name in SUPPORTED
            and len(data) <= limits.max_bytes
        ):
            return PreparedImage(
                data, SUPPORTED[format_name], (width, height), format_name, (width, height), frames
            )
        oriented = ImageOps.exif_transpose(opened) if rotated else opened
        # a JPEG draft may have decoded fewer pixels: scale what was decoded, once
        scale *= max(width, height) / max(oriented.size)
        return _encode(oriented, scale, limits, (width, height), format_name, frames)


def _encode(  # noqa: PLR0917 - the image and what to report about its source
    image: Image.Image,
    scale: float,
    limits: ImageLimits,
    original: tuple[int, int],
    format_name: str,
    frames: int,
) -> PreparedImage:
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    wanted = "RGBA" if has_alpha else "RGB"
    base = image if image.mode == wanted else _to_8_bit(image).convert(wanted)
    while True:
        width, height = base.size
        target = (max(1, round(width * scale)), max(1, round(height * scale)))
        resized = (
            base
            if target == base.size
            else base.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
        )
        for encoded, mime in _candidates(resized, has_alpha):
            if len(encoded) <= limits.max_bytes:
                return PreparedImage(encoded, mime, original, format_name, resized.size, frames)
        scale *= 0.75


def _to_8_bit(image: Image.Image) -> Image.Image:
    """Map 16-bit and float greyscale (TIFF, PNG) onto 0-255, which `convert` clips."""
    if image.mode not in ("I", "I;16", "I;16B", "I;16L", "F"):
        return image
    extrema = image.getextrema()
    low, high = (
        (float(extrema[0]), float(extrema[1]))
        if isinstance(extrema[0], int | float) and isinstance(extrema[1], int | float)
        else (0.0, 255.0)
    )
    span = (high - low) or 1.0
    return image.convert("F").point(lambda v: (v - low) * 255.0 / span).convert("L")


def _candidates(image: Image.Image, has_alpha: bool) -> list[tuple[bytes, str]]:  # noqa: FBT001
    out: list[tuple[bytes, str]] = []
    if has_alpha:
        out.append((_save(image, "PNG", optimize=True), "image/png"))
    rgb = image.convert("RGB") if has_alpha else image
    out += [(_save(rgb, "JPEG", quality=quality), "image/jpeg") for quality in (85, 70, 50)]
    return out


def _save(image: Image.Image, format_name: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=format_name, **options)
    return buffer.getvalue()


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


__all__ = ["SUPPORTED", "ImageLimits", "PreparedImage", "prepare"]
