"""The backend contract over SSH, against a real sshd on 127.0.0.1."""

from __future__ import annotations

import pytest

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.ssh import SSHBackend
from tests.unit.backends.conformance import (  # noqa: F401 - `drive` is a fixture
    BackendConformance,
    drive,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


@pytest.fixture
def backend(ssh_backend: SSHBackend) -> Backend:
    return ssh_backend


class TestSSHConformance(BackendConformance):
    pass
