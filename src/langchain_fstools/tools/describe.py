"""What the model is told: descriptions and the prompt, from the settings and tools in force.

Templates are module constants, read as text. Two marks make them follow the configuration:
- `{name}` (with an optional format spec, `{glob_limit:,}`) takes the value of a
  `ToolSettings` field or of one of the derived values below; literal braces are doubled.
  The spec `*noun` spells a count with its noun in the right number (`{ls_limit:*entry/entries}`
  gives `1 entry`, `1,000 entries`; see `core.wording.plural`).
- A bullet written `-[glob, grep] ...` is kept, as `- ...`, only when each name in the
  brackets is a tool that is present or a value that is set (not zero, not empty). Its
  indented continuation lines go with it.
"""

from __future__ import annotations

import dataclasses
import re
import string
from typing import TYPE_CHECKING, Any

from langchain_fstools.core.wording import plural
from langchain_fstools.formats.text import LINE_WIDTH, ROW_WIDTH

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from _typeshed import DataclassInstance

_CONDITION = re.compile(r"^-\[([a-z_, ]+)\] ")


def describe(template: str, *, present: Collection[str] | None, values: Mapping[str, Any]) -> str:
    """Fill `template` for the tools present and the values in force.

    Args:
        template: The text with its marks (see the module docstring).
        present: Names of the tools the model has; None when unknown (every tool counts).
        values: What `{name}` fields and bullet conditions refer to.
    """
    kept: list[str] = []
    keep = True
    for line in template.split("\n"):
        condition = _CONDITION.match(line)
        if condition:
            names = [name.strip() for name in condition.group(1).split(",")]
            keep = all(_holds(name, present, values) for name in names)
            line = "- " + line[condition.end() :]  # noqa: PLW2901 - the mark is dropped
        elif not line.startswith("  "):
            keep = True
        if keep:
            kept.append(line)
    return _Formatter().vformat("\n".join(kept), (), values)


class _Formatter(string.Formatter):
    """`str.format`, plus the `*noun` spec for counts."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec.startswith("*"):
            noun, _, nouns = format_spec[1:].partition("/")
            return plural(value, noun, nouns or None)
        return str(super().format_field(value, format_spec))


def _holds(name: str, present: Collection[str] | None, values: Mapping[str, Any]) -> bool:
    if name in values:
        return bool(values[name])
    return present is None or name in present


def setting_values(settings: DataclassInstance) -> dict[str, Any]:
    """The values templates may name: each field of `settings` (a `ToolSettings`), and more.

    Besides the fields: sizes spelled for reading and the display widths.
    """
    values: dict[str, Any] = {
        field.name: getattr(settings, field.name) for field in dataclasses.fields(settings)
    }
    values.update(
        read_max_size=_size(values["read_max_bytes"]),
        row_width=ROW_WIDTH,
        line_width=LINE_WIDTH,
    )
    return values


def _size(count: int) -> str:
    """`262144` as `256 KB`, `3_000_000` as `2.9 MB`."""
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return plural(count, "byte")


__all__ = ["describe", "setting_values"]
