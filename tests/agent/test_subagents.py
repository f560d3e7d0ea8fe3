"""Subagents behind the `task` tool: inheritance, reviews surfacing on the parent, once-only."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.agent import (
    HITL,
    Agent,
    CompiledSubagent,
    HumanInTheLoop,
    Message,
    SubagentSpec,
    tool,
)
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import InvalidDecisionError
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import ai, call, result


class FileTools:
    """The guide's DeleteFile / ReadFile tools with execution counters."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.read: list[str] = []

        @tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            self.deleted.append(path)
            return f"deleted {path}"

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.read.append(path)
            return f"contents of {path}"

        self.delete_file = delete_file
        self.read_file = read_file


def delegate(call_id: str, task: str) -> Message:
    return ai(call(call_id, "task", description=task, subagent_type="file-manager"))


def guide_agent(
    files: FileTools, parent_model: ScriptedChatModel, checkpointer: MemoryCheckpointer, **spec: Any
) -> Agent:
    """The guide's Subagent Interrupts example."""
    return Agent.build(
        model=parent_model,
        tools=[files.delete_file, files.read_file],
        interrupt_on={"delete_file": True, "read_file": False},
        subagents=[
            SubagentSpec(
                name="file-manager",
                description="Manages file operations.",
                system_prompt="Review filesystem work carefully.",
                tools=[files.delete_file, files.read_file],
                **spec,
            )
        ],
        checkpointer=checkpointer,
    )


def test_subagent_review_surfaces_on_the_parent_and_the_tool_runs_once(
    checkpointer: MemoryCheckpointer,
) -> None:
    """Subagent Interrupts: same `Interrupted` shape on the parent, resumed with the parent's
    thread config; the subagent continues where it paused and deletes exactly once."""
    config = {"configurable": {"thread_id": "subagent-1"}}
    files = FileTools()
    parent_model = ScriptedChatModel(
        [delegate("p1", "Delete temp.txt"), Message.assistant("temp.txt is gone.")]
    )
    sub_model = ScriptedChatModel(
        [
            ai(
                call("s1", "read_file", path="temp.txt"), call("s2", "delete_file", path="temp.txt")
            ),
            Message.assistant("Deleted temp.txt after reading it."),
        ]
    )
    agent = guide_agent(
        files,
        parent_model,
        checkpointer,
        model=sub_model,
        interrupt_on={"delete_file": True, "read_file": True},
    )
    question = Message.user("Clean up temp.txt")

    paused = agent.invoke({"messages": [question]}, config=config)

    assert isinstance(paused, Interrupted)
    review = HITL.from_interrupt(paused.interrupt)
    assert [a.name for a in review.action_requests] == ["read_file", "delete_file"]
    assert agent.get_state(config).next == ("tools",)
    assert files.deleted == files.read == []

    done = agent.resume_review([{"type": "approve"}, {"type": "approve"}], config=config)

    assert isinstance(done, Completed)
    assert files.deleted == ["temp.txt"]
    assert files.read == ["temp.txt"]
    assert len(sub_model.calls) == 2
    assert sub_model.calls[0][0] == Message.system("Review filesystem work carefully.")
    assert done.state["messages"] == [
        question,
        delegate("p1", "Delete temp.txt"),
        result("p1", "task", "Deleted temp.txt after reading it."),
        Message.assistant("temp.txt is gone."),
    ]


