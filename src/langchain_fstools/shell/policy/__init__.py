"""What a command line means, and whether it may run.

Modules: `analysis` (the tree-sitter-bash analyser: simple commands, wrappers, words),
`code_strings` (code handed to interpreters, `bash -c`, `python -c`), `places` (the paths
a command touches), `policy` (`CommandPolicy`, the verdict on a command). Imports nothing
else of `shell`.
"""
