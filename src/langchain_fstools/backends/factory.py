"""A backend chosen per call: deepagents' backend factory, `backend=lambda rt: ...`.

deepagents (up to 0.6) took `backend=` as a function of the `ToolRuntime`, called at
every tool call and at every model call (to decide whether `execute` is offered).
`FactoryBackend` gives that spelling the same meaning: `bind(runtime)`, which every
tool call goes through, calls the factory with the call's runtime and binds what it
returns; the middleware asks `resolved` with the model call's runtime what the
backend can do.

The factory is called at least once per tool call and once per model call, and its
result is not kept: a factory should return kept instances (one `LocalBackend` per
user, say, from a dictionary), never build a backend that holds sessions or
connections (`LocalBackend(execute=True)`, `SSHBackend`) at each call. Unbound, the
factory backend has no files (its core calls raise `NotInGraph`), runs no command of
its own and does not say where commands run (`command_root` is None), so the tools'
descriptions and permission checks take the careful defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.errors import NotABackend, NotInGraph

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.backends.protocol import FileInfo


class FactoryBackend(Backend):
    """The backend a function of the runtime returns, resolved at every call.

    Example:
        ```python
        from langchain_fstools import FilesystemMiddleware, LocalBackend

        workspaces = {"ann": LocalBackend("/srv/ann"), "bob": LocalBackend("/srv/bob")}
        FilesystemMiddleware(backend=lambda rt: workspaces[rt.context["user"]])
        ```
    """

    kind = "factory"

    def __init__(self, factory: Callable[[Any], Backend]) -> None:
        """Keep `factory`; it is first called at the first call's `bind`.

        Commands are possible (`supports_execute`): whether they run is the resolved
        backend's to say, per call.
        """
        self.factory = factory
        self.supports_execute = True

    def resolved(self, runtime: Any) -> Backend:
        """The backend the factory returns for `runtime`, unbound.

        Raises:
            NotABackend: the factory returned something that is not a backend instance.
        """
        backend = self.factory(runtime)
        if not isinstance(backend, Backend):
            raise NotABackend(type(backend).__name__)
        return backend

    def bind(self, runtime: Any) -> Backend:
        """The factory's backend for this call, bound to `runtime`."""
        return self.resolved(runtime).bind(runtime)

    # ----- unbound: no files of its own -----------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Unbound: refused."""
        _unbound(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Unbound: refused."""
        del start, size
        _unbound(path)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Unbound: refused."""
        del data, expected_version
        _unbound(path)

    def delete(self, path: str) -> None:
        """Unbound: refused."""
        _unbound(path)

    def mkdir(self, path: str) -> None:
        """Unbound: refused."""
        _unbound(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        """Unbound: refused."""
        _unbound(path)


def _unbound(path: str) -> NoReturn:
    del path
    raise NotInGraph(
        "factory",
        "the backend is a factory of the graph runtime, so its tools must run inside a"
        " graph (create_agent, or a StateGraph with a ToolNode); nothing was done.",
    )


__all__ = ["FactoryBackend"]
