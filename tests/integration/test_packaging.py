"""The distribution: version, license, classifiers, URLs and dependency bounds.

Builds the wheel from this checkout (pip's isolated build, about 6 s) and reads what an
index would show.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib.metadata import version
from pathlib import Path

import langchain_fstools

ROOT = Path(__file__).resolve().parents[2]


def test_version_is_the_installed_distributions() -> None:
    assert langchain_fstools.__version__ == version("langchain-fstools")


def test_wheel_carries_the_license_classifiers_and_urls(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("langchain_fstools-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        (license_name,) = [n for n in names if n.endswith("/licenses/LICENSE")]
        shipped = archive.read(license_name).decode()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    assert shipped == (ROOT / "LICENSE").read_text()
    assert "langchain-fstools-mcp = langchain_fstools.mcp.cli:main" in scripts
    assert shipped.startswith("MIT License")
    assert metadata["License-Expression"] == "MIT"
    classifiers = metadata.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert {"Homepage", "Documentation"} <= urls.keys()
    requires = metadata.get_all("Requires-Dist")
    for bound in ("langchain-core<2,>=1.2", "langchain<2,>=1.2", "langgraph<2,>=1.1"):
        assert bound in requires


def test_pyproject_bounds_allow_every_1x_release() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    stack = [d for d in project["dependencies"] if d.startswith(("langchain", "langgraph"))]
    assert stack == ["langchain-core>=1.2,<2", "langchain>=1.2,<2", "langgraph>=1.1,<2"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
