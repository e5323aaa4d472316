"""Sandbox providers we ship: deepagents `SandboxBackendProtocol` implementations.

Modules: `docker` (`DockerSandbox`: one Docker container per workspace, through the
Docker Engine API; needs the `docker` extra). Import a provider from its module, so
one provider's SDK is loaded only when it is used.
"""
