"""Approving applies exactly the previewed change (property test).

For random edits and patches that ask, the call runs with the person's approval and
the file afterwards equals the dry run's post-image byte for byte; a call that would
fail (an ambiguous edit) shows its error instead of a diff and changes nothing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.permissions.approval import approval_request

LINES = st.lists(st.sampled_from(["x = 1", "y = 2", "  z = 'é'", "", "x = 1  "]), max_size=8)
EOL = st.sampled_from(["\n", "\r\n"])
NEW = st.sampled_from(["x = 2", "", "w = “q”", "x = 1\nx = 1"])


def _run(content: bytes, name: str, args: dict[str, Any]) -> str | None:
    """Ask, approve, run; check the file against the preview. Returns the preview's error."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.txt").write_bytes(content)
        fs = FilesystemMiddleware(backend=LocalBackend(tmp), mode="default", eviction=False)
        assert fs.gate is not None
        tools = {t.name: t for t in fs.tools}
        tools["read_file"].invoke({"file_path": "/f.txt"})
        call: Any = {"name": name, "args": args, "id": "c1", "type": "tool_call"}
        found = fs.gate.assess(call, fs.storage)
        assert found is not None
        assert found.verdict.action == "ask"
        preview = found.tool.preview(fs.storage, found.args)
        assert preview is not None
        (action,) = approval_request([(call, found.verdict, preview)])["action_requests"]
        fs.gate.grant("c1", fs.gate.approval(found, args, preview))
        runtime = SimpleNamespace(tool_call_id="c1", state=None, config={})
        try:
            result = tools[name].invoke({**args, "runtime": runtime})
        finally:
            fs.gate.revoke("c1")
        after = (Path(tmp) / "f.txt").read_bytes()
        if preview.error is not None:
            assert "diff" not in action
            assert action.get("error") == preview.error
            assert str(result) == preview.error
            assert after == content
            return preview.error
        assert "error" not in action
        if not preview.files:  # a change that changes nothing
            assert after == content
            return None
        (planned,) = preview.files
        assert planned.path == "/f.txt"
        assert after == planned.after
        assert action.get("diff") == preview.diff
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=LINES, eol=EOL, pick=st.integers(0, 7), new=NEW, replace_all=st.booleans())
def test_an_approved_edit_leaves_exactly_the_previewed_bytes(
    lines: list[str], eol: str, pick: int, new: str, replace_all: bool
) -> None:
    content = eol.join([*lines, ""]).encode()
    old = lines[pick % len(lines)] if lines and lines[pick % len(lines)] else "x = 1"
    args = {"file_path": "/f.txt", "old_string": old, "new_string": new}
    _run(content, "edit_file", {**args, "replace_all": replace_all})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=LINES, eol=EOL, pick=st.integers(0, 7), new=NEW)
def test_an_approved_patch_leaves_exactly_the_previewed_bytes(
    lines: list[str], eol: str, pick: int, new: str
) -> None:
    content = eol.join([*lines, ""]).encode()
    old = lines[pick % len(lines)] if lines else "missing"
    added = "".join(f"+{line}\n" for line in new.split("\n"))
    patch = f"*** Begin Patch\n*** Update File: /f.txt\n@@\n-{old}\n{added}*** End Patch"
    _run(content, "apply_patch", {"patch": patch})


def test_an_ambiguous_edit_shows_the_error_and_changes_nothing() -> None:
    args = {"file_path": "/f.txt", "old_string": "x = 1", "new_string": "x = 2"}
    error = _run(b"x = 1\nx = 1\n", "edit_file", args)
    assert error is not None
    assert "2 times" in error or "2 occurrences" in error or " 2 " in error
