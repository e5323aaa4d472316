"""Host path resolution: the kernel's answer equals `os.path.realpath` on every path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_fstools.backends import host_paths
from langchain_fstools.backends.host_paths import is_inside, real_path

NAMES = st.sampled_from(["a", "b", "c", "d", "x y", "é"])
PARTS = st.lists(NAMES, min_size=1, max_size=4)
LINK_TARGETS = st.one_of(
    PARTS.map("/".join),  # relative, maybe missing
    PARTS.map(lambda parts: "../" + "/".join(parts)),  # relative, upwards
    st.sampled_from([".", "..", "../..", "/", "/nonexistent/place", "a/../b"]),
    PARTS.map(lambda parts: "<root>/" + "/".join(parts)),  # absolute, inside
)


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """(kind, relative path, link target) entries: directories, files and symlinks."""
    return draw(
        st.lists(
            st.tuples(st.sampled_from(["dir", "file", "link"]), PARTS.map("/".join), LINK_TARGETS),
            max_size=14,
        )
    )


def build(root: Path, entries: list[tuple[str, str, str]]) -> None:
    for kind, relative, target in entries:
        path = root / relative
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                path.mkdir(exist_ok=True)
            elif kind == "file":
                path.write_text("x")
            else:
                path.symlink_to(target.replace("<root>", str(root)))
        except OSError:
            continue  # a part is a file or a link already: the tree is what it is


@pytest.mark.skipif(not host_paths._KERNEL_RESOLVES, reason="needs O_PATH and /proc")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=trees(), probes=st.lists(PARTS.map("/".join), min_size=1, max_size=8))
def test_the_kernel_resolves_as_realpath_does(
    tmp_path_factory: pytest.TempPathFactory,
    entries: list[tuple[str, str, str]],
    probes: list[str],
) -> None:
    root = tmp_path_factory.mktemp("tree")
    build(root, entries)
    for relative in [entry[1] for entry in entries] + probes:
        path = f"{root}/{relative}"
        assert real_path(path) == os.path.realpath(path), relative


def test_a_path_through_a_link_is_the_links_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    (tmp_path / "via").symlink_to("real")
    assert real_path(str(tmp_path / "via" / "f")) == str((tmp_path / "real" / "f").resolve())
    assert real_path(str(tmp_path / "via" / "missing")) == str(
        tmp_path.resolve() / "real" / "missing"
    )


def test_without_the_kernel_path_realpath_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "via").symlink_to(tmp_path)
    monkeypatch.setattr(host_paths, "_KERNEL_RESOLVES", False)
    assert real_path(str(tmp_path / "via")) == os.path.realpath(tmp_path)


@given(
    st.sampled_from(["/", "/r", "/r/s", "/ro"]),
    st.lists(st.sampled_from(["r", "s", "ro", "rs", "t"]), max_size=4),
)
def test_is_inside_is_commonpath(root: str, parts: list[str]) -> None:
    path = "/" + "/".join(parts)
    assert is_inside(root, path) == (os.path.commonpath((root, path)) == root)
