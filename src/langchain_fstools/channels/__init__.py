"""LangGraph channels the package's state uses: delta channels snapshotting at a scaled cadence.

`cadence` holds the channel class; `messages` the conversation's channel and its reducer.
Storage (`backends`) and the middleware's state schemas build on them.
"""
