"""The local disk: a directory on this machine, with sandboxed commands.

The backend is one class, `LocalBackend` (`backend`), assembled from its parts: the
file operations beneath a directory descriptor (`backends.disk_operations`,
`backends.beneath`, `backends.openat2`), per-folder write locks
(`backends.write_locks`), host paths hidden from results (`backends.host_paths`), all
shared with a sandbox's helper; the atomic multi-file writes (`atomic_writes`) and
their journal (`backends.journal`, the helper's too); commands, their change sets and
commits (`local_commands`), background processes (`local_processes`) and a branch's overlay
layer (`branch_layer`).
"""
