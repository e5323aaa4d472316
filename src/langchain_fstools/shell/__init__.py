"""Shell commands: the command policy, process-group execution, output capture, the sandbox."""
