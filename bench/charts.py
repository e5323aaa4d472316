"""Draw the documentation's charts: bench figures as SVG bar charts, and the layer diagram.

    python bench/charts.py [--figures bench/figures.json] [--out docs/assets]

`bench/figures.json` holds the figures the benchmarks printed (copied from their
tables, see docs/performance.md); each chart is one horizontal bar per row, on a log
scale where the values span orders of magnitude. The output is deterministic, so the
committed SVGs are checked against a fresh drawing by the tests. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import math
import textwrap
from html import escape
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 480
"""Drawn narrow, so a phone (420 px wide, about 380 px of content) shrinks it little."""
MARGIN = 10
FONT_SIZE = 14
"""Every text's size: at 380/480 of it on a phone, still 11 px."""
LINE = 18
BAR_HEIGHT = 16
VALUE_WIDTH = 110
"""Room right of the longest bar for its value."""
ROW_GAP = 10
OURS = "#2e7d32"
OTHERS = "#9e9e9e"
FONT = f"font-family='sans-serif' font-size='{FONT_SIZE}'"
TITLE_CHARS = 52
TEXT_CHARS = 56
"""Characters a line holds at `FONT_SIZE` in `WIDTH` (longer text wraps)."""

LAYERS = [
    ("mcp", "the MCP server: the same tools for any MCP client"),
    ("middleware", "FilesystemMiddleware: tools, prompt, state, eviction, permissions"),
    ("tools", "one module per tool; read tracking; the toolkit"),
    ("patch", "apply_patch: parser, seek, invocation, atomic application"),
    ("backends", "storage: local, state, store, object store, SSH, composite"),
    ("search", "search engine, ignore rules, ripgrep and its confined spawner"),
    ("shell", "commands: policy, network, sandbox, session (rooms in that order)"),
    ("formats", "text windows, encodings, images, PDF, notebooks, diffs, syntax"),
    ("core", "virtual paths, effects (sync + async), globs, records, tokens"),
]


def _svg(height: int, label: str) -> list[str]:
    """The opening of a chart `height` tall, on white."""
    return [
        (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}'"
            f" viewBox='0 0 {WIDTH} {height}' role='img' aria-label='{escape(label)}'>"
        ),
        f"<rect width='{WIDTH}' height='{height}' fill='white'/>",
    ]


def _lines(x: float, y: float, lines: list[str], style: str = "") -> list[str]:
    """One `<text>` per line, `LINE` apart, the first baseline at `y`."""
    return [
        f"<text x='{x}' y='{y + index * LINE}' {FONT}{style}>{escape(line)}</text>"
        for index, line in enumerate(lines)
    ]


def bar_chart(chart: dict[str, Any]) -> str:
    """One chart as SVG text: a label line, then its bar, per `[label, value]` row."""
    bars: list[tuple[str, float]] = [(str(label), float(value)) for label, value in chart["bars"]]
    log = bool(chart.get("log"))
    top = max(value for _, value in bars)
    bottom = min(value for _, value in bars)
    span = WIDTH - 2 * MARGIN - VALUE_WIDTH

    def length(value: float) -> float:
        if not log:
            return span * value / top
        low = math.log10(bottom) - 0.5
        return span * (math.log10(value) - low) / (math.log10(top) - low)

    title = textwrap.wrap(chart["title"], TITLE_CHARS)
    first_row = MARGIN + len(title) * LINE + 8
    row = LINE + BAR_HEIGHT + ROW_GAP
    height = first_row + len(bars) * row
    parts = [
        *_svg(height, chart["title"]),
        *_lines(MARGIN, MARGIN + 14, title, " font-weight='bold'"),
    ]
    for index, (label, value) in enumerate(bars):
        y = first_row + index * row
        colour = OURS if label.startswith("ours") else OTHERS
        width = max(1.0, length(value))
        parts += [
            *_lines(MARGIN, y + 14, [label]),
            (
                f"<rect x='{MARGIN}' y='{y + LINE}' width='{width:.1f}' height='{BAR_HEIGHT}'"
                f" fill='{colour}'/>"
            ),
            (
                f"<text x='{MARGIN + width + 6:.1f}' y='{y + LINE + 13}' {FONT}>"
                f"{_number(value)} {escape(chart['unit'])}</text>"
            ),
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def layer_diagram() -> str:
    """The package's layers as stacked boxes, top to bottom; imports point down."""
    gap, arrow = 10, 24
    roles = [textwrap.wrap(role, TEXT_CHARS - 2) for _, role in LAYERS]
    boxes = [12 + LINE * (1 + len(lines)) for lines in roles]
    height = MARGIN + sum(boxes) + gap * len(LAYERS)
    parts = _svg(height, "package layers")
    parts.append(
        "<defs><marker id='down' markerWidth='8' markerHeight='8' refX='4' refY='8'"
        " orient='0'><path d='M0 0 L8 0 L4 8 z' fill='#555'/></marker></defs>"
    )
    y = MARGIN
    for index, ((name, _), lines, box) in enumerate(zip(LAYERS, roles, boxes, strict=True)):
        parts += [
            (
                f"<rect x='{MARGIN}' y='{y}' width='{WIDTH - 2 * MARGIN - arrow}' height='{box}'"
                " rx='6' fill='#e8f5e9' stroke='#2e7d32'/>"
            ),
            *_lines(MARGIN + 10, y + 20, [name], " font-weight='bold'"),
            *_lines(MARGIN + 10, y + 20 + LINE, lines),
        ]
        if index < len(LAYERS) - 1:
            x = WIDTH - MARGIN - arrow / 2
            parts.append(
                f"<path d='M{x} {y + box / 2} v{box / 2 + gap + boxes[index + 1] / 2 - 8}'"
                " stroke='#555' fill='none' marker-end='url(#down)'/>"
            )
        y += box + gap
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def draw(figures: Path, out: Path) -> list[Path]:
    """Write every chart of `figures` and the layer diagram into `out`; return the files."""
    out.mkdir(parents=True, exist_ok=True)
    charts: dict[str, dict[str, Any]] = json.loads(figures.read_text())
    written = []
    for name, chart in charts.items():
        target = out / f"perf-{name}.svg"
        target.write_text(bar_chart(chart))
        written.append(target)
    layers = out / "layers.svg"
    layers.write_text(layer_diagram())
    written.append(layers)
    return written


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:g}"


def main() -> None:
    """Parse the command line and draw."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=Path, default=ROOT / "bench" / "figures.json")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "assets")
    arguments = parser.parse_args()
    for path in draw(arguments.figures, arguments.out):
        print(path)


if __name__ == "__main__":
    main()
