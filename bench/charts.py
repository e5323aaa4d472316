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
from html import escape
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 760
LABEL_WIDTH = 260
BAR_HEIGHT = 22
GAP = 8
TOP = 40
OURS = "#2e7d32"
OTHERS = "#9e9e9e"
FONT = "font-family='sans-serif' font-size='12'"

LAYERS = [
    ("mcp", "the MCP server: the same tools for any MCP client"),
    ("middleware", "FilesystemMiddleware: tools, prompt, state, eviction, permissions"),
    ("tools", "one module per tool; read tracking; the toolkit"),
    ("patch", "apply_patch: parser, seek, invocation, atomic application"),
    ("backends", "storage: local, state, store, object store, SSH, composite"),
    ("search  |  shell", "search engine, ignore rules, ripgrep  |  bash analyser, processes"),
    ("formats", "text windows, encodings, images, PDF, notebooks, diffs, syntax"),
    ("core", "virtual paths, effects (sync + async), globs, records, tokens"),
]


def bar_chart(chart: dict[str, Any]) -> str:
    """One chart as SVG text: a bar per `[label, value]` row, ours in green."""
    bars: list[tuple[str, float]] = [(str(label), float(value)) for label, value in chart["bars"]]
    log = bool(chart.get("log"))
    top = max(value for _, value in bars)
    bottom = min(value for _, value in bars)
    span = WIDTH - LABEL_WIDTH - 90

    def length(value: float) -> float:
        if not log:
            return span * value / top
        low = math.log10(bottom) - 0.5
        return span * (math.log10(value) - low) / (math.log10(top) - low)

    height = TOP + len(bars) * (BAR_HEIGHT + GAP) + 10
    parts = [
        (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}'"
            f" viewBox='0 0 {WIDTH} {height}' role='img' aria-label='{escape(chart['title'])}'>"
        ),
        f"<rect width='{WIDTH}' height='{height}' fill='white'/>",
        f"<text x='10' y='22' {FONT} font-weight='bold'>{escape(chart['title'])}</text>",
    ]
    for index, (label, value) in enumerate(bars):
        y = TOP + index * (BAR_HEIGHT + GAP)
        colour = OURS if label.startswith("ours") else OTHERS
        width = max(1.0, length(value))
        parts += [
            (
                f"<text x='{LABEL_WIDTH - 8}' y='{y + 15}' {FONT} text-anchor='end'>"
                f"{escape(label)}</text>"
            ),
            (
                f"<rect x='{LABEL_WIDTH}' y='{y}' width='{width:.1f}' height='{BAR_HEIGHT}'"
                f" fill='{colour}'/>"
            ),
            (
                f"<text x='{LABEL_WIDTH + width + 6:.1f}' y='{y + 15}' {FONT}>"
                f"{_number(value)} {escape(chart['unit'])}</text>"
            ),
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def layer_diagram() -> str:
    """The package's layers as stacked boxes, top to bottom; imports point down."""
    box, gap, left = 44, 10, 20
    height = 20 + len(LAYERS) * (box + gap)
    parts = [
        (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}'"
            f" viewBox='0 0 {WIDTH} {height}' role='img' aria-label='package layers'>"
        ),
        f"<rect width='{WIDTH}' height='{height}' fill='white'/>",
    ]
    for index, (name, role) in enumerate(LAYERS):
        y = 10 + index * (box + gap)
        parts += [
            (
                f"<rect x='{left}' y='{y}' width='{WIDTH - 2 * left - 40}' height='{box}' rx='6'"
                " fill='#e8f5e9' stroke='#2e7d32'/>"
            ),
            f"<text x='{left + 12}' y='{y + 19}' {FONT} font-weight='bold'>{escape(name)}</text>",
            f"<text x='{left + 12}' y='{y + 35}' {FONT}>{escape(role)}</text>",
        ]
        if index < len(LAYERS) - 1:
            x = WIDTH - 40
            parts.append(
                f"<path d='M{x} {y + box / 2} v{box + gap}' stroke='#555' fill='none'"
                " marker-end='url(#down)'/>"
            )
    parts.insert(
        2,
        "<defs><marker id='down' markerWidth='8' markerHeight='8' refX='4' refY='8'"
        " orient='auto-start-reverse'><path d='M0 0 L8 0 L4 8 z' fill='#555'/></marker></defs>",
    )
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
