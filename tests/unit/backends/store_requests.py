"""Watching what an `ObjectStoreBackend` asks of its store, through the requests layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_fstools.backends.objectstore import requests

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest


def watch_requests(
    monkeypatch: pytest.MonkeyPatch, record: Callable[[requests.Request, Any], None]
) -> None:
    """Call `record(request, result)` for every request the store answers, sync or async."""
    sync_call, async_call = requests._call, requests._acall

    def call(store: Any, request: requests.Request) -> Any:
        result = sync_call(store, request)
        record(request, result)
        return result

    async def acall(store: Any, request: requests.Request) -> Any:
        result = await async_call(store, request)
        record(request, result)
        return result

    monkeypatch.setattr(requests, "_call", call)
    monkeypatch.setattr(requests, "_acall", acall)
