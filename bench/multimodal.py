"""Reading media: a 50 MB image and pages 1-5 of a 500-page PDF, ours vs deepagents.

    python bench/multimodal.py [--data-dir bench/.data] [--repeat 3]

Each read runs in a fresh interpreter; peak memory is ru_maxrss growth over that
process's baseline taken right before the read. Ours is the `read_file` tool on
`LocalBackend` (the image scaled to vision limits; the pages' text extracted); deepagents
is `FilesystemBackend.read` on the same file, which returns the file's bytes as base64
(images and PDFs alike) without resizing or text extraction. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def make_files(directory: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT))
    from PIL import Image
    from tests.media import pdf_bytes

    picture, document = directory / "photo.png", directory / "report.pdf"
    if not picture.exists():
        pixels = random.Random(5).randbytes(4200 * 4200 * 3)  # noqa: S311 - reproducible noise
        noise = Image.frombytes("RGB", (4200, 4200), pixels)
        buffer = io.BytesIO()
        noise.save(buffer, format="PNG", compress_level=1)
        picture.write_bytes(buffer.getvalue())
    if not document.exists():
        document.write_bytes(
            pdf_bytes([f"Page {n}: quarterly figures and notes." for n in range(1, 501)])
        )
    return picture, document


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(mode: str, path: Path) -> dict[str, Any]:
    if mode.startswith("ours"):
        from langchain_fstools import FileToolkit, LocalBackend

        (read,) = FileToolkit(LocalBackend(path.parent), tools=["read_file"]).get_tools()
        args: dict[str, Any] = {"file_path": f"/{path.name}"}
        if path.suffix == ".pdf":
            args["pages"] = "1-5"

        def run() -> Any:
            return read.invoke({"type": "tool_call", "id": "b", "name": "read_file", "args": args})
    else:
        from deepagents.backends.filesystem import FilesystemBackend

        backend = FilesystemBackend(root_dir=str(path.parent), virtual_mode=True)

        def run() -> Any:
            return backend.read(f"/{path.name}", offset=0, limit=2000)

    baseline = peak_kib()
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    return {"wall": wall, "peak_mb": (peak_kib() - baseline) / 1024, "summary": summarize(result)}


def summarize(result: Any) -> str:
    content = getattr(result, "content", None)
    if isinstance(content, list):
        kinds = [b.get("type") for b in content if isinstance(b, dict)]
        size = sum(len(b.get("base64", "")) for b in content if isinstance(b, dict))
        return f"blocks {kinds}, {size / 2**20:.2f} MiB base64"
    if isinstance(content, str):
        return f"text, {len(content):,} chars: {content.splitlines()[0][:60]}"
    data = getattr(result, "file_data", None) or {}
    text = str(data.get("content", ""))
    error = getattr(result, "error", None)
    return f"error: {error}" if error else f"{data.get('encoding')}, {len(text) / 2**20:.2f} MiB"


def measure(mode: str, path: Path, repeat: int) -> dict[str, Any]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "wall": statistics.median(r["wall"] for r in runs),
        "peak_mb": statistics.median(r["peak_mb"] for r in runs),
        "summary": runs[0]["summary"],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / ".data" / "media")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FILE"))
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(options.child[0], Path(options.child[1]))))
        return 0
    options.data_dir.mkdir(parents=True, exist_ok=True)
    picture, document = make_files(options.data_dir)
    print(
        f"image: {picture.stat().st_size / 2**20:.1f} MiB PNG 4200x4200; PDF: 500 pages, {document.stat().st_size / 2**20:.2f} MiB\n"
    )
    print("| read | wall ms | peak RSS above baseline MB | result |")
    print("|---|---:|---:|---|")
    for label, mode, path in [
        ("ours: image", "ours", picture),
        ("deepagents: image", "deepagents", picture),
        ("ours: PDF pages 1-5", "ours", document),
        ("deepagents: PDF", "deepagents", document),
    ]:
        row = measure(mode, path, options.repeat)
        print(f"| {label} | {row['wall'] * 1000:,.1f} | {row['peak_mb']:,.1f} | {row['summary']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
