"""Shell commands, one subpackage per concern; each imports only those listed before it.

- `policy`: what a command line means (the one tree-sitter-bash analyser, code strings,
  the places a command touches) and the command policy that judges it.
- `network`: the network door of a sandbox (allowed domains, the proxy and its bridge).
- `sandbox`: how a sandbox is built (bubblewrap or Landlock, limits, the environment,
  credential masks and protected paths, the copy-on-write overlay view, the supervisor
  that runs inside it and the plan it starts from).
- `session`: the session that runs commands in a sandbox (keeper requests, foreground and
  background processes, shell state carried between commands, waiting change sets,
  output buffers).

Layers above (`backends`, `tools`, `permissions`) import the modules these packages list.
"""
