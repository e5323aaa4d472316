"""`python -m langchain_fstools demo` shows each capability, offline, on both backends."""

from __future__ import annotations

import pytest

from langchain_fstools.commands import main


@pytest.mark.parametrize("backend", ["local", "state"])
def test_demo_reads_edits_greps_reads_an_image_and_evicts(
    backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--backend", backend]) == 0
    out = capsys.readouterr().out
    assert f"({backend} backend)" in out
    assert '<< 3\t    return f"Hello, {name}!"' in out  # a read
    assert "<< Edited /src/greeter/greet.py: replaced 1 occurrence." in out  # an edit
    assert '<< /tests/test_greet.py:5:    assert greet("Ada") == "Hello, Ada!"' in out  # a grep
    assert "<< Image /docs/logo.png: PNG 96x64" in out  # an image read
    assert "<< [image block: image/png" in out
    assert "saved to /large_tool_results/call_16." in out  # an eviction
    assert "<< /large_tool_results/call_16:2717:tests/test_greet.py::test_greet FAILED" in out
    assert "!! Error: '/../etc/passwd' is outside the workspace." in out  # a refusal
    assert (  # a patch across two files
        "<< Success. Updated the following files:\n<< M /CHANGELOG.md\n"
        "<< A /tests/test_punctuation.py" in out
    )
