"""apply_patch vs edit loops: one patch against the same edits made one call at a time.

    python bench/patch.py [--repeat 3]

Two workloads on local disk, each timed from a freshly written workspace:

- big file: 200 one-line changes spread over a 50,000-line file;
- many files: one one-line change in each of 100 files of 200 lines;
- many broken files: the same, in files whose every line is a syntax error.

Each workload is applied four ways: our `apply_patch` tool (one call, Codex patch with
3 context lines per chunk), durable (the default) and with `durability="rename"` (no
fsync), our `edit_file` tool called once per change (after the `read_file` calls
read-before-write requires: one per file), and deepagents' `FilesystemBackend.edit`
called once per change (which does not fsync). All through `FileToolkit` on
`LocalBackend` for ours, with the syntax check on (its default); the 100 files are valid
Python. Runs of the ways alternate. Reported: median wall time of `--repeat` runs and
the ratio to apply_patch, and PASS/FAIL for the targets: (issue 19) the 100-file
`apply_patch` at most deepagents' edit loop; (issue 28) at most 1.2x it, and on the
broken files at most 1.5x the valid files' time (the check costs what it finds). A
benchmark, not a test: it checks only that every way made the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepagents.backends.filesystem import FilesystemBackend

from langchain_fstools import FileToolkit, LocalBackend

if TYPE_CHECKING:
    from collections.abc import Callable

Edit = tuple[str, str, str]
"""(virtual path, old line, new line)"""


def line(n: int) -> str:
    return f"line {n}: value = {n * 7}"


def big_file() -> tuple[dict[str, list[str]], list[Edit]]:
    lines = [line(n) for n in range(1, 50_001)]
    edits = [("/big.txt", line(n), line(n) + "  # changed") for n in range(125, 50_000, 250)]
    return {"/big.txt": lines}, edits[:200]


def python_line(n: int) -> str:
    return f"value_{n} = {n * 7}"


def many_files() -> tuple[dict[str, list[str]], list[Edit]]:
    """Valid Python, so the syntax check (on by default) sees the code it is made for."""
    files = {f"/pkg/mod_{k:03d}.py": [python_line(n) for n in range(1, 201)] for k in range(100)}
    edits = [(path, python_line(100), python_line(100) + "  # changed") for path in files]
    return files, edits


def broken_line(n: int) -> str:
    return f"value_{n} = = {n * 7}"


def many_broken_files() -> tuple[dict[str, list[str]], list[Edit]]:
    """Every line a syntax error: the check finds errors in both images of every file."""
    files = {f"/pkg/bad_{k:03d}.py": [broken_line(n) for n in range(1, 201)] for k in range(100)}
    edits = [(path, broken_line(100), broken_line(100) + "  # changed") for path in files]
    return files, edits


def write_workspace(root: Path, files: dict[str, list[str]]) -> None:
    shutil.rmtree(root, ignore_errors=True)
    for path, lines in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n")


def build_patch(files: dict[str, list[str]], edits: list[Edit]) -> str:
    out = ["*** Begin Patch"]
    by_file: dict[str, list[Edit]] = {}
    for edit in edits:
        by_file.setdefault(edit[0], []).append(edit)
    for path, changes in by_file.items():
        lines = files[path]
        index = {text: n for n, text in enumerate(lines)}
        out.append(f"*** Update File: {path}")
        for _, old, new in changes:
            at = index[old]
            out.append("@@")
            out.extend(" " + text for text in lines[max(0, at - 3) : at])
            out.extend(["-" + old, "+" + new])
            out.extend(" " + text for text in lines[at + 1 : at + 4])
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def tool_call(tool: Any, args: dict[str, Any]) -> None:
    message = tool.invoke({"type": "tool_call", "name": tool.name, "id": "1", "args": args})
    if message.status != "success":
        raise RuntimeError(message.content)


def ours_apply_patch(root: Path, files: dict[str, list[str]], edits: list[Edit]) -> None:
    # the patch itself, as the peers apply it: no language servers (on by default)
    tools = {t.name: t for t in FileToolkit(LocalBackend(root), diagnostics=False).get_tools()}
    tool_call(tools["apply_patch"], {"patch": build_patch(files, edits)})


def ours_apply_patch_rename(root: Path, files: dict[str, list[str]], edits: list[Edit]) -> None:
    tools = {t.name: t for t in FileToolkit(LocalBackend(root, durability="rename")).get_tools()}
    tool_call(tools["apply_patch"], {"patch": build_patch(files, edits)})


def ours_apply_patch_unchecked(root: Path, files: dict[str, list[str]], edits: list[Edit]) -> None:
    tools = {t.name: t for t in FileToolkit(LocalBackend(root), syntax_check="off").get_tools()}
    tool_call(tools["apply_patch"], {"patch": build_patch(files, edits)})


def ours_edit_loop(root: Path, files: dict[str, list[str]], edits: list[Edit]) -> None:
    tools = {t.name: t for t in FileToolkit(LocalBackend(root)).get_tools()}
    for path in files:
        tool_call(tools["read_file"], {"file_path": path, "limit": 10})
    for path, old, new in edits:
        tool_call(
            tools["edit_file"],
            {"file_path": path, "old_string": f"\n{old}\n", "new_string": f"\n{new}\n"},
        )


def atomic_replace_floor(root: Path, files: dict[str, list[str]], edits: list[Edit]) -> None:
    """What any writer that leaves old or new content pays: a new file, renamed over."""
    del files
    for path, old, new in edits:
        target = root / path.lstrip("/")
        text = target.read_text().replace(f"\n{old}\n", f"\n{new}\n", 1)
        temp = target.with_name(f".{target.name}.floor-tmp")
        temp.write_text(text)
        temp.replace(target)


def deepagents_edit_loop(root: Path, files: dict[str, list[str]], edits: list[Edit]) -> None:
    del files
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    for path, old, new in edits:
        result = backend.edit(path, f"\n{old}\n", f"\n{new}\n")
        if result.error:
            raise RuntimeError(result.error)


WAYS: list[tuple[str, Callable[[Path, dict[str, list[str]], list[Edit]], None]]] = [
    ("ours: apply_patch (1 call)", ours_apply_patch),
    ('ours: apply_patch, durability="rename"', ours_apply_patch_rename),
    ('ours: apply_patch, syntax_check="off"', ours_apply_patch_unchecked),
    ("ours: read_file + edit_file loop", ours_edit_loop),
    ("floor: plain Python temp file + rename per file", atomic_replace_floor),
    ("deepagents FilesystemBackend.edit loop", deepagents_edit_loop),
]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    workloads = [
        ("200 hunks, one 50,000-line file", big_file),
        ("1 hunk in each of 100 files", many_files),
        ("1 hunk in each of 100 files full of syntax errors", many_broken_files),
    ]
    durable: dict[object, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        for title, make in workloads:
            files, edits = make()
            print(f"\n{title} ({len(edits)} edits); median of {repeat}\n")
            print("| way | wall ms | calls | wall / apply_patch |")
            print("|---|---:|---:|---:|")
            times: dict[str, list[float]] = {name: [] for name, _ in WAYS}
            reference: dict[str, bytes] | None = None
            for run in range(repeat):  # interleaved, so load changes hit every way alike
                for name, way in WAYS if run % 2 == 0 else WAYS[::-1]:
                    write_workspace(root, files)
                    start = time.perf_counter()
                    way(root, files, edits)
                    times[name].append(time.perf_counter() - start)
                    result = snapshot(root)
                    reference = reference or result
                    assert result == reference, f"{name} made different bytes"
            walls = {name: statistics.median(measured) * 1000 for name, measured in times.items()}
            base = walls[WAYS[0][0]]
            for name, wall in walls.items():
                calls = 1 if "apply_patch" in name else len(edits)
                if "read_file" in name:
                    calls += len(files)
                print(f"| {name} | {wall:,.1f} | {calls} | {wall / base:.2f}x |")
            durable[make] = walls[WAYS[0][0]]
            if make is many_broken_files:
                ratio = durable[many_broken_files] / durable[many_files]
                print(
                    f"\n- {'PASS' if ratio <= 1.5 else 'FAIL'}: apply_patch on the broken files"
                    f" {ratio:.2f}x its time on the valid ones (target at most 1.5x)"
                )
            if make is many_files:
                deep = walls[WAYS[-1][0]]
                floor = walls[WAYS[-2][0]]
                print()
                for name, _ in WAYS[:2]:
                    verdict = "PASS" if walls[name] <= deep else "FAIL"
                    print(
                        f"- {verdict}: {name} {walls[name]:,.1f} ms vs deepagents' edit loop"
                        f" {deep:,.1f} ms ({walls[name] / deep:.2f}x; target at most 1x)"
                    )
                ratio = walls[WAYS[0][0]] / deep
                print(
                    f"- {'PASS' if ratio <= 1.2 else 'FAIL'}: {WAYS[0][0]} {ratio:.2f}x"
                    " deepagents' edit loop (issue 28 target: at most 1.2x)"
                )
                print(
                    f"- the atomic-replace floor is {floor / deep:.2f}x deepagents' in-place"
                    f" loop on this disk; ours adds {walls[WAYS[1][0]] - floor:,.1f} ms"
                    " (rename-only) above it"
                )


if __name__ == "__main__":
    main()
