"""Grouped path listings: one header per run of a directory, order kept, paths recoverable."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from langchain_fstools.formats.listing import grouped
from tests.unit.tools.harness import listed_paths


def test_a_run_in_one_directory_shares_a_header_and_order_is_kept() -> None:
    entries = [("/src/a.py", ""), ("/src/b.py", ""), ("/docs/c.md", ""), ("/src/d.py", "")]
    assert grouped(entries) == ["/src/", "a.py", "b.py", "/docs/c.md", "/src/d.py"]


def test_suffixes_stay_with_their_names_and_root_files_keep_whole_paths() -> None:
    entries = [("/a.txt", ":2"), ("/b.txt", ":1"), ("/x/y/z.py", ":7"), ("/x/y/w.py", ":1")]
    assert grouped(entries) == ["/a.txt:2", "/b.txt:1", "/x/y/", "z.py:7", "w.py:1"]
    assert grouped([("/x/d", "/")], min_run=1) == ["/x/", "d/"]


NAME = st.text(alphabet="ab.-_ ", min_size=1, max_size=4)


@given(st.lists(st.lists(NAME, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p))))
def test_every_whole_path_is_recovered_in_order(paths: list[str]) -> None:
    assert listed_paths("\n".join(grouped([(p, "") for p in paths]))) == paths
