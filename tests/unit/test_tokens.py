"""Token counting never reaches for the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools.core import tokens


def test_estimate_is_bytes_over_four() -> None:
    assert tokens.estimate_tokens("") == 0
    assert tokens.estimate_tokens("abcd") == 1
    assert tokens.estimate_tokens("abcde") == 2
    assert tokens.estimate_tokens("日本") == 2


def test_without_cached_encoding_the_estimate_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert not tokens.tiktoken_cache_has("o200k_base")
    assert tokens.default_counter() is tokens.estimate_tokens


def test_empty_cache_dir_disables_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    assert tokens.default_counter() is tokens.estimate_tokens
