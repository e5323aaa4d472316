"""Every backend gives the same answer to the same call, word for word.

One scenario — listings, windows, pagination, empty files, odd line breaks, encodings,
edits, refusals — runs on each backend, sync and async; the transcripts must be equal.
"""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path
from typing import Any

from tests.unit.tools.harness import BACKENDS, Harness

FILES: dict[str, bytes] = {
    "/src/app.py": b"import os\n\n\ndef main():\n    return os.getcwd()\n",
    "/src/empty.py": b"",
    "/src/Zeta.txt": b"z\n",
    "/src/_under.txt": b"u",
    "/src/été.txt": "été\n".encode(),
    "/docs/long.md": b"".join(b"paragraph %d\n" % n for n in range(1, 301)),
    "/odd/breaks.txt": "a\fb\nc\u2028d\r\ne\x85f\nno newline".encode(),
    "/odd/crlf.txt": b"one\r\ntwo\r\n",
    "/odd/utf16.txt": codecs.BOM_UTF16_LE + "x\r\ny\r\n".encode("utf-16-le"),
    "/odd/wide.txt": b"w" * 12_000 + b"\nafter\n",
    "/bin/blob": b"\x00\x01\x02\x03",
}

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ls", {"path": "/"}),
    ("ls", {"path": "/src"}),
    ("ls", {"path": "/src/app.py"}),
    ("ls", {"path": "/missing"}),
    ("read_file", {"file_path": "/src/app.py"}),
    ("read_file", {"file_path": "/src/app.py"}),
    ("read_file", {"file_path": "/src/empty.py"}),
    ("read_file", {"file_path": "/docs/long.md", "limit": 100}),
    ("read_file", {"file_path": "/docs/long.md", "offset": 101, "limit": 100}),
    ("read_file", {"file_path": "/docs/long.md", "offset": 290}),
    ("read_file", {"file_path": "/docs/long.md", "offset": 400}),
    ("read_file", {"file_path": "/docs/long.md", "offset": 1, "limit": 5}),
    ("read_file", {"file_path": "/odd/breaks.txt"}),
    ("read_file", {"file_path": "/odd/crlf.txt"}),
    ("read_file", {"file_path": "/odd/utf16.txt"}),
    ("read_file", {"file_path": "/odd/wide.txt", "limit": 2}),
    ("read_file", {"file_path": "/bin/blob"}),
    ("read_file", {"file_path": "/src/ap.py"}),
    ("read_file", {"file_path": "/../outside"}),
    ("edit_file", {"file_path": "/src/Zeta.txt", "old_string": "z", "new_string": "Z"}),
    ("edit_file", {"file_path": "/src/app.py", "old_string": "os", "new_string": "sys"}),
    (
        "edit_file",
        {"file_path": "/src/app.py", "old_string": "os", "new_string": "sys", "replace_all": True},
    ),
    ("edit_file", {"file_path": "/odd/crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
    ("read_file", {"file_path": "/odd/utf16.txt", "offset": 2}),
    ("edit_file", {"file_path": "/odd/utf16.txt", "old_string": "y", "new_string": "why"}),
    ("write_file", {"file_path": "/docs/long.md", "content": "short\n"}),
    ("write_file", {"file_path": "/new/deep/file.txt", "content": "n\n"}),
    ("ls", {"path": "/new"}),
    ("read_file", {"file_path": "/src/app.py"}),
    ("grep", {"pattern": "sys", "output_mode": "content", "-B": 1}),
    ("grep", {"pattern": "paragraph 1", "output_mode": "count"}),
    ("grep", {"pattern": "e", "path": "/odd", "output_mode": "content", "head_limit": 3}),
    ("grep", {"pattern": "e", "path": "/odd", "output_mode": "content", "offset": 3}),
    ("grep", {"pattern": "w+", "regex": True, "path": "/odd/wide.txt", "output_mode": "count"}),
    ("grep", {"pattern": "[", "regex": True}),
    ("glob", {"pattern": "src/*"}),
    ("glob", {"pattern": "**/*.txt", "path": "/odd"}),
    (
        "apply_patch",
        {
            "patch": "*** Begin Patch\n*** Update File: /odd/breaks.txt\n-no newline\n"
            "+no newline!\n*** Update File: src/empty.py\n@@\n+print()\n"
            "*** Add File: /docs/new.md\n+# New\n*** End Patch\n"
        },
    ),
    (
        "apply_patch",
        {
            "patch": "*** Begin Patch\n*** Update File: /src/Zeta.txt\n-z\n+Z\n"
            "*** Update File: /src/app.py\n def main():\n-    return cwd\n+    pass\n"
            "*** End Patch\n"
        },
    ),
    ("read_file", {"file_path": "/docs/new.md"}),
]


def transcript(kind: str, workspace: Path, *, use_async: bool) -> list[tuple[str, Any]]:
    h = Harness(kind, workspace)
    for path, data in FILES.items():
        h.seed(path, data)
    out: list[tuple[str, Any]] = []
    for name, args in CALLS:
        message = asyncio.run(h.acall(name, **args)) if use_async else h.call(name, **args)
        out.append((message.status, message.content))
    out.extend(("bytes", h.content(path)) for path in sorted(FILES) if path != "/docs/long.md")
    return out


def test_backends_agree_call_for_call(tmp_path: Path) -> None:
    reference = transcript("local", tmp_path / "reference", use_async=False)
    for kind in BACKENDS:
        for use_async in (False, True):
            other = transcript(kind, tmp_path / f"{kind}-{use_async}", use_async=use_async)
            for n, (expected, got) in enumerate(zip(reference, other, strict=True)):
                assert got == expected, f"{kind} async={use_async} step {n}: {CALLS[n : n + 1]}"


def test_the_scenario_means_what_it_says(tmp_path: Path) -> None:
    out = transcript("state", tmp_path, use_async=False)
    statuses = [status for status, _ in out[: len(CALLS)]]
    assert statuses == [
        "success", "success", "error", "error",
        "success", "success", "success", "success", "success", "success", "success", "success",
        "success", "success", "success", "success", "error", "error", "error",
        "error", "error", "success", "success",
        "success", "success",
        "error", "success", "success", "success",
        "success", "success", "success", "success", "success", "error", "success", "success",
        "success", "error", "success",
    ]  # fmt: skip
    assert out[5][1].startswith("File unchanged since your last read")
    assert out[12][1].split("\n") == [
        "1\ta\fb",
        "2\tc\u2028d",
        "3\te\x85f",
        "4\tno newline",
    ]
    assert out[15][1].splitlines()[:2] == ["1\t" + "w" * 5000, "1.1\t" + "w" * 5000]
    assert "Line 1 is long and continues on row 1.2." in out[15][1]
    files = dict(
        zip(sorted(p for p in FILES if p != "/docs/long.md"), out[len(CALLS) :], strict=True)
    )
    assert files["/odd/crlf.txt"] == ("bytes", b"1\r\n2\r\n")
    assert files["/odd/breaks.txt"] == ("bytes", "a\fb\nc\u2028d\r\ne\x85f\nno newline!\n".encode())
    assert files["/src/empty.py"] == ("bytes", b"print()\n")
    assert files["/src/Zeta.txt"] == ("bytes", b"z\n")
    assert files["/odd/utf16.txt"] == (
        "bytes",
        codecs.BOM_UTF16_LE + "x\r\nwhy\r\n".encode("utf-16-le"),
    )
    assert files["/src/app.py"] == (
        "bytes",
        b"import sys\n\n\ndef main():\n    return sys.getcwd()\n",
    )
