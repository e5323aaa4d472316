"""Every tool, fed hostile arguments on the local, state and store backends.

For each generated sequence of calls: no exception escapes, no host path (the workspace
root, the temporary folder, the home folder, the virtualenv) appears in any reply, no
"failed unexpectedly", a failed or read-only call changes nothing and a successful
change names every path it changed, and every call returns within its deadline.
Hypothesis runs derandomized (a fixed seed), so a failure reproduces; the whole test is
bounded to about a minute.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_fstools.core import calls
from tests.media import one_cell_notebook
from tests.unit.tools.harness import Harness

SEARCH_TIMEOUT = 2.0
DEADLINE = SEARCH_TIMEOUT + 3.0
"""Seconds any one call may take: the search deadline plus a margin for slow machines."""

NOTEBOOK = one_cell_notebook()
TREE = {
    "/a.txt": b"alpha\nbeta\n",
    "/src/app.py": b"def main():\n    return 1\n",
    "/src/long.txt": b"x" * 12_000 + b"\nend\n",
    "/nb.ipynb": NOTEBOOK,
    "/bin.dat": bytes(range(256)),
    "/l1.txt": "caf\xe9 \u201cquoted\u201d\n".encode("cp1252"),
}
SEGMENTS = [
    "a.txt",
    "src",
    "app.py",
    "long.txt",
    "nb.ipynb",
    "bin.dat",
    "l1.txt",
    "new.txt",
    "..",
    ".",
    "",
    " ",
    "ü",
    "x\udc80",
    "a\x00b",
    "~",
    "C:",
    "\\",
    "*",
    "**",
    "[",
    "{a,}",
    "é" * 200,
    "n" * 300,
    "\u202f",
    "\n",
    "a:b",
]
paths = st.builds(
    lambda parts, absolute: ("/" if absolute else "") + "/".join(parts),
    st.lists(st.sampled_from(SEGMENTS), min_size=0, max_size=4),
    st.booleans(),
) | st.sampled_from(sorted(TREE))
texts = st.text(st.characters(exclude_categories=()), max_size=40) | st.sampled_from(
    ["alpha", "beta", "x = 1", "def main", "a\x00b", "x\udc80", "[", "(", "*", "\\"]
)
numbers = st.none() | st.integers(-3, 5) | st.sampled_from([10**12, "2.1", "x", "1.0"])
PATCH_HEAD = "*** Begin Patch\n"
patches = (
    st.builds(
        lambda path, body, kind: f"{PATCH_HEAD}*** {kind} File: {path}\n{body}\n*** End Patch",
        paths,
        st.sampled_from(["+new line", "@@\n-alpha\n+ALPHA", "-beta\n+gamma", "", "+"]) | texts,
        st.sampled_from(["Add", "Update", "Delete"]),
    )
    | texts
)

CALLS = st.one_of(
    st.tuples(st.just("ls"), st.fixed_dictionaries({"path": paths})),
    st.tuples(
        st.just("read_file"),
        st.fixed_dictionaries({"file_path": paths}, optional={"offset": numbers, "limit": numbers}),
    ),
    st.tuples(st.just("write_file"), st.fixed_dictionaries({"file_path": paths, "content": texts})),
    st.tuples(
        st.just("edit_file"),
        st.fixed_dictionaries(
            {"file_path": paths, "old_string": texts, "new_string": texts},
            optional={"replace_all": st.booleans()},
        ),
    ),
    st.tuples(st.just("glob"), st.fixed_dictionaries({"pattern": paths}, optional={"path": paths})),
    st.tuples(
        st.just("grep"),
        st.fixed_dictionaries(
            {"pattern": texts},
            optional={
                "path": paths,
                "glob": paths,
                "regex": st.booleans(),
                "output_mode": st.sampled_from(["content", "count", "files_with_matches", "x"]),
                "head_limit": numbers,
                "offset": numbers,
            },
        ),
    ),
    st.tuples(st.just("apply_patch"), st.fixed_dictionaries({"patch": patches})),
    st.tuples(
        st.just("notebook_edit"),
        st.fixed_dictionaries(
            {"notebook_path": paths, "new_source": texts},
            optional={
                "cell_id": st.sampled_from(["c1", "nope", ""]) | texts,
                "cell_type": st.sampled_from(["code", "markdown", "raw"]),
                "edit_mode": st.sampled_from(["replace", "insert", "delete", "bogus"]),
            },
        ),
    ),
)
READ_ONLY = {"ls", "read_file", "glob", "grep"}


def tree(h: Harness) -> dict[str, bytes]:
    """Every file of the workspace and its bytes, read through the backend."""
    backend = h.toolkit.backend.bind(h.runtime())
    found: dict[str, bytes] = {}
    pending = ["/"]
    while pending:
        for entry in calls.run(calls.list_dir(pending.pop()), backend):
            if entry.is_dir:
                pending.append(entry.path)
            else:
                found[entry.path] = calls.run(calls.read_bytes(entry.path), backend)
    return found


def host_paths(h: Harness, scratch: Path) -> list[str]:
    return [str(h.root), str(scratch), str(Path.home()), sys.prefix, tempfile.gettempdir() + "/"]


def without_echoes(text: str, args: dict[str, Any]) -> str:
    """`text` (JSON) less the model's own strings it repeats: a pattern `/tmp/` is no leak."""
    for value in args.values():
        if isinstance(value, str) and value:
            text = text.replace(json.dumps(value, ensure_ascii=False)[1:-1], "")
    return text


@pytest.mark.parametrize("kind", ["local", "state", "store", "composite"])
def test_fuzz_every_tool(kind: str) -> None:
    @settings(
        derandomize=True,
        max_examples=400,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(CALLS, min_size=1, max_size=6))
    def run(sequence: list[tuple[str, dict[str, Any]]]) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            h = Harness(kind, Path(scratch), search_timeout=SEARCH_TIMEOUT)
            for path, data in TREE.items():
                h.seed(path, data)
            leaks = host_paths(h, Path(scratch))
            for name, args in sequence:
                before = tree(h)
                started = time.monotonic()
                message = h.call(name, **args)
                elapsed = time.monotonic() - started
                text = json.dumps(message.content, ensure_ascii=False)
                where = f"{name}({args!r}) -> {text[:300]}"
                assert elapsed < DEADLINE, where
                assert "unexpectedly" not in text, where
                told = without_echoes(text, args)
                assert not [leak for leak in leaks if leak in told], where
                after = tree(h)
                changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
                if message.status == "error" or name in READ_ONLY:
                    assert not changed, where
                else:
                    assert all(path in str(message.content) for path in changed), where

    run()
