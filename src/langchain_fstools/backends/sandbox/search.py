"""The sandbox backend's search: ripgrep from the sandbox's shell, else the helper's engine.

A glob or grep is one `execute`. Where the sandbox has rg (its own on its PATH, or
this environment's uploaded once: `backends.sandbox.ripgrep_upload`), the shell runs
rg directly with the local backend's command line and a small Python stops it at the
deadline and stats what it found (`backends.sandbox.shell_search`); its output is
parsed here by `search.ripgrep`'s parsers, so the results agree with ripgrep and
`.gitignore` exactly as on local disk. Otherwise, and for a search path that is not a
directory inside the root (a file, a missing path), the helper (`backends.sandbox.helper`)
runs `search.host.main` on the sandbox's disk: the package's own engine (the same
semantics), or its rg. Either way the search checks its root in its own run
(`checks_root`), so the tools need no `stat` first. What the sandbox offers is asked
once (one round trip, and an upload the first time), on the first search.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_fstools.backends.sandbox import shell_search
from langchain_fstools.backends.sandbox.ripgrep_upload import uploaded_ripgrep
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.search import ripgrep
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
            offers, _ = transport.run(transport.call("probe"))
            if self._use_ripgrep and offers["rg"] is None and offers.get("machine"):
                machine, timeout = offers["machine"], transport.timeout
                offers["rg"] = transport.run(uploaded_ripgrep(transport.folder, machine, timeout))
            transport.offers = offers
        shell = self._run_rg if self._rg_path is not None else None
        return SandboxSearch(self._run_search, shell)

    @property
    def searches_with_ripgrep(self) -> bool:
        """Whether searches run ripgrep in the sandbox (known after `native_search`)."""
        return self._rg_path is not None

    @property
    def _rg_path(self) -> str | None:
        offers = self._transport.offers
        return offers["rg"] if offers is not None and self._use_ripgrep else None

    def _run_search(self, request: dict[str, Any], deadline: float) -> Reply:
        seconds = _seconds(deadline)
        exchange = self._transport.call(
            "search",
            {**request, "seconds": seconds},
            self._rg_path,
            timeout=math.ceil(seconds + STOP_AHEAD) + _MARGIN,
        )
        _, data = self._transport.run(exchange)
        return decode(data, timed_out=False)

    def _run_rg(
        self, command: list[str], directory: str, mode: str, deadline: float
    ) -> shell_search.Ran | None:
        """Rg's command line (without its executable) run in `directory` by the shell.

        None: `directory` is not a directory inside the root.
        """
        transport = self._transport
        seconds = _seconds(deadline) - STOP_AHEAD
        rg = self._rg_path
        assert rg is not None  # noqa: S101 - only offered with one

        def shell(inline: int) -> str:
            return shell_search.command(
                [rg, *command],
                root=transport.root,
                directory=directory,
                seconds=seconds,
                python=transport.python,
                mode=mode,
                folder=transport.folder,
                inline=inline,
            )

        timeout = math.ceil(max(seconds, 0) + STOP_AHEAD) + _MARGIN
        reply = transport.run(transport.ask(shell, timeout, shell_search.ODD))
        return None if reply is None else shell_search.ran(*reply)


def _seconds(deadline: float) -> float:
    return min(max(deadline - time.monotonic(), 0.0), _LONGEST)


@dataclass(frozen=True)
class SandboxSearch:
    """`NativeSearch` in the sandbox: each call one run of rg from the shell, or the helper.

    Attributes:
        run: Runs a `search.host` request in the helper (without its root and time,
            which the helper and the deadline give) and decodes its records.
        shell: Runs rg from the sandbox's shell (`_Search._run_rg`); None where the
            sandbox has no rg.
    """

    run: Callable[[dict[str, Any], float], Reply]
    shell: Callable[[list[str], str, str, float], shell_search.Ran | None] | None = None
    checks_root: ClassVar[bool] = True
    """Both ways check the search path as the tools' `stat` would (`search.roots`)."""

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """Every file below `directory`, or (with `newest`) at least the newest ones."""
        if self.shell is not None:
            command = ripgrep.listing_command("", directory, globs, excluded)[1:]
            ran = self.shell(command, directory, "null", deadline)
            if ran is not None:
                ripgrep.check_exit(
                    ran.status,
                    ran.errors,
                    directory,
                    ran.folder,
                    delivered=bool(ran.mtimes),
                    timed_out=ran.timed_out,
                )
                timed = ran.timed(shell_search.listed_names(ran.output), compile_glob_groups(globs))
                return ripgrep.listing_of(timed, directory, newest, complete=not ran.timed_out)
        return self.run(list_request("", directory, globs, 0), deadline).listing

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Search in the sandbox; each file's hits are handed to `sink` in this thread."""
        command, stdin = ripgrep.grep_command("", request)
        if self.shell is not None and stdin is None:
            mode = {"content": "json", "count": "count"}.get(request.mode, "null")
            ran = self.shell(command[1:], request.directory, mode, deadline)
            if ran is not None:
                return _delivered(ran, request, sink)
        reply = self.run(grep_request("", request, 0), deadline)
        for hits in reply.hits:
            sink(hits)
        return reply.complete


def _delivered(
    ran: shell_search.Ran, request: GrepRequest, sink: Callable[[FileHits], None]
) -> bool:
    """Hand what rg found to `sink` (filtered by the request's globs); whether it finished."""
    wanted = compile_glob_groups(request.globs)
    base = request.directory

    def filtered(hits: FileHits) -> None:
        if wanted(hits.path[len(base) :].lstrip("/")):
            sink(hits)

    if request.mode == "content":
        stream = ran.stream(b"\n")
        delivered = ripgrep.parse_content(stream, base, ran.mtime_of, filtered)
    else:
        stream = ran.stream(b"\0" if request.mode == "files_with_matches" else b"\n")
        delivered = ripgrep.parse_summaries(stream, request, base, ran.mtime_of, filtered)
    ripgrep.check_exit(
        ran.status,
        ran.errors,
        request.directory,
        ran.folder,
        delivered=bool(delivered),
        timed_out=ran.timed_out,
        grep=True,
    )
    return not ran.timed_out


__all__ = ["SandboxSearch"]
