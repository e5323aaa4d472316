"""The local disk: a directory on this machine, with sandboxed commands.

The backend is one class, `LocalBackend` (`backend`), assembled from its parts: writes
beneath a directory descriptor (`backends.beneath`, `backends.openat2`), per-folder
write locks (`backends.write_locks`), host paths hidden from results
(`backends.host_paths`), all four shared with a sandbox's helper; the journal of
multi-file commits (`journal`), background processes (`local_processes`) and a
branch's overlay layer (`branch_layer`).
"""
