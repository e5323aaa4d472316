"""The local disk: a directory on this machine, with sandboxed commands.

The backend is one class, `LocalBackend` (`backend`), assembled from its parts: writes
beneath a directory descriptor (`beneath`, `openat2`), per-file write locks
(`write_locks`), host paths hidden from results (`host_paths`), background processes
(`local_processes`) and a branch's overlay layer (`branch_layer`).
"""
