"""Branches merge file by file to what merge3 gives, with the tree rules on top.

A random small tree is branched twice; each branch runs a random script (line edits,
creations, deletions, renames with `move`); then the first branch and the second are merged into the base.
The first merge is always clean and gives the first branch's tree. The second gives,
per file, what `merge3` itself gives for the three texts (the base, the first branch's,
the second's), with the tree rules of `backends.branch` for creations, deletions and
renames (a deletion plus a creation);
any conflict commits nothing. A clean merge keeps every line either branch added.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from merge3 import Merge3

from langchain_fstools.backends.branch import BranchBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.store import StoreBackend
from langchain_fstools.core import calls
from langchain_fstools.formats.merge import lines

BASE_PATHS = ("/a.txt", "/b.txt", "/c.txt", "/d/e.txt", "/d/f.txt")
NEW_PATHS = ("/n.txt", "/new/m.txt", "/d/g.txt")
"""Paths a branch may create (both may pick one, so creations collide)."""
MOVED = {path: path.replace(".txt", ".moved.txt") for path in BASE_PATHS}
"""Where a branch renames a base file to (both may rename one, to the same place)."""
KEPT = "/d/keep.txt"
"""Never touched, so /d stays a directory in every tree."""
WORDS = ["x\n", "y\n", "z\n", "w\n", "\n"]

_fresh = itertools.count()

Tree = dict[str, str]


@dataclass
class Side:
    """One branch's script, as what it leaves and what it adds."""

    tree: Tree
    """The branch's tree after its script."""
    touched: set[str] = field(default_factory=set)
    """The paths its script wrote or deleted (never one left as it was)."""
    added: dict[str, list[str]] = field(default_factory=dict)
    """The lines it added, per path (each unique in the whole example)."""
    moves: dict[str, str] = field(default_factory=dict)
    """The files it renamed: old path, new path (`MOVED`)."""


def _added_line(name: str) -> str:
    return f"{name} {next(_fresh)}\n"


@st.composite
def _edited(draw: st.DrawFn, text: str, name: str) -> tuple[str, list[str]]:
    """`text` after a random line script, and the lines the script added."""
    base = lines(text)
    out: list[str] = []
    added: list[str] = []
    for index in range(len(base) + 1):
        operation = draw(st.sampled_from([*["keep"] * 12, "delete", "replace", "insert"]))
        if operation in {"replace", "insert"}:
            added.append(_added_line(name))
            out.append(added[-1])
        if index < len(base) and operation in {"keep", "insert"}:
            out.append(base[index])
    return "".join(out), added


@st.composite
def _side(draw: st.DrawFn, base: Tree, name: str) -> Side:
    side = Side(dict(base))
    for path in BASE_PATHS:
        if path not in base:
            continue
        action = draw(st.sampled_from(["keep", "edit", "edit", "edit", "delete", "move"]))
        if action in {"delete", "move"}:
            text = side.tree.pop(path)
            side.touched.add(path)
        if action == "move":
            side.tree[MOVED[path]] = text
            side.touched.add(MOVED[path])
            side.moves[path] = MOVED[path]
        elif action == "edit":
            text, added = draw(_edited(base[path], name))
            if text != base[path]:
                side.tree[path], side.added[path] = text, added
                side.touched.add(path)
    for path in draw(st.sets(st.sampled_from(NEW_PATHS), max_size=1)):
        added = [_added_line(name) for _ in range(draw(st.integers(1, 3)))]
        side.tree[path], side.added[path] = "".join(added), added
        side.touched.add(path)
    return side


@st.composite
def _example(draw: st.DrawFn) -> tuple[Tree, Side, Side]:
    texts = st.lists(st.sampled_from(WORDS), max_size=12).map("".join)
    base = {
        path: draw(texts)
        for path in draw(st.sets(st.sampled_from(BASE_PATHS), min_size=1, max_size=3))
    }
    base[KEPT] = "kept\n"
    return base, draw(_side(base, "first")), draw(_side(base, "second"))


