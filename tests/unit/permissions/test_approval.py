"""The approval gate's pieces: the interrupt value, resume values, the per-call guard."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware.human_in_the_loop import ActionRequest, HITLRequest

from langchain_fstools.permissions.approval import (
    Approval,
    FileActionRequest,
    Review,
    approval_request,
    decisions,
    merge_reviews,
)
from langchain_fstools.permissions.gate import CallGuard
from langchain_fstools.permissions.rules import Permission, Policy, Verdict
from langchain_fstools.tools.targets import Preview


def _call(name: str, args: dict[str, Any], call_id: str) -> Any:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def test_the_request_is_one_hitl_request_with_one_action_per_call() -> None:
    write = Verdict("ask", "the default mode", "/a.py", "write")
    run = Verdict("ask", "the default mode", "make", "execute")
    value = approval_request(
        [
            (_call("write_file", {"file_path": "/a.py"}, "c1"), write, Preview(diff="+x\n")),
            (_call("execute", {"command": "make"}, "c2"), run, None),
        ]
    )
    assert set(value) == set(HITLRequest.__annotations__)
    assert value["review_configs"] == [
        {"action_name": "write_file", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "execute", "allowed_decisions": ["approve", "edit", "reject"]},
    ]
    first, second = value["action_requests"]
    assert set(ActionRequest.__annotations__) <= set(first)
    assert set(first) == set(FileActionRequest.__annotations__) - {"error", "digest"}  # a file call
    assert first["description"] == (
        "write_file wants to change /a.py; the default mode asks for approval.\n\n```diff\n+x\n```"
    )
    assert second["summary"] == "execute wants to run `make`; the default mode asks for approval."
    assert "diff" not in second


def test_a_call_that_would_fail_shows_its_error_not_a_diff() -> None:
    verdict = Verdict("ask", "the default mode", "/a.py", "write")
    value = approval_request(
        [(_call("edit_file", {}, "c1"), verdict, Preview(error="Error: found 2 times."))]
    )
    (action,) = value["action_requests"]
    assert action.get("error") == "Error: found 2 times."
    assert "diff" not in action


@pytest.mark.parametrize(
    ("answer", "count"),
    [
        ({"type": "approve"}, 1),
        ({"decisions": [{"type": "reject", "message": "no"}]}, 1),
        ({"decisions": [{"type": "approve"}, {"type": "reject"}]}, 2),
    ],
)
def test_resume_values_in_both_shapes(answer: dict[str, Any], count: int) -> None:
    expected = answer.get("decisions", [answer])
    assert decisions(answer, count) == expected


@pytest.mark.parametrize(
    ("answer", "count"),
    [
        ("yes", 1),
        ({"type": "respond", "message": "x"}, 1),
        ({"decisions": []}, 1),
        ({"decisions": [{"type": "approve"}]}, 2),
        ({"type": "approve"}, 2),
    ],
)
def test_bad_resume_values_are_refused(answer: Any, count: int) -> None:
    with pytest.raises(ValueError, match="decision"):
        decisions(answer, count)


def test_the_guard_lets_approved_paths_through_but_never_denied_ones() -> None:
    policy = Policy([Permission(operations=["write"], paths=["/vendor"], action="deny")])
    guard = CallGuard(policy, frozenset({"/a.py", "/vendor/x.py", "/.env"}))
    assert guard.writable("/a.py")
    assert not guard.writable("/b.py")
    assert not guard.writable("/vendor/x.py")
    assert guard.readable("/.env")
    assert not CallGuard(policy).readable("/.env")
    assert CallGuard(policy).visible("/.env")


def _review(call_id: str) -> Review:
    approval = Approval(args={"file_path": f"/{call_id}"}, paths=[f"/{call_id}"], expect={})
    return Review(request={"tool_call_id": call_id}, config={}, approval=approval)


def test_reviews_merge_by_call_and_end_when_answered() -> None:
    first, second = _review("c1"), _review("c2")
    assert merge_reviews(None, {"c1": first}) == {"c1": first}
    assert merge_reviews({"c1": first}, {"c2": second}) == {"c1": first, "c2": second}
    assert merge_reviews({"c1": first, "c2": second}, {"c1": None}) == {"c2": second}
    # a full value handed back (update_state, a fork) merges the same way
    assert merge_reviews({"c1": first}, {"c1": first}) == {"c1": first}
    assert merge_reviews({}, {"gone": None}) == {}
