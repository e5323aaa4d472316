"""Language-server clients: diagnostics before and after a change, as data.

`Diagnostics` starts, reuses and ends the servers (`ServerSpec`, `DEFAULT_SERVERS`) and
answers what a change introduced and fixed (`DiagnosticsReport`); `tools/` renders it.
The servers need the `lsp` extra (pygls, lsprotocol, and the default Python servers);
the data types (`lsp.report`) need nothing.
"""

from langchain_fstools.core.lazy import lazy_names

__all__ = [
    "DEFAULT_SERVERS",
    "DIAGNOSTICS_ENV",
    "Diagnostic",
    "Diagnostics",
    "DiagnosticsReport",
    "ServerSpec",
    "TextChange",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "DEFAULT_SERVERS": "langchain_fstools.lsp.servers",
        "DIAGNOSTICS_ENV": "langchain_fstools.lsp.servers",
        "Diagnostic": "langchain_fstools.lsp.report",
        "Diagnostics": "langchain_fstools.lsp.diagnostics",
        "DiagnosticsReport": "langchain_fstools.lsp.report",
        "TextChange": "langchain_fstools.lsp.report",
        "ServerSpec": "langchain_fstools.lsp.servers",
    },
)
