"""Parallel subagents on branches: `FilesystemMiddleware(branches=True)` in deepagents.

One model turn launches two declarative subagents with two `task` calls; each subagent
has its own scripted model and this middleware. Each works on a branch of the files,
merged when its call returns: different changes to one file both land, the same line
changed differently comes back as a conflict with the base untouched.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

from langchain_fstools import FilesystemMiddleware, LocalBackend, Permission, StateBackend
from langchain_fstools.middleware import branches
from langchain_fstools.testing import ScriptedChatModel, parallel, tool_call

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_fstools.backends.protocol import Backend

deepagents = pytest.importorskip("deepagents")

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


# Each call id is unique, as a provider's are: parallel subagents share the middleware.
def subagent(name: str, files: FilesystemMiddleware, *turns: AIMessage | str) -> dict[str, Any]:
    model = ScriptedChatModel(turns=list(turns), disable_streaming=True)
    return {
        "name": name,
        "description": f"Subagent {name}.",
        "system_prompt": "You edit files.",
        "model": model,
        "middleware": [files],
    }


def editing(name: str, files: FilesystemMiddleware, old: str, new: str) -> dict[str, Any]:
    return subagent(
        name,
        files,
        tool_call("read_file", call_id=f"{name}-1", file_path="/m.py"),
        tool_call(
            "edit_file", call_id=f"{name}-2", file_path="/m.py", old_string=old, new_string=new
        ),
        f"{name} edited /m.py.",
    )


def launching(*names: str) -> list[AIMessage | str]:
    calls = [
        tool_call("task", call_id=f"t-{n}", description="Edit /m.py.", subagent_type=n)
        for n in names
    ]
    return [parallel(*calls), tool_call("read_file", call_id="p1", file_path="/m.py"), "done"]


def build(backend: Backend, *specs: Any, files: FilesystemMiddleware, store: Any = None) -> Any:
    names = [spec["name"] for spec in specs]
    model = ScriptedChatModel(turns=launching(*names), disable_streaming=True)
    return deepagents.create_deep_agent(
        model=model, middleware=[files], subagents=list(specs), store=store
    )


def results(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


@pytest.fixture(params=["state", "local"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "state":
        return StateBackend()
    (tmp_path / "m.py").write_text(SOURCE)
    return LocalBackend(tmp_path)


def start(backend: Backend) -> dict[str, Any]:
    initial: dict[str, Any] = {"messages": [{"role": "user", "content": "Edit /m.py."}]}
    if isinstance(backend, StateBackend):
        initial["files"] = StateBackend.seed({"/m.py": SOURCE})
    return initial


def final_text(backend: Backend, state: dict[str, Any]) -> str:
    if isinstance(backend, StateBackend):
        return str(state["files"]["/m.py"]["content"])
    return backend.read_bytes("/m.py").decode()


@pytest.mark.parametrize("run", ["sync", "async"])
def test_two_subagents_editing_different_functions_both_land(backend: Backend, run: str) -> None:
    files = FilesystemMiddleware(backend=backend, branches=True)
    agent = build(
        backend,
        editing("a", files, "return 1", "return 10"),
        editing("b", files, "return 2", "return 20"),
        files=files,
    )
    if run == "sync":
        state = agent.invoke(start(backend))
    else:
        state = asyncio.run(agent.ainvoke(start(backend)))
    found = results(state)
    for name in ("a", "b"):
        assert found[f"t-{name}"].status == "success", found[f"t-{name}"].content
        assert f"{name} edited /m.py." in found[f"t-{name}"].text
        assert "merged: /m.py" in found[f"t-{name}"].text
    expected = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")
    assert final_text(backend, state) == expected
    assert "return 10" in found["p1"].text
    assert "return 20" in found["p1"].text


def test_the_same_line_changed_differently_is_a_conflict_and_the_base_is_untouched(
    backend: Backend,
) -> None:
    files = FilesystemMiddleware(backend=backend, branches=True)
    agent = build(
        backend,
        editing("a", files, "return 1", "return 10"),
        editing("b", files, "return 1", "return 11"),
        files=files,
    )
    state = agent.invoke(start(backend))
    found = results(state)
    outcomes = sorted(found[f"t-{n}"].status for n in ("a", "b"))
    assert outcomes == ["error", "success"]  # the first to merge lands, the second conflicts
    loser = next(found[f"t-{n}"] for n in ("a", "b") if found[f"t-{n}"].status == "error")
    winner = "10" if loser.tool_call_id == "t-b" else "11"
    text = loser.text
    assert "not merged" in text
    assert "/m.py" in text
    assert "base:\n        return 1" in text
    assert f"now:\n        return {winner}" in text
    other = "11" if winner == "10" else "10"
    assert f"subagent:\n        return {other}" in text
    assert final_text(backend, state) == SOURCE.replace("return 1", f"return {winner}")


def test_a_deletion_against_a_rewrite_is_a_conflict(backend: Backend) -> None:
    files = FilesystemMiddleware(backend=backend, branches=True)
    deleting = subagent(
        "a",
        files,
        tool_call(
            "apply_patch",
            call_id="a-1",
            patch="*** Begin Patch\n*** Delete File: /m.py\n*** End Patch",
        ),
        "a deleted /m.py.",
    )
    rewriting = subagent(
        "b",
        files,
        tool_call("read_file", call_id="b-1", file_path="/m.py"),
        tool_call("write_file", call_id="b-2", file_path="/m.py", content="x = 1\n"),
        "b rewrote /m.py.",
    )
    state = build(backend, deleting, rewriting, files=files).invoke(start(backend))
    found = results(state)
    assert sorted(found[f"t-{n}"].status for n in ("a", "b")) == ["error", "success"], found
    loser = next(found[f"t-{n}"] for n in ("a", "b") if found[f"t-{n}"].status == "error")
    assert "/m.py" in loser.text
    assert "not merged" in loser.text


def test_without_branches_a_subagent_writes_the_files_directly(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    (tmp_path / "m.py").write_text(SOURCE)
    files = FilesystemMiddleware(backend=backend)
    state = build(backend, editing("a", files, "return 1", "return 10"), files=files).invoke(
        start(backend)
    )
    assert "merged" not in results(state)["t-a"].text
    assert (tmp_path / "m.py").read_text() == SOURCE.replace("return 1", "return 10")


def test_branches_must_name_tools() -> None:
    with pytest.raises(ValueError, match="branches"):
        FilesystemMiddleware(backend=StateBackend(), branches=[""])


# ----- permissions and history: they apply once, to the merge --------------------------


def one_editor(backend: Backend, **options: Any) -> tuple[Any, FilesystemMiddleware]:
    files = FilesystemMiddleware(backend=backend, branches=True, **options)
    agent = deepagents.create_deep_agent(
        model=ScriptedChatModel(turns=launching("a"), disable_streaming=True),
        middleware=[files],
        subagents=[editing("a", files, "return 1", "return 10")],
        checkpointer=InMemorySaver(),
    )
    return agent, files


CONFIG: dict[str, Any] = {"configurable": {"thread_id": "branches"}}


def test_accept_edits_merges_without_asking(backend: Backend) -> None:
    agent, _ = one_editor(backend, mode="accept_edits")
    state = agent.invoke(start(backend), CONFIG)
    assert "__interrupt__" not in state
    assert final_text(backend, state) == SOURCE.replace("return 1", "return 10")


@pytest.mark.parametrize("answer", ["approve", "reject"])
def test_the_default_mode_asks_once_about_the_merge(backend: Backend, answer: str) -> None:
    agent, _ = one_editor(backend, mode="default")
    asked = agent.invoke(start(backend), CONFIG)
    (request,) = asked["__interrupt__"][0].value["action_requests"]
    assert request["name"] == "merge"
    assert request["tool_call_id"] == "t-a"
    assert "-    return 1\n+    return 10" in request["diff"]
    assert final_text(backend, asked) == SOURCE  # nothing merged before the answer
    # the subagent does not run again on resume (its script would be used up)
    state = agent.invoke(Command(resume={"type": answer, "message": "no"}), CONFIG)
    message = results(state)["t-a"]
    assert message.status == ("success" if answer == "approve" else "error")  # HITL's reject
    if answer == "approve":
        assert final_text(backend, state) == SOURCE.replace("return 1", "return 10")
    else:
        assert "A person rejected these changes with reason: no; nothing was merged." in (
            message.text
        )
        assert final_text(backend, state) == SOURCE
    assert state["kept_branches"] == {}


def test_an_answer_in_another_worker_merges_what_was_shown(backend: Backend) -> None:
    # the merge waits in the thread's state: a worker that never ran the subagent (a
    # restart) applies exactly the changes the person saw, and runs no subagent again
    saver = InMemorySaver()

    def worker_(new: str, *parent: AIMessage | str) -> Any:
        files = FilesystemMiddleware(backend=backend, branches=True, mode="default")
        return deepagents.create_deep_agent(
            model=ScriptedChatModel(turns=list(parent), disable_streaming=True),
            middleware=[files],
            subagents=[editing("a", files, "return 1", new)],
            checkpointer=saver,
        )

    first = worker_("return 10", *launching("a"))
    asked = first.invoke(start(backend), CONFIG)
    assert "+    return 10" in asked["__interrupt__"][0].value["action_requests"][0]["diff"]
    assert set(asked["kept_branches"]) == {"t-a"}
    later = worker_("return 99", tool_call("read_file", call_id="p1", file_path="/m.py"), "done")
    state = later.invoke(Command(resume={"type": "approve"}), CONFIG)
    message = results(state)["t-a"]
    assert message.status == "success"
    assert "A person approved these changes; they were merged: /m.py." in message.text
    assert final_text(backend, state) == SOURCE.replace("return 1", "return 10")
    assert state["kept_branches"] == {}


@tool
def ask_person(question: str) -> str:
    """Ask a person (an interrupt inside a subagent)."""
    return str(interrupt(question))


@pytest.mark.parametrize("resumed_by", ["the same worker", "another worker"])
def test_a_subagent_stopped_by_an_interrupt_keeps_what_it_wrote_before(
    backend: Backend, resumed_by: str
) -> None:
    # the resumed subagent goes on from its checkpoint: its first edit is not made again
    saver = InMemorySaver()

    script = [
        tool_call("read_file", call_id="a-1", file_path="/m.py"),
        tool_call("edit_file", call_id="a-2", file_path="/m.py", old_string="1", new_string="10"),
        tool_call("ask_person", call_id="a-3", question="Go on?"),
        tool_call("edit_file", call_id="a-4", file_path="/m.py", old_string="2", new_string="20"),
        "a edited /m.py.",
    ]

    def worker_(parent: list[AIMessage | str], steps: list[AIMessage | str]) -> Any:
        files = FilesystemMiddleware(backend=backend, branches=True, mode="accept_edits")
        return deepagents.create_deep_agent(
            model=ScriptedChatModel(turns=parent, disable_streaming=True),
            middleware=[files],
            subagents=[{**subagent("a", files, *steps), "tools": [ask_person]}],
            checkpointer=saver,
        )

    first = worker_(launching("a"), script)
    asked = first.invoke(start(backend), CONFIG)
    assert asked["__interrupt__"][0].value == "Go on?"
    assert final_text(backend, asked) == SOURCE  # in the branch only
    # a new worker's models go on from where the thread is (as a provider's do)
    later = first if resumed_by == "the same worker" else worker_(launching("a")[1:], script[3:])
    state = later.invoke(Command(resume="yes"), CONFIG)
    assert "They were merged: /m.py." in results(state)["t-a"].text
    assert final_text(backend, state) == SOURCE.replace("1", "10").replace("2", "20")


@pytest.mark.parametrize("end", ["merged", "dropped"])
def test_a_saved_branch_is_deleted_once_its_call_merges_or_drops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    saved = tmp_path / f"fstools-suspended-{os.getuid()}"
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "m.py").write_text(SOURCE)
    backend = LocalBackend(tmp_path / "w")
    saver = InMemorySaver()
    script = [
        tool_call("read_file", call_id="a-1", file_path="/m.py"),
        tool_call("edit_file", call_id="a-2", file_path="/m.py", old_string="1", new_string="10"),
        tool_call("ask_person", call_id="a-3", question="Go on?"),
        "a edited /m.py.",
    ]

    def worker_(parent: list[AIMessage | str], steps: list[AIMessage | str]) -> Any:
        files = FilesystemMiddleware(backend=backend, branches=True, mode="accept_edits")
        return deepagents.create_deep_agent(
            model=ScriptedChatModel(turns=parent, disable_streaming=True),
            middleware=[files],
            subagents=[{**subagent("a", files, *steps), "tools": [ask_person]}],
            checkpointer=saver,
        )

    worker_(launching("a"), script).invoke(start(backend), CONFIG)
    assert len(list(saved.iterdir())) == 1  # the stopped call's branch, on this machine
    if end == "merged":
        state = worker_(launching("a")[1:], script[3:]).invoke(Command(resume="yes"), CONFIG)
        assert "They were merged: /m.py." in results(state)["t-a"].text
        assert (tmp_path / "w" / "m.py").read_text() == SOURCE.replace("1", "10")
        assert not state.get("kept_branches")
    else:  # the resumed subagent fails (its script is played out): the call raises
        with pytest.raises(RuntimeError, match="played all"):
            worker_(launching("a")[1:], []).invoke(Command(resume="yes"), CONFIG)
    assert list(saved.iterdir()) == []


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_resumed_subagent_merges_onto_what_its_turn_merged_before_the_interrupt(
    backend: Backend, run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # b merged before a's interrupt; the resumed a must neither wait for b (which does
    # not run again) nor merge over the files as they were before b's merge
    monkeypatch.setattr(branches, "JOIN_WAIT", 600.0)
    files = FilesystemMiddleware(backend=backend, branches=True, mode="accept_edits")
    script = [
        tool_call("read_file", call_id="a-1", file_path="/m.py"),
        tool_call(
            "edit_file",
            call_id="a-2",
            file_path="/m.py",
            old_string="return 1",
            new_string="return 10",
        ),
        tool_call("ask_person", call_id="a-3", question="Go on?"),
        "a edited /m.py.",
    ]
    agent = deepagents.create_deep_agent(
        model=ScriptedChatModel(turns=launching("a", "b"), disable_streaming=True),
        middleware=[files],
        subagents=[
            {**subagent("a", files, *script), "tools": [ask_person]},
            editing("b", files, "return 2", "return 20"),
        ],
        checkpointer=InMemorySaver(),
    )

    def invoke(given: Any) -> Any:
        if run == "sync":
            return agent.invoke(given, CONFIG)
        return asyncio.run(agent.ainvoke(given, CONFIG))

    assert "__interrupt__" in invoke(start(backend))
    resumed: list[Any] = []
    thread = threading.Thread(
        target=lambda: resumed.append(invoke(Command(resume="yes"))), daemon=True
    )
    thread.start()
    thread.join(60)  # it waited for b to join otherwise: JOIN_WAIT
    assert resumed, "the resumed call waited for a call that does not run again"
    (state,) = resumed
    found = results(state)
    assert "They were merged: /m.py." in found["t-a"].text
    assert found["t-a"].status == "success"
    both = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")
    assert final_text(backend, state) == both
    assert state["kept_branches"] == {}


def test_a_denied_path_is_refused_inside_the_branch(backend: Backend) -> None:
    rule = Permission(operations=["write"], paths=["/m.py"], action="deny")
    agent, _ = one_editor(backend, mode="accept_edits", permissions=[rule])
    state = agent.invoke(start(backend), CONFIG)
    assert "merged" not in results(state)["t-a"].text
    assert final_text(backend, state) == SOURCE


def test_history_records_the_merge_as_one_change_the_parent_rewinds(backend: Backend) -> None:
    agent, files = one_editor(backend, history=True)
    state = agent.invoke(start(backend), CONFIG)
    assert [r["tool_call_id"] for r in state["file_history"]] == ["t-a"]
    assert files.rewind(agent, CONFIG, to="t-a") == ["/m.py"]
    restored = agent.get_state(CONFIG).values
    assert final_text(backend, restored) == SOURCE


def test_parallel_merges_asked_together_both_land_and_each_rewinds(backend: Backend) -> None:
    files = FilesystemMiddleware(backend=backend, branches=True, mode="default", history=True)
    agent = deepagents.create_deep_agent(
        model=ScriptedChatModel(turns=launching("a", "b"), disable_streaming=True),
        middleware=[files],
        subagents=[
            editing("a", files, "return 1", "return 10"),
            editing("b", files, "return 2", "return 20"),
        ],
        checkpointer=InMemorySaver(),
    )
    asked = agent.invoke(start(backend), CONFIG)
    requests = asked["__interrupt__"][0].value["action_requests"]
    assert [(r["name"], r["tool_call_id"]) for r in requests] == [
        ("merge", "t-a"),
        ("merge", "t-b"),
    ]
    state = agent.invoke(Command(resume={"decisions": [{"type": "approve"}] * 2}), CONFIG)
    both = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")
    assert final_text(backend, state) == both
    assert [r["tool_call_id"] for r in state["file_history"]] == ["t-a", "t-b"]
    assert files.rewind(agent, CONFIG, to="t-b") == ["/m.py"]
    assert final_text(backend, agent.get_state(CONFIG).values) == SOURCE.replace(
        "return 1", "return 10"
    )


def test_a_subagent_with_its_own_middleware_over_the_backend_works_on_the_branch(
    backend: Backend,
) -> None:
    parent = FilesystemMiddleware(backend=backend, branches=True)
    own = FilesystemMiddleware(backend=backend)  # another instance, the same files
    agent = build(
        backend,
        editing("a", own, "return 1", "return 10"),
        editing("b", own, "return 2", "return 20"),
        files=parent,
    )
    found = results(agent.invoke(start(backend)))
    assert all("merged: /m.py" in found[f"t-{n}"].text for n in ("a", "b")), found


# ----- a conflict kept: merge again, taking a side ------------------------------------


@pytest.mark.parametrize("side", ["subagent", "now"])
def test_a_conflicted_branch_is_kept_and_merged_with_a_side(backend: Backend, side: str) -> None:
    files = FilesystemMiddleware(backend=backend, branches=True)
    model = ScriptedChatModel(
        turns=[
            parallel(
                tool_call("task", call_id="t-a", description="Edit.", subagent_type="a"),
                tool_call("task", call_id="t-b", description="Edit.", subagent_type="b"),
            ),
            tool_call("merge", call_id="m1", branch="t-b", sides={"/m.py": side}),
            tool_call("merge", call_id="m2", branch="t-b"),
            "done",
        ],
        disable_streaming=True,
    )
    agent = deepagents.create_deep_agent(
        model=model,
        middleware=[files],
        subagents=[
            editing("a", files, "return 1", "return 10"),
            editing("b", files, "return 1", "return 11"),
        ],
    )
    assert "merge" in {t.name for t in files.tools}
    state = agent.invoke(start(backend))
    found = results(state)
    assert found["t-b"].status == "error"
    assert found["t-b"].artifact == {"branch": "t-b", "conflicts": ["/m.py"]}
    assert 'merge(branch="t-b")' in found["t-b"].text
    assert found["m1"].status == "success", found["m1"].text
    assert "Merged branch t-b" in found["m1"].text
    winner = "11" if side == "subagent" else "10"
    assert final_text(backend, state) == SOURCE.replace("return 1", f"return {winner}")
    assert found["m2"].status == "error"  # merged: no longer kept
    assert "no branch t-b is kept" in found["m2"].text


def worker(backend: Backend, saver: InMemorySaver, *turns: AIMessage | str) -> Any:
    """An agent as another worker process would build it: a middleware of its own."""
    files = FilesystemMiddleware(backend=backend, branches=True)
    return deepagents.create_deep_agent(
        model=ScriptedChatModel(turns=list(turns), disable_streaming=True),
        middleware=[files],
        subagents=[
            editing("a", files, "return 1", "return 10"),
            editing("b", files, "return 1", "return 11"),
        ],
        checkpointer=saver,
    )


def conflicted(backend: Backend, saver: InMemorySaver, config: Any) -> None:
    """Run the two subagents that conflict on /m.py in the thread of `config`."""
    launch = parallel(
        tool_call("task", call_id="t-a", description="Edit.", subagent_type="a"),
        tool_call("task", call_id="t-b", description="Edit.", subagent_type="b"),
    )
    state = worker(backend, saver, launch, "conflict").invoke(start(backend), config)
    assert results(state)["t-b"].status == "error"
    assert set(state["kept_branches"]) == {"t-b"}


def test_a_kept_branch_is_merged_by_another_worker_from_the_checkpoint(backend: Backend) -> None:
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "kept"}}
    conflicted(backend, saver, config)
    merging = tool_call("merge", call_id="m1", branch="t-b", sides={"/m.py": "subagent"})
    later = worker(backend, saver, merging, "done")  # nothing of the first worker's memory
    state = later.invoke({"messages": [{"role": "user", "content": "Merge it."}]}, config)
    assert results(state)["m1"].status == "success", results(state)["m1"].text
    assert final_text(backend, state) == SOURCE.replace("return 1", "return 11")
    assert state["kept_branches"] == {}


def test_each_fork_of_the_thread_keeps_the_branch() -> None:
    backend = StateBackend()
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "forked"}}
    conflicted(backend, saver, config)
    fork: Any = {"configurable": {**config["configurable"]}}
    fork["configurable"]["checkpoint_id"] = saver.get_tuple(config).config["configurable"][
        "checkpoint_id"
    ]
    for side, winner in (("subagent", "11"), ("now", "10")):
        merging = tool_call("merge", call_id=f"m-{side}", branch="t-b", sides={"/m.py": side})
        state = worker(backend, saver, merging, "done").invoke(
            {"messages": [{"role": "user", "content": "Merge it."}]}, fork
        )
        assert results(state)[f"m-{side}"].status == "success"
        assert final_text(backend, state) == SOURCE.replace("return 1", f"return {winner}")


@pytest.mark.parametrize("run", ["sync", "async"])
def test_parallel_subagents_whose_models_reuse_call_ids_keep_their_reads_apart(
    backend: Backend, run: str
) -> None:
    files = FilesystemMiddleware(backend=backend, branches=True)

    def numbered(name: str, old: str, new: str) -> dict[str, Any]:
        # no call ids given: each scripted model numbers its calls call_1, call_2, ...
        return subagent(
            name,
            files,
            tool_call("read_file", file_path="/m.py"),
            tool_call("edit_file", file_path="/m.py", old_string=old, new_string=new),
            f"{name} edited /m.py.",
        )

    agent = build(
        backend,
        numbered("a", "return 1", "return 10"),
        numbered("b", "return 2", "return 20"),
        files=files,
    )
    state = (
        agent.invoke(start(backend))
        if run == "sync"
        else asyncio.run(agent.ainvoke(start(backend)))
    )
    expected = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")
    assert final_text(backend, state) == expected
