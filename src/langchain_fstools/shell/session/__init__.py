"""The session that runs commands: one warm supervisor per thread, and what it carries.

Modules: `session` (`Session`, `Sessions`, `session_key`), `process` (running a process
and reading its output), `background` (background processes and their reads), `shell_state`
(cwd and exported variables carried between commands), `pending` (change sets waiting for
a person), `output` (bounded output buffers and progress). Imports `shell.sandbox` and
`shell.network`.
"""
