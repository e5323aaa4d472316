"""Our image and PDF blocks become each provider's native blocks (no network).

The request payloads are built by langchain-anthropic and langchain-openai (Responses
API) exactly as they would be sent; nothing is sent.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from langchain_fstools import FileToolkit, LocalBackend
from tests.media import image_bytes, pdf_bytes


@pytest.fixture
def conversation(tmp_path: Path) -> list[Any]:
    (tmp_path / "chart.png").write_bytes(image_bytes((40, 30), "PNG"))
    (tmp_path / "report.pdf").write_bytes(pdf_bytes(["Revenue grew.", "Costs fell."]))
    (read,) = FileToolkit(
        LocalBackend(tmp_path), tools=["read_file"], pdf_file_blocks=True
    ).get_tools()
    calls = [
        {"name": "read_file", "args": {"file_path": "/chart.png"}, "id": "c1"},
        {"name": "read_file", "args": {"file_path": "/report.pdf"}, "id": "c2"},
    ]
    results = [read.invoke({**call, "type": "tool_call"}) for call in calls]
    assert all(isinstance(r, ToolMessage) and r.status == "success" for r in results)
    return [HumanMessage("Summarise the files."), AIMessage("", tool_calls=calls), *results]


def test_anthropic_gets_native_image_and_document_blocks(conversation: list[Any]) -> None:
    payload = ChatAnthropic(model="claude-sonnet-4-5", api_key="not-used")._get_request_payload(
        conversation
    )
    results = {
        block["tool_use_id"]: block["content"] for block in payload["messages"][-1]["content"]
    }
    image = [b for b in results["c1"] if b["type"] == "image"]
    assert image[0]["source"]["type"] == "base64"
    assert image[0]["source"]["media_type"] == "image/png"
    document = [b for b in results["c2"] if b["type"] == "document"]
    assert document[0]["source"]["media_type"] == "application/pdf"
    assert any(b["type"] == "text" and "--- Page 1 ---" in b["text"] for b in results["c2"])


def test_openai_responses_api_gets_input_image_and_input_file(conversation: list[Any]) -> None:
    # No socket options: by default they are probed on a real socket (pytest-socket
    # warns), and this test only builds the request payload.
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        model = ChatOpenAI(
            model="gpt-5", api_key="not-used", use_responses_api=True, http_socket_options=()
        )
    probed = [
        w for w in warned if issubclass(w.category, UserWarning) and "socket" in str(w.message)
    ]
    assert not probed  # (an unclosed socket another test left may be collected meanwhile)
    payload = model._get_request_payload(conversation)
    outputs = {
        item["call_id"]: item["output"]
        for item in payload["input"]
        if item.get("type") == "function_call_output"
    }
    assert [b["type"] for b in outputs["c1"]] == ["input_text", "input_image"]
    assert outputs["c1"][1]["image_url"].startswith("data:image/png;base64,")
    assert [b["type"] for b in outputs["c2"]] == ["input_text", "input_file"]
    assert outputs["c2"][1]["file_data"].startswith("data:application/pdf;base64,")
    assert outputs["c2"][1]["filename"] == "report.pdf"
