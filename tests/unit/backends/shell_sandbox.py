"""A deepagents sandbox double: `sh -c` on this machine, and a backend over it for commands.

`ShellSandbox` implements `SandboxBackendProtocol` (`BaseSandbox`'s three calls) by
running each command with `sh -c` here, so the command helper runs in a real shell and
python3, with the workspace at its own path; `path` replaces PATH (leave python3 out to
make a sandbox without it). `CommandedBackend` is a `LocalBackend` for the file tools
whose commands go through `SandboxCommands` over such a sandbox, as `SandboxBackend`'s do.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from deepagents.backends.protocol import ExecuteResponse, FileDownloadResponse, FileUploadResponse
from deepagents.backends.sandbox import BaseSandbox

from langchain_fstools import LocalBackend
from langchain_fstools.backends.sandbox import recorded_commands as commands
from langchain_fstools.backends.sandbox.recorded_commands import SandboxCommands
from langchain_fstools.core.changesets import ChangeSet
from langchain_fstools.core.results import ExecutionResult, FileInfo
from langchain_fstools.errors import ChangesNotCommitted, ExecutionUnsupported


class ShellSandbox(BaseSandbox):
    """Runs commands with `sh -c` here; `calls` counts the protocol calls made."""

    def __init__(self, *, path: str | None = None) -> None:
        self.path = path if path is not None else os.environ["PATH"]
        self.calls = 0

    @property
    def id(self) -> str:
        return "shell"

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        self.calls += 1
        env = {**os.environ, "PATH": self.path}
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                capture_output=True,
                env=env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as expired:
            output = (expired.stdout or b"").decode(errors="replace")
            return ExecuteResponse(output=output, exit_code=None)
        text = (done.stdout + done.stderr).decode(errors="replace")
        return ExecuteResponse(output=text, exit_code=done.returncode)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        self.calls += 1
        for path, data in files:
            Path(path).write_bytes(data)
        return [FileUploadResponse(path=path) for path, _ in files]

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        self.calls += 1
        return [FileDownloadResponse(path=path, content=Path(path).read_bytes()) for path in paths]


class CommandedBackend(LocalBackend):
    """A `LocalBackend` (files) whose commands run in `sandbox` through the command helper."""

    def __init__(self, root: Path, sandbox: Any, *, changed_bytes: int | None = None) -> None:
        super().__init__(root)
        self.supports_execute = True
        self.remote = sandbox
        self.commands = SandboxCommands(str(root.resolve()), changed_bytes=changed_bytes)

    def contains_commands(self) -> bool:
        return commands.run(self.commands.probe(), self.remote)

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, **options: Any
    ) -> ExecutionResult:
        if options.get("layer") is not None:
            raise ExecutionUnsupported("branch")
        if self.contains_commands():
            body = self.commands.execute(command, timeout=timeout, output_limit=output_limit)
        else:
            body = self.commands.run_plain(command, timeout=timeout, output_limit=output_limit)
        return commands.run(body, self.remote)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        result = self.execute_changes(command, timeout=timeout, output_limit=output_limit)
        if result.changes is not None:
            try:
                refused = self.judge_changes(result.changes).refused
                if refused is not None:
                    raise ChangesNotCommitted(*refused, result.output)
                self.commit(result.changes)
            finally:
                result.changes.discard()
        return ExecutionResult(result.output, result.exit_code, result.timed_out)

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        return commands.run(self.commands.commit(changes), self.remote)

    def processes(self) -> None:
        return None

    def command_root(self) -> str | None:
        return self.commands.root

    def command_network(self) -> bool | None:
        return None
