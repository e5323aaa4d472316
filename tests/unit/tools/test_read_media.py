"""read_file on images and PDFs, on every backend, sync and async."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from tests.media import animated_gif, encrypted_pdf, image_bytes, jpeg_rotated, pdf_bytes
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def sent_image(content: object) -> Image.Image:
    assert isinstance(content, list)
    (block,) = [b for b in content if isinstance(b, dict) and b.get("type") == "image"]
    return Image.open(io.BytesIO(base64.b64decode(block["base64"])))


@pytest.mark.parametrize(
    ("fmt", "mode", "mime"),
    [
        ("PNG", "RGBA", "image/png"),
        ("JPEG", "RGB", "image/jpeg"),
        ("WEBP", "RGB", "image/webp"),
        ("GIF", "P", "image/gif"),
    ],
)
def test_small_images_are_sent_as_they_are(
    h: Harness, run: Run, fmt: str, mode: str, mime: str
) -> None:
    data = image_bytes((64, 48), fmt, mode)
    h.seed("/pic.bin", data)  # the extension says nothing: the bytes decide
    message = run("read_file", file_path="/pic.bin")
    assert message.status == "success", message.content
    text, block = message.content
    assert text == {
        "type": "text",
        "text": f"Image /pic.bin: {fmt} 64x48; sent as {mime} 64x48 ({len(data):,} bytes).",
    }
    assert block == {"type": "image", "base64": base64.b64encode(data).decode(), "mime_type": mime}


def test_large_image_is_scaled_to_the_limits(h: Harness, run: Run) -> None:
    h.seed("/huge.png", image_bytes((8000, 8000), "PNG"))
    message = run("read_file", file_path="/huge.png")
    picture = sent_image(message.content)
    assert picture.size[0] * picture.size[1] <= 1_150_000
    assert max(picture.size) <= 1568
    assert message.artifact["original_size"] == [8000, 8000]


def test_exif_orientation_applied_and_animation_first_frame(h: Harness, run: Run) -> None:
    h.seed("/rotated.jpg", jpeg_rotated((80, 40)))
    assert sent_image(run("read_file", file_path="/rotated.jpg").content).size == (40, 80)
    h.seed("/anim.gif", animated_gif())
    message = run("read_file", file_path="/anim.gif")
    assert "3 frames (first shown)" in message.content[0]["text"]
    assert sent_image(message.content).size == (30, 20)


def test_byte_cap_forces_reencoding(tmp_path: Path) -> None:
    from langchain_fstools.formats.image import ImageLimits  # noqa: PLC0415

    noisy = Image.effect_noise((600, 600), 100).convert("RGB")
    buffer = io.BytesIO()
    noisy.save(buffer, format="PNG")
    h = Harness("state", tmp_path, image_limits=ImageLimits(max_bytes=60_000))
    h.seed("/noise.png", buffer.getvalue())
    message = h.call("read_file", file_path="/noise.png")
    assert message.artifact["sent_bytes"] <= 60_000
    assert message.content[1]["mime_type"] == "image/jpeg"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (image_bytes((300, 300), "PNG")[:200], "corrupt or truncated"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "not an image format that can be read"),
        (image_bytes((10_000, 10_000), "PNG", "1"), "too many pixels"),
    ],
    ids=["truncated", "garbage-after-magic", "decompression-bomb"],
)
def test_bad_images_are_refused_clearly(h: Harness, run: Run, data: bytes, reason: str) -> None:
    h.seed("/bad.png", data)
    message = run("read_file", file_path="/bad.png")
    assert message.status == "error"
    assert message.content.startswith("Error: cannot read the image /bad.png: ")
    assert reason in message.content


def test_repeated_image_read_is_a_stub(h: Harness, run: Run) -> None:
    h.seed("/p.png", image_bytes())
    run("read_file", file_path="/p.png")
    again = run("read_file", file_path="/p.png")
    assert (
        again.content
        == "File unchanged since your last read: the image of /p.png you read earlier is still current."
    )


PAGES = [f"This is page {n} of the report." for n in range(1, 13)]


def test_pdf_pages_with_markers(h: Harness, run: Run) -> None:
    h.seed("/short.pdf", pdf_bytes(PAGES[:3]))
    message = run("read_file", file_path="/short.pdf")
    assert message.content == (
        "PDF /short.pdf: 3 pages; showing pages 1-3.\n\n"
        "--- Page 1 ---\nThis is page 1 of the report.\n\n"
        "--- Page 2 ---\nThis is page 2 of the report.\n\n"
        "--- Page 3 ---\nThis is page 3 of the report."
    )


def test_pdf_page_selection_rules(h: Harness, run: Run) -> None:
    h.seed("/long.pdf", pdf_bytes(PAGES))
    refused = run("read_file", file_path="/long.pdf")
    assert refused.status == "error"
    assert "has 12 pages; give pages" in refused.content
    picked = run("read_file", file_path="/long.pdf", pages="2,4-5")
    assert picked.content.splitlines()[0] == "PDF /long.pdf: 12 pages; showing pages 2,4-5."
    assert "--- Page 4 ---\nThis is page 4 of the report." in picked.content
    for bad in ("0", "3-1", "13", "x", "1-", "1-30"):
        assert run("read_file", file_path="/long.pdf", pages=bad).status == "error", bad
    again = run("read_file", file_path="/long.pdf", pages="2,4-5")
    assert again.content.startswith("File unchanged since your last read: the pages 2,4-5")


def test_pdf_with_more_than_20_pages_requested(h: Harness, run: Run) -> None:
    h.seed("/big.pdf", pdf_bytes([f"p{n}" for n in range(1, 31)]))
    message = run("read_file", file_path="/big.pdf", pages="1-21")
    assert message.status == "error"
    assert "at most 20 pages per call" in message.content


def test_encrypted_and_corrupt_pdfs(h: Harness, run: Run) -> None:
    h.seed("/open.pdf", encrypted_pdf(["readable with no password"], ""))
    assert "readable with no password" in run("read_file", file_path="/open.pdf").content
    h.seed("/locked.pdf", encrypted_pdf(["secret"], "hunter2"))
    locked = run("read_file", file_path="/locked.pdf")
    assert (
        locked.content == "Error: cannot read the PDF /locked.pdf: it is encrypted with a password."
    )
    h.seed("/corrupt.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 4)
    corrupt = run("read_file", file_path="/corrupt.pdf")
    assert corrupt.status == "error"
    assert corrupt.content.startswith("Error: cannot read the PDF /corrupt.pdf: it is corrupt")


def test_pdf_file_block_on_request(tmp_path: Path) -> None:
    h = Harness("local", tmp_path, pdf_file_blocks=True)
    h.seed("/doc.pdf", pdf_bytes(PAGES[:4]))
    message = h.call("read_file", file_path="/doc.pdf", pages="2-3")
    text, block = message.content
    assert text["text"].startswith("PDF /doc.pdf: 4 pages; showing pages 2-3.")
    assert block["type"] == "file"
    assert block["mime_type"] == "application/pdf"
    from langchain_fstools.formats.pdf import extract, open_pdf  # noqa: PLC0415

    sent = open_pdf(base64.b64decode(block["base64"]))
    assert [t for _, t in extract(sent, [1, 2]).pages] == [PAGES[1], PAGES[2]]


def test_text_over_the_byte_cap_needs_a_window(h: Harness, run: Run) -> None:
    h.seed("/big.log", b"line\n" * 60_000)
    refused = run("read_file", file_path="/big.log")
    assert refused.status == "error"
    assert "Read it in windows with offset and limit" in refused.content
    assert run("read_file", file_path="/big.log", offset=1, limit=3).content.startswith(
        "     1→line"
    )


@pytest.mark.parametrize("fmt", ["BMP", "TIFF"])
def test_bmp_and_tiff_are_read_as_images(h: Harness, run: Run, fmt: str) -> None:
    h.seed("/scan.dat", image_bytes((64, 48), fmt))
    message = run("read_file", file_path="/scan.dat")
    assert message.status == "success", message.content
    assert message.content[0]["text"].startswith(f"Image /scan.dat: {fmt} 64x48; sent as image/")
    assert sent_image(message.content).size == (64, 48)
