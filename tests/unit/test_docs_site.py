"""The documentation site builds with `mkdocs build --strict`, and its charts are current.

A broken link, a missing page in the navigation, an unknown anchor or an API reference
that does not resolve fails the build. The performance charts are drawn from
`bench/figures.json` by `bench/charts.py`; the committed SVGs must be what it draws.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.fail("mkdocs is not installed; install the 'docs' extra (part of 'test')")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": str(Path(sys.executable).parent), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "tools" / "index.html").exists()


def test_the_committed_charts_are_drawn_from_the_bench_figures(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("charts", ROOT / "bench" / "charts.py")
    assert spec is not None
    assert spec.loader is not None
    charts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(charts)
    drawn = charts.draw(ROOT / "bench" / "figures.json", tmp_path)
    assert drawn
    for path in drawn:
        committed = ROOT / "docs" / "assets" / path.name
        assert committed.read_text() == path.read_text(), (
            f"redraw with bench/charts.py: {path.name}"
        )


PHONE_CONTENT_WIDTH = 380
"""CSS pixels a chart gets on a 420 px wide phone, rounded down: the built performance
page in headless Chromium (Debian's chromium, --window-size=420,...) draws a 480 px
chart 387 px wide."""
SMALLEST_TEXT = 10
EM_PER_CHARACTER = 0.6
"""A generous average advance of a sans-serif character, in ems."""


@pytest.mark.parametrize(
    "chart", sorted((ROOT / "docs" / "assets").glob("*.svg")), ids=lambda p: p.name
)
def test_charts_are_legible_at_phone_width(chart: Path) -> None:
    svg = ET.parse(chart).getroot()  # noqa: S314 - our own committed drawings
    width = float(svg.attrib["width"])
    scale = min(1.0, PHONE_CONTENT_WIDTH / width)
    texts = [node for node in svg.iter() if node.tag.endswith("text")]
    assert texts
    for text in texts:
        size = float(text.attrib["font-size"])
        assert size * scale >= SMALLEST_TEXT, (
            f"{chart.name}: {text.text!r} at {size * scale:.1f} px"
        )
        right = float(text.attrib["x"]) + EM_PER_CHARACTER * size * len(text.text or "")
        if text.attrib.get("text-anchor") != "end":
            assert right <= width, f"{chart.name}: {text.text!r} runs past the right edge"


def test_every_docs_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    missing = [page for page in pages if page not in config]
    assert not missing, f"add to mkdocs.yml nav: {missing}"


def test_the_readme_is_a_landing_page_of_at_most_200_lines() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details to docs/"


def test_ci_runs_the_readme_commands() -> None:
    """.ci/run sets up as the README's first command does, then runs its test command."""
    readme = (ROOT / "README.md").read_text()
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert "bash scripts/setup && .venv/bin/python -m langchain_fstools demo" in readme
    assert "bash scripts/setup" in ci
    test_command = ".venv/bin/python -m pytest"
    assert f"```bash\n{test_command}\n```" in readme
    assert ci[-1] == test_command


def test_the_readme_says_how_long_the_tests_and_ci_take_on_two_cores() -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert re.search(r"On a 2-core machine the tests take about \d+ minutes", readme)
    assert re.search(r"the whole CI run \(`\.ci/run`: [^)]*\) about \d+", readme)
