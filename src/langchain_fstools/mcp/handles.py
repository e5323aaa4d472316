"""Read handles: what a client has read of a file, signed, so the next call can show it.

The 2026-07-28 protocol has no session to keep read state in, and a client that opens
a new session (or a new server process) per call has none either. So a `read_file`
answer carries a handle: the file's path, the version read and the lines seen, with an
HMAC-SHA256 tag. The client passes it back as `read_handle`; any server instance that
holds the same key can check it, so the server keeps nothing per connection. A handle
says only what was read: an edit with it still fails if the file changed since (the
version inside no longer matches), and one for another file does not count for this one.

The key comes from `--handle-key` or `HANDLE_KEY_ENV` (instances behind a balancer must
share one), else from a file in the user's config folder, created with mode 0600 on
first use, so the stdio server a client spawns for each call accepts the handles of the
previous one.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from langchain_fstools.tools.reads import ReadRecord

HANDLE: Final = "read_handle"
"""The name of a handle: the tools' argument, the answers' line and `structuredContent` key."""

HANDLE_KEY_ENV: Final = "LANGCHAIN_FSTOOLS_MCP_HANDLE_KEY"
"""The environment variable holding the signing key of read handles."""

KEY_FILE: Final = Path("langchain-fstools") / "mcp-handle-key"
"""Where the generated key is kept, under the user's config folder."""

_TAG_BYTES: Final = 16


class InvalidHandle(ValueError):
    """A `read_handle` this server did not issue, or one altered since."""


class ReadHandles:
    """Mints and checks read handles (and other state a client carries back) with one key.

    Args:
        key: The signing key; at least 16 bytes.

    Raises:
        ValueError: a key under 16 bytes.
    """

    def __init__(self, key: bytes) -> None:
        """Keep the key."""
        if len(key) < _TAG_BYTES:
            raise ValueError("a read handle key needs at least 16 bytes")
        self._key = key

    def mint(self, path: str, record: ReadRecord) -> str:
        """The handle of what `record` says was read of `path`."""
        return self.seal([path, record["version"], record["ranges"], record["total_lines"]])

    def open(self, handle: str) -> tuple[str, ReadRecord]:
        """The path and read record a handle stands for.

        Raises:
            InvalidHandle: not a handle of this key, or altered.
        """
        path, version, ranges, total = self.unseal(handle)
        record: ReadRecord = {
            "version": version,
            "ranges": ranges,
            "total_lines": total,
            "view": "",
        }
        return path, record

    def seal(self, value: object) -> str:
        """`value` (JSON) as a signed token: readable, but not alterable without the key."""
        payload = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        return f"{_encode(payload)}.{_encode(self._tag(payload))}"

    def unseal(self, token: str) -> Any:
        """The value `token` was sealed from.

        Raises:
            InvalidHandle: not a token of this key, or altered.
        """
        body, _, tag = token.strip().partition(".")
        try:
            payload, signature = _decode(body), _decode(tag)
        except (ValueError, binascii.Error):
            raise InvalidHandle(token) from None
        if not hmac.compare_digest(signature, self._tag(payload)):
            raise InvalidHandle(token)
        return json.loads(payload)

    def _tag(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:_TAG_BYTES]


def handle_key(given: str | None = None) -> bytes:
    """The signing key: `given`, else `HANDLE_KEY_ENV`, else the config folder's key file.

    The file (`$XDG_CONFIG_HOME` or `~/.config`, then `KEY_FILE`) is created with
    mode 0600 when missing, and refused when others may read it.

    Raises:
        ValueError: a key file others can read, or one that cannot be read or created.
    """
    text = given or os.environ.get(HANDLE_KEY_ENV)
    if text:
        return text.encode()
    path = config_file(KEY_FILE)
    try:
        return _stored_key(path)
    except OSError as exc:
        raise ValueError(
            f"cannot keep the read-handle key in {path} ({exc.strerror}); "
            f"pass --handle-key or set {HANDLE_KEY_ENV}"
        ) from None


def config_file(name: Path) -> Path:
    """Where the file `name` is kept in the user's config folder.

    That is `$XDG_CONFIG_HOME`, else `~/.config`: the read-handle key's, the HTTP token's.
    """
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / name


def _stored_key(path: Path) -> bytes:
    """The key in `path`; a new one is written whole (mode 0600), then linked into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fresh = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(32))
        try:
            with contextlib.suppress(FileExistsError):  # another process's key won
                os.link(fresh, path)
        finally:
            fresh.unlink()
    if path.stat().st_mode & 0o077:
        raise ValueError(
            f"{path} holds the read-handle key but others may read it; run chmod 600 {path}"
        )
    return path.read_bytes().strip()


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


__all__ = [
    "HANDLE",
    "HANDLE_KEY_ENV",
    "KEY_FILE",
    "InvalidHandle",
    "ReadHandles",
    "config_file",
    "handle_key",
]
