"""The portable apply_patch scenarios, on every backend, sync and async.

Each case of `tests/fixtures/patch_scenarios/` (format in its README) is loaded into a
fresh workspace, the tool applies `patch.txt`, and the whole tree must then equal
`expected/` byte for byte.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from langchain_fstools.core import calls
from langchain_fstools.core.calls import Effect
from tests.unit.patch.failing import FailingWrites
from tests.unit.tools.harness import BACKENDS, Harness

SCENARIOS = Path(__file__).parents[2] / "fixtures" / "patch_scenarios"
CASES = sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir())


def files_below(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    return {
        "/" + path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def tree(directory: str = "/") -> Effect[dict[str, bytes]]:
    found: dict[str, bytes] = {}
    for entry in (yield from calls.list_dir(directory)):
        if entry.is_dir:
            found.update((yield from tree(entry.path)))
        elif entry.is_file:
            found[entry.path] = yield from calls.read_bytes(entry.path)
    return found


def test_there_are_enough_scenarios() -> None:
    assert len(CASES) >= 30
    rejected = [case for case in CASES if (SCENARIOS / case / "error.txt").exists()]
    for case in rejected:
        assert files_below(SCENARIOS / case / "input") == files_below(
            SCENARIOS / case / "expected"
        ), f"{case}: a rejected patch must leave the workspace as it was"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("case", CASES)
def test_scenario(case: str, kind: str, mode: str, tmp_path: Path) -> None:
    folder = SCENARIOS / case
    h = Harness(kind, tmp_path)
    for path, data in files_below(folder / "input").items():
        h.seed(path, data)
    fail_on = folder / "fail_on_write.txt"
    original = h.toolkit.context.backend
    if fail_on.exists():
        h.toolkit.context.backend = FailingWrites(original, int(fail_on.read_text()))
    patch = (folder / "patch.txt").read_text(encoding="utf-8")
    if mode == "sync":
        message = h.call("apply_patch", patch=patch)
    else:
        message = asyncio.run(h.acall("apply_patch", patch=patch))
    h.toolkit.context.backend = original
    error = folder / "error.txt"
    if error.exists():
        assert message.status == "error", message.content
        assert error.read_text(encoding="utf-8").strip() in message.content
    else:
        assert message.status == "success", message.content
        assert message.content.startswith("Success. Updated the following files:\n")
    after = calls.run(tree(), original.bind(h.runtime()))
    assert after == files_below(folder / "expected")
