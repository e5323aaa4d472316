"""Token counting that never touches the network.

`default_counter()` returns tiktoken's `o200k_base` counter when that encoding is
already in tiktoken's local cache (`TIKTOKEN_CACHE_DIR`, `DATA_GYM_CACHE_DIR`, or the
system temp directory's `data-gym-cache`), because loading an uncached encoding would
download it. Otherwise it returns `estimate_tokens`: UTF-8 bytes / 4, rounded up, which
is close for English prose and code and errs high for most other scripts.

Any `Callable[[str], int]` can be used instead (e.g. a chat model's
`get_num_tokens`).
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text."""

DEFAULT_ENCODING = "o200k_base"
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def estimate_tokens(text: str) -> int:
    """Estimate tokens as UTF-8 bytes / 4, rounded up."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


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
    key = hashlib.sha1(_ENCODING_URL.format(name=encoding).encode()).hexdigest()  # noqa: S324 - tiktoken's cache key
    return (Path(cache_dir) / key).is_file()


def default_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """Return an offline token counter: tiktoken when cached, else `estimate_tokens`.

    Args:
        encoding: The tiktoken encoding to use when it is cached. Default: o200k_base.
    """
    if not tiktoken_cache_has(encoding):
        return estimate_tokens
    import tiktoken  # noqa: PLC0415 - imported only when its data is present

    enc = tiktoken.get_encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


__all__ = ["TokenCounter", "default_counter", "estimate_tokens", "tiktoken_cache_has"]
