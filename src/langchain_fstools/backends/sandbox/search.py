"""The sandbox backend's search: ripgrep in the sandbox, else the engine run there.

A glob or grep is one `execute` of the helper (`backends.sandbox.helper`), which runs
`search.host.main` on the sandbox's disk: with the sandbox's `rg` when it has one
(`search.ripgrep.RipgrepSearch`, the local backend's command line and parsing, so the
results agree with ripgrep and `.gitignore` exactly as on local disk), else the
package's own engine (`search.engine`, the same semantics). Records come back in
`search.host`'s format and are decoded by `search.host.decode`. Whether the sandbox
has ripgrep is asked once (one round trip), on the first search.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_fstools.search.host import STOP_AHEAD, decode, grep_request, list_request

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.backends.sandbox.transport import Transport
    from langchain_fstools.search.contract import FileHits, GrepRequest, Listing, NativeSearch
    from langchain_fstools.search.host import Reply

_LONGEST = 86_400.0
"""Seconds a search is given at most (its deadline may be infinite)."""

_MARGIN = 5
"""Seconds the provider's timeout gives a search beyond its deadline (start-up, reply)."""


class _Search:
    """`native_search` of `SandboxBackend`."""

    _transport: Transport
    _use_ripgrep: bool

    def native_search(self) -> NativeSearch:
        """The search run in the sandbox (its ripgrep, or the engine); asks once which."""
        transport = self._transport
        if transport.offers is None:
            transport.offers, _ = transport.run(transport.call("probe"))
        return SandboxSearch(self._run_search)

    @property
    def searches_with_ripgrep(self) -> bool:
        """Whether searches run the sandbox's ripgrep (known after `native_search`)."""
        return self._rg_path is not None

    @property
    def _rg_path(self) -> str | None:
        offers = self._transport.offers
        return offers["rg"] if offers is not None and self._use_ripgrep else None

    def _run_search(self, request: dict[str, Any], deadline: float) -> Reply:
        seconds = min(max(deadline - time.monotonic(), 0.0), _LONGEST)
        exchange = self._transport.call(
            "search",
            {**request, "seconds": seconds},
            self._rg_path,
            timeout=math.ceil(seconds + STOP_AHEAD) + _MARGIN,
        )
        _, data = self._transport.run(exchange)
        return decode(data, timed_out=False)


@dataclass(frozen=True)
class SandboxSearch:
    """`NativeSearch` in the sandbox: each call one run of the helper.

    Attributes:
        run: Runs a `search.host` request (without its root and time, which the
            helper and the deadline give) and decodes its records.
    """

    run: Callable[[dict[str, Any], float], Reply]

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """Every file below `directory` (`newest` and `excluded` are left to the caller)."""
        del newest, excluded
        return self.run(list_request("", directory, globs, 0), deadline).listing

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Search in the sandbox; each file's hits are handed to `sink` in this thread."""
        reply = self.run(grep_request("", request, 0), deadline)
        for hits in reply.hits:
            sink(hits)
        return reply.complete


__all__ = ["SandboxSearch"]
