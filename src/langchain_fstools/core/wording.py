"""Counts in model-facing sentences: `1 line`, `2 lines`, never `1 lines`."""

from __future__ import annotations


def plural(count: float, noun: str, plural_form: str | None = None) -> str:
    """Spell a count with its noun in the right number, thousands separated.

    Args:
        count: How many; an integer is written `1,234`, a float as `%g` (`2.5`).
        noun: The singular noun, e.g. `line`, `matching line`.
        plural_form: The plural when it is not `noun + "s"`, e.g. `entries`.

    Returns:
        `1 line`, `2 lines`, `1,000 entries`, `1 second`, `0.5 seconds`.
    """
    number = f"{count:,}" if isinstance(count, int) else f"{count:g}"
    if count == 1:
        return f"{number} {noun}"
    return f"{number} {plural_form or noun + 's'}"


__all__ = ["plural"]