def _write_tree(backend: Backend, tree: Tree) -> None:
    for path, text in tree.items():
        calls.run(calls.write_bytes(path, text.encode()), backend)


def _play(branch: BranchBackend, base: Tree, side: Side) -> None:
    for source, destination in side.moves.items():
        calls.run(calls.move(source, destination), branch)
    for path in sorted(side.touched - {*side.moves, *side.moves.values()}):
        if path in side.tree:
            calls.run(calls.write_bytes(path, side.tree[path].encode()), branch)
        else:
            assert path in base
            calls.run(calls.delete(path), branch)


def _read_tree(backend: Backend) -> Tree:
    tree: Tree = {}
    for path in (*BASE_PATHS, *NEW_PATHS, *MOVED.values(), KEPT):
        if calls.run(calls.exists(path), backend):
            tree[path] = calls.run(calls.read_bytes(path), backend).decode()
    return tree


def _library(base: str, ours: str, theirs: str) -> tuple[str | None, list[tuple[object, ...]]]:
    """What merge3 itself gives: the merged text (None on conflict), the conflicts."""
    library = Merge3(lines(base), lines(ours), lines(theirs))
    conflicts = [
        tuple(tuple(part) for part in group[1:])
        for group in library.merge_groups()
        if group[0] == "conflict"
    ]
    return (None if conflicts else "".join(library.merge_lines())), conflicts


def _expected(base: Tree, first: Side, second: Side) -> tuple[Tree, dict[str, list[object]]]:
    """The tree after merging both, and the conflicts (path: merge3's hunks, or [])."""
    tree = dict(first.tree)
    conflicts: dict[str, list[object]] = {}
    for path in second.touched:
        origin, ours, theirs = base.get(path), first.tree.get(path), second.tree.get(path)
        if theirs is None and ours in {origin, None}:  # deleted by the second (or both)
            tree.pop(path, None)
        elif ours in {origin, theirs}:  # only the second changed it, or both alike
            tree[path] = theirs
        elif theirs is None or ours is None:  # one deleted what the other changed
            conflicts[path] = []
        else:
            text, hunks = _library(origin or "", ours, theirs)
            if text is None:
                conflicts[path] = list(hunks)
            else:
                tree[path] = text
    return tree, conflicts


def _first_merged(example: tuple[Tree, Side, Side]) -> tuple[Backend, BranchBackend]:
    """Branch the base twice, play both scripts, merge the first; the base, the second."""
    base, first, second = example
    backend = StoreBackend(InMemoryStore(), namespace=("t", uuid.uuid4().hex)).bind(None)
    _write_tree(backend, base)
    branches = BranchBackend(backend), BranchBackend(backend)
    _play(branches[0], base, first)
    _play(branches[1], base, second)
    assert _read_tree(backend) == base
    assert branches[0].merge().clean
    assert _read_tree(backend) == first.tree
    return backend, branches[1]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_example())
def test_two_branches_merge_file_by_file_as_merge3_does(example: tuple[Tree, Side, Side]) -> None:
    backend, second_branch = _first_merged(example)
    result = second_branch.merge()

    tree, conflicts = _expected(*example)
    assert {
        c.path: [(h.base, h.ours, h.theirs) for h in c.hunks] for c in result.conflicts
    } == conflicts
    if conflicts:
        assert _read_tree(backend) == example[1].tree
        assert second_branch.changed
    else:
        assert _read_tree(backend) == tree
        assert not second_branch.changed


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_example())
def test_a_clean_merge_keeps_every_line_either_branch_added(
    example: tuple[Tree, Side, Side],
) -> None:
    backend, second_branch = _first_merged(example)
    if not second_branch.merge().clean:
        return
    merged = {path: lines(text) for path, text in _read_tree(backend).items()}
    lost = [
        line
        for side in example[1:]
        for path, added in side.added.items()
        for line in added
        if line not in merged.get(path, [])
    ]
    assert lost == []
