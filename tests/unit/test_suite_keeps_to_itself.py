"""The suite writes its caches and configuration under the checkout, not the home folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_fstools.mcp.handles import HANDLE_KEY_ENV, KEY_FILE, handle_key
from langchain_fstools.mcp.listing_cache import cache_folder
from tests.conftest import CACHE, SUITE_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_cache_is_an_ignored_folder_of_the_checkout() -> None:
    assert CACHE == ROOT / ".cache"
    assert ".cache/" in (ROOT / ".gitignore").read_text().splitlines()


def test_the_mcp_listing_cache_is_under_the_checkout() -> None:
    assert cache_folder().is_relative_to(CACHE)


def test_the_read_handle_key_is_kept_under_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HANDLE_KEY_ENV, raising=False)
    handle_key()
    assert (Path(SUITE_ENV["XDG_CONFIG_HOME"]) / KEY_FILE).is_file()


@pytest.mark.parametrize("variable", ["XDG_CACHE_HOME", "XDG_CONFIG_HOME", "npm_config_cache"])
def test_processes_the_tests_start_look_under_the_checkout(variable: str) -> None:
    shown = subprocess.run(
        [sys.executable, "-c", f"import os; print(os.environ[{variable!r}])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert Path(shown).is_relative_to(CACHE)
    assert os.environ[variable] == shown
