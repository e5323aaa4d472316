"""Files in a remote sandbox, through any deepagents sandbox provider.

The backend is one class, `SandboxBackend` (`backend`), over the provider's `execute`,
`upload_files` and `download_files`: each call is one run of a helper kept in the
sandbox (`helper`, sent and asked by `transport`, through a `relay` kept open where the
provider offers streams); glob and grep run there too (`search`: the sandbox's ripgrep,
or the package's engine). `threads` keeps each
conversation thread's sandbox id in a LangGraph store, so any worker resumes it.
"""

from langchain_fstools.backends.sandbox.backend import SandboxBackend
from langchain_fstools.backends.sandbox.relay import SandboxStream, StreamingSandbox
from langchain_fstools.backends.sandbox.threads import ThreadSandboxes
from langchain_fstools.backends.sandbox.transport import SandboxLike, Transport

__all__ = [
    "SandboxBackend",
    "SandboxLike",
    "SandboxStream",
    "StreamingSandbox",
    "ThreadSandboxes",
    "Transport",
]
