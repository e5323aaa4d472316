"""What `help()` shows: FileToolkit lists every setting with its default."""

from __future__ import annotations

import dataclasses
import pydoc
import re

from langchain_fstools import FileToolkit, ToolSettings


def test_help_of_filetoolkit_lists_every_setting_with_its_default() -> None:
    text = pydoc.render_doc(FileToolkit, renderer=pydoc.plaintext)
    section = text.split("Settings (keyword arguments, as `ToolSettings` fields):", 1)[1]
    names = [field.name for field in dataclasses.fields(ToolSettings)]
    starts = {name: section.index(f" {name}: ") for name in names}
    ordered = sorted(starts.values())
    for name, start in starts.items():
        following = [s for s in ordered if s > start]
        entry = section[start : following[0] if following else None]
        assert re.search(r"Default:", entry), f"{name} has no default in help(FileToolkit)"
    assert "read_limit: Rows read_file returns when no limit is given. Default: 2000." in section