def test_spec_without_interrupt_on_inherits_the_parent_policy_and_model(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    files = FileTools()
    model = ScriptedChatModel(
        [
            delegate("p1", "Read a, delete b"),
            ai(call("s1", "read_file", path="a"), call("s2", "delete_file", path="b")),
            Message.assistant("Read a; b was kept."),
            Message.assistant("Done."),
        ]
    )
    agent = guide_agent(files, model, checkpointer)

    paused = agent.invoke({"messages": [Message.user("go")]}, config=config)

    assert isinstance(paused, Interrupted)
    assert [a["name"] for a in paused.interrupt.value["action_requests"]] == ["delete_file"]
    assert files.read == []
    done = agent.resume_review([{"type": "reject", "message": "Keep b."}], config=config)
    assert isinstance(done, Completed)
    assert files.deleted == []
    assert files.read == ["a"]
    assert done.state["messages"][2] == result("p1", "task", "Read a; b was kept.")


def test_compiled_subagent_is_used_as_given(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """CompiledSubagent: no inheritance; only its own review policy applies."""
    files = FileTools()
    inner = Agent.build(
        model=ScriptedChatModel(
            [ai(call("s1", "delete_file", path="x")), Message.assistant("x deleted")]
        ),
        tools=[files.delete_file],
        name="file-manager",
    )
    agent = Agent.build(
        model=ScriptedChatModel([delegate("p1", "Delete x"), Message.assistant("ok")]),
        tools=[files.delete_file],
        interrupt_on={"delete_file": True},
        subagents=[CompiledSubagent("file-manager", "Manages files.", inner)],
        checkpointer=checkpointer,
    )

    done = agent.invoke({"messages": [Message.user("go")]}, config=config)

    assert isinstance(done, Completed)
    assert files.deleted == ["x"]


def test_invalid_answer_inside_a_subagent_consumes_nothing(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    files = FileTools()
    model = ScriptedChatModel(
        [
            delegate("p1", "Delete b"),
            ai(call("s1", "delete_file", path="b")),
            Message.assistant("b deleted"),
            Message.assistant("Done."),
        ]
    )
    agent = guide_agent(files, model, checkpointer)
    paused = agent.invoke({"messages": [Message.user("go")]}, config=config)
    assert isinstance(paused, Interrupted)

    with pytest.raises(InvalidDecisionError, match="Expected 1 decision"):
        agent.resume_review([{"type": "approve"}, {"type": "approve"}], config=config)
    assert agent.get_state(config).interrupts == paused.interrupts

    done = agent.resume_review([{"type": "approve"}], config=config)
    assert isinstance(done, Completed)
    assert files.deleted == ["b"]


def test_task_tool_schema_and_unknown_subagent() -> None:
    files = FileTools()
    agent = guide_agent(
        files,
        ScriptedChatModel(
            [
                ai(call("p1", "task", description="x", subagent_type="nobody")),
                Message.assistant("ok"),
            ]
        ),
        MemoryCheckpointer(),
    )
    task = next(t for t in agent._spec().tools if t.name == "task")
    assert task.args_schema["properties"]["subagent_type"]["enum"] == ["file-manager"]
    assert "- file-manager: Manages file operations." in task.description

    done = agent.invoke(
        {"messages": [Message.user("go")]}, config={"configurable": {"thread_id": "x"}}
    )

    assert isinstance(done, Completed)
    assert done.state["messages"][2].status == "error"
    assert "'nobody' is not one of ['file-manager']" in done.state["messages"][2].content


@pytest.mark.parametrize("declared", ["middleware", "two-middlewares"])
def test_spec_inherits_a_policy_given_through_the_middleware(
    declared: str, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Issue 12, point 3: the parent's review policy is inherited however it was declared,
    here as `HumanInTheLoop` middleware (one, or two with their own names and options). The
    subagent's `delete_file` pauses and is resumed with the parent's thread config."""
    files = FileTools()
    if declared == "middleware":
        middleware = [HumanInTheLoop({"delete_file": True})]
    else:
        middleware = [
            HumanInTheLoop({"read_file": False}, name="ReadReview"),
            HumanInTheLoop(
                {"delete_file": {"allowed_decisions": ["approve", "reject"]}},
                description_prefix="Deletion pending",
                name="DeleteReview",
            ),
        ]
    model = ScriptedChatModel(
        [
            delegate("p1", "Delete b"),
            ai(call("s1", "read_file", path="a"), call("s2", "delete_file", path="b")),
            Message.assistant("b deleted"),
            Message.assistant("Done."),
        ]
    )
    agent = Agent.build(
        model=model,
        tools=[files.read_file],
        middleware=middleware,
        subagents=[
            SubagentSpec(
                name="file-manager",
                description="Manages file operations.",
                system_prompt="Review filesystem work carefully.",
                tools=[files.delete_file, files.read_file],
            )
        ],
        checkpointer=checkpointer,
    )

    paused = agent.invoke({"messages": [Message.user("go")]}, config=config)

    assert isinstance(paused, Interrupted)
    review = HITL.from_interrupt(paused.interrupt)
    assert [(a.name, a.args) for a in review.action_requests] == [("delete_file", {"path": "b"})]
    if declared == "two-middlewares":
        assert review.action_requests[0].description.startswith("Deletion pending")
        assert review.review_configs[0].allowed_decisions == ("approve", "reject")
    assert files.deleted == files.read == []

    done = agent.resume_review([{"type": "approve"}], config=config)

    assert isinstance(done, Completed)
    assert files.deleted == ["b"]
    assert files.read == ["a"]
