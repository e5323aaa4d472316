"""The approval gate's pieces: the interrupt value, resume values, the per-call guard."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware.human_in_the_loop import HITLRequest

from langchain_fstools.middleware.approval import (
    CallGuard,
    FileApprovalRequest,
    _decision,
    approval_request,
)
from langchain_fstools.middleware.policy import Permission, Policy, Verdict


def test_the_request_is_a_hitl_request_with_summary_and_diff() -> None:
    verdict = Verdict("ask", "the default mode", "/a.py", "write")
    value = approval_request("write_file", {"file_path": "/a.py"}, "c1", verdict, "+x\n")
    assert set(HITLRequest.__annotations__) <= set(value)
    assert set(value) == set(FileApprovalRequest.__annotations__)
    assert value["review_configs"] == [
        {"action_name": "write_file", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    (action,) = value["action_requests"]
    assert action["name"] == "write_file"
    assert action["description"] == (
        "write_file wants to change /a.py; the default mode asks for approval.\n\n```diff\n+x\n```"
    )


def test_execute_is_summarised_by_its_command() -> None:
    verdict = Verdict("ask", "the default mode", "make", "execute")
    value = approval_request("execute", {"command": "make"}, "c1", verdict, None)
    assert value["summary"] == "execute wants to run `make`; the default mode asks for approval."
    assert "diff" not in value


@pytest.mark.parametrize(
    "answer",
    [{"type": "approve"}, {"decisions": [{"type": "reject", "message": "no"}]}],
)
def test_resume_values_in_both_shapes(answer: dict[str, Any]) -> None:
    expected = answer["decisions"][0] if "decisions" in answer else answer
    assert _decision(answer) == expected


@pytest.mark.parametrize(
    "answer",
    ["yes", {"type": "respond", "message": "x"}, {"decisions": []}, {"decisions": [{}, {}]}],
)
def test_bad_resume_values_are_refused(answer: Any) -> None:
    with pytest.raises(ValueError, match="decision"):
        _decision(answer)


def test_the_guard_lets_approved_paths_through_but_never_denied_ones() -> None:
    policy = Policy([Permission(operations=["write"], paths=["/vendor"], action="deny")])
    guard = CallGuard(policy, frozenset({"/a.py", "/vendor/x.py", "/.env"}))
    assert guard.writable("/a.py")
    assert not guard.writable("/b.py")
    assert not guard.writable("/vendor/x.py")
    assert guard.readable("/.env")
    assert not CallGuard(policy).readable("/.env")
    assert CallGuard(policy).visible("/.env")
