"""A directory on a remote host, over SSH: files by SFTP, commands by exec channels.

The backend is one class, `SSHBackend` (`backend`), assembled from its parts: the
connection (`connection`), the SFTP file operations (`files`), commands (`exec`) and
search on the server (`search`: its ripgrep, or the engine run by its Python).
"""

from langchain_fstools.backends.ssh.backend import SSHBackend
from langchain_fstools.backends.ssh.connection import DEFAULT_KNOWN_HOSTS
from langchain_fstools.backends.ssh.search import (
    MIN_PYTHON,
    PROGRAM,
    HostPython,
    command,
    probe,
    program_input,
)

__all__ = [
    "DEFAULT_KNOWN_HOSTS",
    "MIN_PYTHON",
    "PROGRAM",
    "HostPython",
    "SSHBackend",
    "command",
    "probe",
    "program_input",
]
