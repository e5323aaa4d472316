"""The network door of a sandbox: which domains a command may reach, and how.

Modules: `domains` (the allowed-domain rules), `proxy` (`DomainProxy`, the host-side proxy
a sandbox's traffic goes through), `bridge` (the small relay inside the sandbox, run as a
script). Imports nothing else of `shell`.
"""
