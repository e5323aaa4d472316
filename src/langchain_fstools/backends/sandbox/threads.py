"""`ThreadSandboxes`: one sandbox per conversation thread, found again by any worker."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from langchain_fstools.core import calls

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from langgraph.store.base import BaseStore

    from langchain_fstools.backends.sandbox.transport import SandboxLike

NAMESPACE: Final = ("fstools", "sandboxes")
"""Where the store keeps each thread's sandbox id (the key is the thread id)."""


class ThreadSandboxes:
    """Each thread's sandbox, its id kept in a LangGraph store every worker shares.

    The shape of deepagents' CLI providers' `get_or_create`: the first request of a
    thread creates a sandbox and records its id under the thread; a later request, in
    this process or any other worker over the same store (PostgreSQL, SQLite on a
    shared disk), attaches that sandbox, with the files and the waiting change sets the
    earlier requests left in it. A sandbox that cannot be attached (it ended after its
    idle time, or was removed) is replaced by a new one, whose id replaces the old.
    Idle sandboxes end by the provider's own setting, such as `DockerSandbox`'s
    `idle_timeout`.

    LangGraph runs one run of a thread at a time, so two workers never create a
    sandbox for the same thread at once.

    Args:
        create: Makes a new sandbox (e.g. `lambda: DockerSandbox.create(image=...,
            idle_timeout=3600)`).
        attach: The sandbox of an id `create` made earlier, in any process (e.g.
            `DockerSandbox.attach`); it raises when that sandbox is gone.
        store: The LangGraph store shared by every worker.
        namespace: The store namespace of the ids. Default: `("fstools", "sandboxes")`.

    Raises:
        ValueError: `namespace` is empty.

    Example:
        ```python
        sandboxes = ThreadSandboxes(
            create=lambda: DockerSandbox.create(image="fstools-sandbox:latest"),
            attach=DockerSandbox.attach,
            store=store,
        )
        backend = SandboxBackend(sandboxes.get_or_create(config["configurable"]["thread_id"]))
        ```
    """

    def __init__(
        self,
        *,
        create: Callable[[], SandboxLike],
        attach: Callable[[str], SandboxLike],
        store: BaseStore,
        namespace: tuple[str, ...] = NAMESPACE,
    ) -> None:
        """Remember how to make and find sandboxes; nothing starts yet."""
        if not namespace:
            raise ValueError("namespace must name at least one level of the store")
        self._create = create
        self._attach = attach
        self._store = store
        self._namespace = namespace

    def get_or_create(self, thread_id: str) -> SandboxLike:
        """The thread's sandbox: the one its id names in the store, else a new one.

        Args:
            thread_id: The thread (`config["configurable"]["thread_id"]`).

        Returns:
            The sandbox, its id recorded under the thread.
        """
        return calls.drive(self._found(thread_id), self._perform)

    async def aget_or_create(self, thread_id: str) -> SandboxLike:
        """Async `get_or_create`.

        The store's async methods; `create` and `attach` run in a worker thread (they
        may block while a container starts).
        """
        return await calls.adrive(self._found(thread_id), self._aperform)

    def _found(self, thread_id: str) -> Generator[_Step, Any, SandboxLike]:
        """`get_or_create` as steps, driven sync or async."""
        item = yield _Step("get", thread_id)
        if item is not None:
            try:
                attached: SandboxLike = yield _Step("attach", str(item.value["sandbox_id"]))
            except Exception:  # noqa: BLE001, S110 - any provider's "gone": a new sandbox
                pass
            else:
                return attached
        sandbox: SandboxLike = yield _Step("create")
        yield _Step("put", thread_id, {"sandbox_id": sandbox.id})
        return sandbox

    def _perform(self, step: _Step) -> Any:
        match step.kind:
            case "get":
                return self._store.get(self._namespace, step.key)
            case "put":
                return self._store.put(self._namespace, step.key, step.value)
            case "attach":
                return self._attach(step.key)
        return self._create()

    async def _aperform(self, step: _Step) -> Any:
        match step.kind:
            case "get":
                return await self._store.aget(self._namespace, step.key)
            case "put":
                return await self._store.aput(self._namespace, step.key, step.value)
        return await asyncio.to_thread(self._perform, step)


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of `get_or_create`: the store's `get`/`put`, or the provider's `attach`/`create`."""

    kind: str
    key: str = ""
    value: dict[str, Any] = field(default_factory=dict)
