"""The permission floor: rules and modes, the decision on a call, and approvals.

`rules` holds the rules, modes and protected paths; `approval` the gate that decides a
call (allow, ask, deny) on its canonical targets and the approval request and answer.
Both the middleware and the MCP server are front-ends over this package.
"""
