"""File history: what each tool call changed (`changes`) and the backend view recording it.

`recording.RecordingBackend` wraps a backend and turns every change into a record in the
thread's state; `changes` holds the records, their channel, and how to put files back.
"""
