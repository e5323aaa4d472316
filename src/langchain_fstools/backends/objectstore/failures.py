"""Why an object store request failed, in a few words a person (and a model) can act on.

obstore's errors carry the cause in their text (a connection refused, a name that does
not resolve, a timeout, the store's HTTP status and its own message, a lookup of cloud
instance credentials); `unavailable` turns one into `StoreUnavailable` naming it, and
logs obstore's first line (which names the request's URL) for whoever runs the agent.
"""

from __future__ import annotations

import logging
import re
from typing import Final

from langchain_fstools.errors import StoreUnavailable

logger = logging.getLogger(__name__)

_STATUS: Final = re.compile(r"status code: (\d{3})[^:\n]*(?::\s*([^\n]*))?")
_MESSAGE: Final = re.compile(r"<Message>(.*?)</Message>", re.DOTALL)
_METADATA: Final = ("169.254.169.254", "metadata.google.internal")
"""Where obstore looks for cloud instance credentials when none are configured."""

MESSAGE_CHARS: Final = 200
"""Most characters of a store's own error message kept in the cause."""


def cause_of(exc: BaseException) -> tuple[str, bool] | None:
    """The cause obstore's error names, and whether it lasts (retrying will not help).

    None when the error names no cause this module knows, and for HTTP 416 (a range
    past the end, which is an answer, not a failure).
    """
    text = str(exc)
    status = _STATUS.search(text)
    cause: tuple[str, bool] | None
    if any(host in text for host in _METADATA):
        cause = (NO_CREDENTIALS, True)
    elif "ConnectionRefused" in text or "Connection refused" in text:
        cause = ("connection refused (is the store running at its endpoint?)", False)
    elif "dns error" in text:
        cause = ("its host name does not resolve (DNS)", True)
    elif status is not None:
        cause = _status_cause(int(status[1]), status[2], text)
    elif "kind: Timeout" in text or "TimedOut" in text or "timed out" in text:
        cause = ("it did not answer in time", False)
    else:
        cause = None
    return cause


NO_CREDENTIALS: Final = (
    "no credentials are configured and there are no cloud instance credentials; set the"
    " store's access key and secret (or the AWS_* variables)"
)


def _status_cause(code: int, said: str | None, text: str) -> tuple[str, bool] | None:
    """The cause an HTTP status gives, with the store's own message (None for 416)."""
    if code == 416:  # noqa: PLR2004 - Range Not Satisfiable: a range past the end
        return None
    own = _MESSAGE.search(text)
    message = (own[1] if own else said or "").strip()[:MESSAGE_CHARS]
    denied = "access denied, " if code in {401, 403} else ""
    return f"{denied}HTTP {code}" + (f": {message}" if message else ""), code < 500  # noqa: PLR2004


def unavailable(exc: Exception, request: str) -> StoreUnavailable:
    """`StoreUnavailable` for `request` (e.g. `"GET src/app.py"`) failing with `exc`, logged."""
    cause = cause_of(exc)
    first_line = str(exc).split("\n", 1)[0]
    logger.warning(
        "object store %s failed: %s; obstore: %s",
        request,
        "unknown cause" if cause is None else cause[0],
        first_line,
    )
    if cause is None:
        return StoreUnavailable(type(exc).__name__)
    return StoreUnavailable(type(exc).__name__, cause[0], lasting=cause[1])


__all__ = ["cause_of", "unavailable"]
