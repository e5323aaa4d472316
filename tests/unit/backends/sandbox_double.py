"""A sandbox provider for unit tests: deepagents' protocol over this machine's `sh -c`.

`ShellSandbox` has the methods of deepagents' `SandboxBackendProtocol` that
`SandboxBackend` uses (`execute`, `upload_files`, `download_files`, their async twins,
`id`) and runs them here, with no network: commands through `/bin/sh -c` (the async
twin through an asyncio subprocess), files by absolute path. It counts what it was
asked, so tests can count round trips, and can be made to misbehave as providers do
(chatter around the output, a shell without `python3`, output cut short).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from deepagents.backends.protocol import ExecuteResponse, FileDownloadResponse, FileUploadResponse
from deepagents.backends.sandbox import BaseSandbox

from langchain_fstools.search.ripgrep import find_ripgrep

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
"""What commands get: no variable of the test process leaks in."""


def path_with_ripgrep(folder: Path) -> str:
    """A PATH with this environment's `rg` (linked into `folder`) before the system's."""
    found = find_ripgrep()
    assert found is not None, "rg (the ripgrep wheel) is missing"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "rg").exists():
        (folder / "rg").symlink_to(found)
    return f"{folder}:{ENV['PATH']}"


class ShellSandbox:
    """deepagents' `SandboxBackendProtocol` shape, run on this machine.

    Args:
        name: The sandbox id.
        path: The PATH commands get (without python3 to play a sandbox lacking it).
        banner: Text printed before and after every command's output (a chatty provider).
        output_limit: Characters of output kept; more is cut and `truncated` set.
        transfers_reach: Whether uploads and downloads reach the files commands see;
            False plays Docker's archive API, which cannot see a tmpfs: an upload
            "succeeds" and lands nowhere, a download finds nothing.
        timeout_exit: The exit code a command killed at its deadline reports, with its
            output so far, as deepagents' providers do (124); None: the deadline raises
            `subprocess.TimeoutExpired`.
    """

    def __init__(
        self,
        name: str = "double",
        *,
        path: str = ENV["PATH"],
        banner: str = "",
        output_limit: int | None = None,
        transfers_reach: bool = True,
        timeout_exit: int | None = None,
    ) -> None:
        self.name = name
        self.timeout_exit = timeout_exit
        self.env = {**ENV, "PATH": path}
        self.banner = banner
        self.output_limit = output_limit
        self.transfers_reach = transfers_reach
        self.calls: Counter[str] = Counter()

    @property
    def id(self) -> str:
        return self.name

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        self.calls["execute"] += 1
        if self.timeout_exit is not None:
            return self._killed_at_deadline(command, timeout)
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd="/",
            timeout=timeout or None,
            check=False,
        )
        return self._response(done.stdout, done.returncode)

    def _killed_at_deadline(self, command: str, timeout: int | None) -> ExecuteResponse:
        """The command in a group of its own, the group killed at the deadline."""
        process = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd="/",
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=timeout or None)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return self._response(output, self.timeout_exit)
        return self._response(output, process.returncode)

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:  # noqa: ASYNC109
        self.calls["execute"] += 1
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd="/",
        )
        output, _ = await asyncio.wait_for(process.communicate(), timeout or None)
        return self._response(output, process.returncode)

    def _response(self, output: bytes, code: int | None) -> ExecuteResponse:
        text = self.banner + output.decode("utf-8", "replace") + self.banner
        truncated = self.output_limit is not None and len(text) > self.output_limit
        if truncated:
            text = text[: self.output_limit]
        return ExecuteResponse(output=text, exit_code=code, truncated=truncated)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        self.calls["upload"] += 1
        responses = []
        for name, content in files:
            if not self.transfers_reach:
                responses.append(FileUploadResponse(name))
                continue
            try:
                Path(name).parent.mkdir(parents=True, exist_ok=True)
                Path(name).write_bytes(content)
            except OSError as exc:
                responses.append(FileUploadResponse(name, error=exc.strerror))
            else:
                responses.append(FileUploadResponse(name))
        return responses

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await asyncio.to_thread(self.upload_files, files)

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        self.calls["download"] += 1
        responses = []
        for name in paths:
            if not self.transfers_reach:
                responses.append(FileDownloadResponse(name, error="file_not_found"))
                continue
            try:
                responses.append(FileDownloadResponse(name, Path(name).read_bytes()))
            except OSError:
                responses.append(FileDownloadResponse(name, error="file_not_found"))
        return responses

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await asyncio.to_thread(self.download_files, paths)


class ShellBaseSandbox(BaseSandbox):
    """deepagents' own `BaseSandbox`, subclassed as a provider would, over `ShellSandbox`.

    Only the abstract methods are written (`execute`, `upload_files`, `download_files`,
    `id`); the async twins are `BaseSandbox`'s (a worker thread each).
    """

    def __init__(self, shell: ShellSandbox) -> None:
        self.shell = shell

    @property
    def id(self) -> str:
        return self.shell.id

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        return self.shell.execute(command, timeout=timeout)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return self.shell.upload_files(files)

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return self.shell.download_files(paths)


class LocalStream:
    """A process here whose standard input the test side writes: `SandboxStream`'s shape."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, data: bytes, timeout: float | None) -> None:
        assert self.process.stdin is not None
        descriptor = self.process.stdin.fileno()
        view = memoryview(data)
        while view:
            if not select.select([], [descriptor], [], timeout)[1]:
                raise TimeoutError
            view = view[os.write(descriptor, view[: select.PIPE_BUF]) :]

    def receive(self, timeout: float | None) -> bytes:
        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        if not select.select([descriptor], [], [], timeout)[0]:
            raise TimeoutError
        return os.read(descriptor, 1 << 16)

    def close(self) -> None:
        """Close this side's pipes (the process then ends; `StreamingShellSandbox.close` reaps it)."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class StreamingShellSandbox(ShellSandbox):
    """`ShellSandbox` that also keeps processes open (`open_stream`), as `DockerSandbox` does.

    Args:
        refuse_streams: `open_stream` raises `ConnectionError`, as an engine that
            refuses would.
        kwargs: `ShellSandbox`'s.
    """

    def __init__(
        self, name: str = "double", *, refuse_streams: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(name, **kwargs)
        self.refuse_streams = refuse_streams
        self.streams: list[LocalStream] = []

    def open_stream(self, command: str) -> LocalStream:
        self.calls["open_stream"] += 1
        if self.refuse_streams:
            raise ConnectionError("the engine refused the stream")
        process = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd="/",
            start_new_session=True,
        )
        stream = LocalStream(process)
        self.streams.append(stream)
        return stream

    def close(self) -> None:
        """End every stream's process (what a provider's end of the sandbox does)."""
        for stream in self.streams:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(stream.process.pid, signal.SIGKILL)
            stream.close()
            stream.process.wait(10)
