"""Token counting never reaches for the network, and counts with a real tokenizer."""

from __future__ import annotations

import gzip
import hashlib
import socket
from importlib import resources
from pathlib import Path

import pytest
import tiktoken
import tiktoken_ext.openai_public

from langchain_fstools.core import tokens

SAMPLE_FILES = sorted(Path(tokens.__file__).parent.parent.rglob("*.py"))[:40]
"""Real source files: this package's own modules."""

ODD_TEXTS = (
    "",
    "<|endoftext|> is text here, not a special token",
    "日本語のテキストと English mixed",
    " " * 1000 + "x",
    "\r\n\r\n\t  trailing   \n",
    "🙂👍🏽 e\u0301 ﬁ",
    "a" * 50_000,
    "0123456789" * 300,
)


def test_estimate_is_bytes_over_four() -> None:
    assert tokens.estimate_tokens("") == 0
    assert tokens.estimate_tokens("abcd") == 1
    assert tokens.estimate_tokens("abcde") == 2
    assert tokens.estimate_tokens("日本") == 2


@pytest.fixture
def no_tiktoken_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    assert not tokens.tiktoken_cache_has("o200k_base")


def test_sockets_are_disabled_here() -> None:
    """The counters below are built and used with no network at all."""
    with pytest.raises(Exception, match=r"[Ss]ocket"):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)


@pytest.mark.usefixtures("no_tiktoken_cache")
def test_without_tiktokens_cache_the_wheel_encoding_counts() -> None:
    counter = tokens.default_counter()
    assert counter.name == "bpe-openai o200k_base"
    assert tokens.counter_name(counter) == "bpe-openai o200k_base"
    assert counter("hello world") == 2  # "hello", " world": not 11 / 4 rounded up
    assert tokens.default_counter("cl100k_base").name == "bpe-openai cl100k_base"


@pytest.mark.usefixtures("no_tiktoken_cache")
def test_an_encoding_no_offline_tokenizer_has_falls_back_to_the_estimate() -> None:
    counter = tokens.default_counter("p50k_base")
    assert counter.name == tokens.ESTIMATE_NAME
    assert counter("abcdefgh") == 2


@pytest.mark.usefixtures("no_tiktoken_cache")
def test_without_bpe_openai_the_estimate_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = tokens.importlib.util.find_spec
    monkeypatch.setattr(
        tokens.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "bpe_openai" else real_find_spec(name, *a),
    )
    tokens._bpe_openai.cache_clear()  # the loader is cached per process
    try:
        assert tokens.default_counter().name == tokens.ESTIMATE_NAME
    finally:
        tokens._bpe_openai.cache_clear()


def test_empty_cache_dir_disables_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    assert not tokens.tiktoken_cache_has("o200k_base")
    assert tokens.default_counter().name == "bpe-openai o200k_base"


def populate_tiktoken_cache(
    monkeypatch: pytest.MonkeyPatch, cache_dir: Path, encoding: str
) -> None:
    """Put the wheel's encoding file where tiktoken caches downloads, after checking it.

    The file must hash to the digest tiktoken pins for its download (tiktoken checks it
    again when it loads the cache), so this is the very file tiktoken would fetch.
    """
    pinned: dict[str, str] = {}

    def capture(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        pinned[url] = expected_hash or ""
        return {}

    with monkeypatch.context() as patch:
        patch.setattr(tiktoken_ext.openai_public, "load_tiktoken_bpe", capture)
        getattr(tiktoken_ext.openai_public, encoding)()
    ((url, expected),) = pinned.items()
    packed = resources.files("bpe_openai.data").joinpath(f"{encoding}.tiktoken.gz")
    data = gzip.decompress(packed.read_bytes())
    assert hashlib.sha256(data).hexdigest() == expected, url
    cache_dir.mkdir(exist_ok=True)
    tokens.tiktoken_cache_path(cache_dir, encoding).write_bytes(data)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_offline_counts_agree_with_tiktoken_loaded_from_its_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, encoding: str
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    wheel = tokens.default_counter(encoding)
    assert wheel.name == f"bpe-openai {encoding}"

    populate_tiktoken_cache(monkeypatch, tmp_path / "cache", encoding)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    assert tokens.tiktoken_cache_has(encoding)
    cached = tokens.default_counter(encoding)
    assert cached.name == f"tiktoken {encoding}"

    reference = tiktoken.get_encoding(encoding)
    texts = [*ODD_TEXTS, *(path.read_text(encoding="utf-8") for path in SAMPLE_FILES)]
    assert len(texts) > 40
    for text in texts:
        expected = len(reference.encode(text, disallowed_special=()))
        assert wheel(text) == expected, text[:60]
        assert cached(text) == expected, text[:60]


def test_a_counter_is_named_by_its_name_or_its_function() -> None:
    assert tokens.counter_name(tokens.estimate_tokens) == tokens.ESTIMATE_NAME
    assert tokens.counter_name(len) == "len"
    assert tokens.counter_name(tokens.Tokenizer("mine", len)) == "mine"
