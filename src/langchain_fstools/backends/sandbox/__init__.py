"""Our backend over any deepagents sandbox (`SandboxBackendProtocol`)."""
