"""`ignored_among` agrees with the search: a file is ignored exactly when it is not listed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from langchain_fstools import LocalBackend
from langchain_fstools.core import calls
from langchain_fstools.search.engine import ignored_among, list_files

if TYPE_CHECKING:
    from pathlib import Path

TREE = {
    ".gitignore": "build/\n*.log\n!keep.log\n",
    "src/.gitignore": "generated.py\n",
    "src/app.py": "",
    "src/generated.py": "",
    "src/deep/generated.py": "",
    "build/out.o": "",
    "build/deeper/x.o": "",
    "a.log": "",
    "keep.log": "",
    "docs/.ignore": "*.md\n",
    "docs/read.md": "",
    "docs/read.txt": "",
    ".git/info/exclude": "secret.txt\n",
    "secret.txt": "",
}


def test_a_file_is_ignored_exactly_when_the_search_does_not_list_it(tmp_path: Path) -> None:
    for name, text in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    backend = LocalBackend(tmp_path, use_ripgrep=False)
    files = [f"/{name}" for name in TREE if not name.startswith(".git/")]
    deadline = time.monotonic() + 30

    listing = calls.run(list_files("/", globs=(), deadline=deadline), backend)
    listed = {found.path for found in listing.files}
    ignored = calls.run(ignored_among([(path, False) for path in files]), backend)

    assert ignored == set(files) - listed
    assert ignored == {
        "/src/generated.py",
        "/src/deep/generated.py",
        "/build/out.o",
        "/build/deeper/x.o",
        "/a.log",
        "/docs/read.md",
        "/secret.txt",
    }
    folders = calls.run(ignored_among([("/build", True), ("/src", True)]), backend)
    assert folders == {"/build"}
