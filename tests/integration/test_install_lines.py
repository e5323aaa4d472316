"""Every install line of the README and the docs works as written, in a clean virtualenv.

The lines are run in order (each distinct line once), in one fresh venv (its `bin` first on PATH), from a copy of
the checkout (what `pip install .` means in the docs; a built wheel lands in the copy).
The package index's name works only after the first release: a line naming it must say
so, and is not run. pip reads the package mirrors it is configured with; the install of
the extras takes a few minutes the first time (bounded below).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
INSTALL = re.compile(r"(?:uvx --from|pip (?:install|wheel))[^`\n#]*[^`\n#\s]")
"""An install command, up to the end of its code span, line or comment."""
RELEASE = "after the first release"
TIMEOUT = 1200

pytestmark = pytest.mark.integration


def install_lines() -> list[tuple[str, str, bool]]:
    """(page, command, whether it waits for the first release), in the pages' order."""
    found = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for paragraph in re.split(r"\n\s*\n", page.read_text()):
            later = RELEASE in paragraph.lower()
            spans = re.findall(r"```.*?```|`[^`]+`", paragraph, re.DOTALL)
            inline = (span if span.startswith("```") else " ".join(span.split()) for span in spans)
            found += [(name, c.strip(), later) for span in inline for c in INSTALL.findall(span)]
    return found


LINES = install_lines()


def test_the_index_name_is_used_only_where_it_says_it_waits_for_the_release() -> None:
    assert any(later for _, _, later in LINES)
    naming_index = [
        f"{page}: {command}"
        for page, command, later in LINES
        if re.search(r"\blangchain-fstools\b(?!-mcp)", command) and not later
    ]
    assert naming_index == []


def test_every_install_line_runs_in_a_clean_venv(tmp_path: Path) -> None:
    checkout = tmp_path / "langchain-fstools"
    shutil.copytree(
        ROOT,
        checkout,
        ignore=shutil.ignore_patterns(".git", ".venv*", ".cache", "dist", "build", "node_modules"),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=TIMEOUT)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    ran: list[str] = []
    for page, command, later in LINES:
        if later or command in ran:
            continue  # a line the venv has run already would only run again as it did
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=TIMEOUT,
        )
        assert done.returncode == 0, (
            f"{page}: {command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
        ran.append(command)
    assert "pip install ." in ran
    assert any(command.startswith("pip wheel") for command in ran)
