"""How a sandbox is built, and the processes that keep it.

Modules: `sandbox` (`Sandbox`, `Confinement`: bubblewrap or Landlock), `limits` (`Limits`,
cgroups and rlimits), `environment` (the command's environment), `protected` (protected
and host-run paths, the review's refusals), `overlay` (the copy-on-write view and its
change set), `plan` (how a session's supervisor starts), `supervisor` and `confine` (the
stdlib-only scripts that run inside the sandbox). Imports `shell.network` only.
"""
