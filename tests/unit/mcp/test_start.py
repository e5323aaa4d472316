"""What a server loads before its first answer, and the listing kept between starts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import TYPE_CHECKING

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.listing_cache import kept_listing, wire
from langchain_fstools.mcp.server import FileServer
from tests.unit.mcp.servers import Client, Request

if TYPE_CHECKING:
    from pathlib import Path

LOADED = """
import sys
from pathlib import Path
from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.mcp.server import create_server

create_server(LocalBackend(sys.argv[1]), listing_cache=Path(sys.argv[2]))
heavy = ("langgraph.prebuilt", "langchain.agents", "langchain_core.tools.base")
print(sorted({name for name in sys.modules for h in heavy if name.startswith(h)}))
"""


def loaded_by_a_new_server(root: Path, cache: Path) -> list[str]:
    """The heavy modules a fresh process has loaded once its server can answer."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, str(root), str(cache)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded: list[str] = json.loads(done.stdout.strip().replace("'", '"'))
    return loaded


def test_nothing_of_langgraph_prebuilt_loads_and_a_kept_listing_spares_the_tools(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    first = loaded_by_a_new_server(tmp_path, cache)
    assert "langchain_core.tools.base" in first  # the listing is built from the tools
    assert not [name for name in first if name.startswith(("langgraph.prebuilt", "langchain."))]
    assert loaded_by_a_new_server(tmp_path, cache) == []  # answered from the kept listing


def server(root: Path, cache: Path, **settings: object) -> FileServer:
    return FileServer(
        LocalBackend(root),
        tools=None,
        execute=False,
        mode=None,
        permissions=(),
        protected_paths=None,
        eviction=True,
        settings=dict(settings),
        handle_key=b"k" * 32,
        listing_cache=cache,
    )


def test_a_listing_is_kept_per_configuration(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = server(tmp_path, cache)
    kept = kept_listing(cache, built._key)
    assert kept is not None
    assert wire(kept) == wire(built.listing)
    other = server(tmp_path, cache, read_limit=10)
    assert other._key != built._key
    assert "Default: 10, fewer" in json.dumps(wire(other.listing))
    assert len(list(cache.iterdir())) == 2


async def test_a_server_from_a_kept_listing_runs_calls_and_mends_a_wrong_listing(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    (tmp_path / "notes.txt").write_text("alpha\n")
    key = (await asyncio.to_thread(server, tmp_path, cache))._key
    right = kept_listing(cache, key)
    assert right is not None
    (cache / f"{key}.json").write_text(json.dumps(wire(right[:1])))  # as if out of date
    again = await asyncio.to_thread(server, tmp_path, cache)
    assert [tool.name for tool in again.listing] == [right[0].name]
    client = Client()
    read = await again.call(Request("read_file", {"file_path": "/notes.txt"}, client))  # type: ignore[arg-type]
    assert read.model_dump(by_alias=True)["isError"] is False
    mended = kept_listing(cache, key)
    assert mended is not None
    assert wire(mended) == wire(right)


def test_an_unreadable_listing_is_built_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    key = server(tmp_path, cache)._key
    (cache / f"{key}.json").write_text("{not json")
    assert kept_listing(cache, key) is None
    rebuilt = server(tmp_path, cache)
    assert len(rebuilt.listing) > 1
    assert kept_listing(cache, key) is not None
