"""Files in a remote sandbox, through any deepagents sandbox provider.

The backend is one class, `SandboxBackend` (`backend`), over the provider's `execute`,
`upload_files` and `download_files`: each call is one run of a helper kept in the
sandbox (`helper`, sent and asked by `transport`); glob and grep run there too
(`search`: the sandbox's ripgrep, or the package's engine).
"""

from langchain_fstools.backends.sandbox.backend import SandboxBackend
from langchain_fstools.backends.sandbox.transport import SandboxLike, Transport

__all__ = ["SandboxBackend", "SandboxLike", "Transport"]
