"""Real media files made in the tests: images with Pillow, PDFs by hand and with pypdf,
a notebook."""

from __future__ import annotations

import io
import json

from PIL import Image
from pypdf import PdfReader, PdfWriter


def image_bytes(
    size: tuple[int, int] = (64, 48), fmt: str = "PNG", mode: str = "RGB", **save: object
) -> bytes:
    picture = Image.new(mode, size, color=(200, 30, 30, 128)[: len(mode)] if mode != "1" else 1)
    buffer = io.BytesIO()
    picture.save(buffer, format=fmt, **save)
    return buffer.getvalue()


def jpeg_rotated(size: tuple[int, int] = (80, 40)) -> bytes:
    """A JPEG whose EXIF says: rotate 90 degrees to display (orientation 6)."""
    picture = Image.new("RGB", size, color=(10, 120, 200))
    exif = Image.Exif()
    exif[0x0112] = 6
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", exif=exif.tobytes())
    return buffer.getvalue()


def animated_gif() -> bytes:
    frames = [Image.new("RGB", (30, 20), color=c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=50)
    return buffer.getvalue()


def pdf_bytes(pages: list[str]) -> bytes:
    """A valid PDF with one line of Helvetica text per page."""
    objects: list[bytes] = []
    font_id = 3
    page_ids = [4 + 2 * n for n in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for page_id, text in zip(page_ids, pages, strict=True):
        escaped = (
            text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        )
        stream = b"BT /F1 12 Tf 72 720 Td (" + escaped + b") Tj ET"
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font_id, page_id + 1)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def encrypted_pdf(pages: list[str], password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    writer.encrypt(user_password=password, owner_password=password + "-owner")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def one_cell_notebook() -> bytes:
    """An nbformat 4.5 notebook with one code cell (`id` "c1", source `x = 1`)."""
    cell = {
        "cell_type": "code",
        "id": "c1",
        "metadata": {},
        "source": "x = 1",
        "outputs": [],
        "execution_count": None,
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook).encode()
