"""Every agent example of the BeamWeaver HITL guide (shared/seed), in Python."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.agent import (
    HITL,
    ActionRequest,
    Agent,
    HumanInTheLoop,
    Message,
    ReviewConfig,
    ReviewRequest,
    tool,
)
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import InvalidDecisionError, NotAReviewError
from beamweaver_core.graph import END, START, Command, Completed, Graph, Interrupted, interrupt
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call, rejected, responded, result

ALL_DECISIONS = ["approve", "edit", "reject", "respond"]
PATH_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
SQL_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}
DELETE_OLD = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days';"
DELETE_ARCHIVED = (
    "DELETE FROM records WHERE status = 'archived' AND created_at < NOW() - INTERVAL '30 days';"
)


def basic_agent(box: Toolbox, model: ScriptedChatModel, checkpointer: MemoryCheckpointer) -> Agent:
    return Agent.build(
        model=model,
        tools=[box.remove_file, box.fetch_file, box.notify_email],
        interrupt_on={
            "remove_file": True,
            "fetch_file": False,
            "notify_email": {"allowed_decisions": ["approve", "reject"]},
        },
        checkpointer=checkpointer,
    )


def test_basic_agent_configuration(checkpointer: MemoryCheckpointer) -> None:
    """Basic Agent Configuration: matching calls pause before any tool runs; approve runs the
    call, reject becomes an error tool message, and the unreviewed call runs too."""
    config = {"configurable": {"thread_id": "hitl-review-1"}}
    box = Toolbox()
    proposal = ai(
        call("c1", "remove_file", path="temp.txt"),
        call("c2", "fetch_file", path="notes.txt"),
        call("c3", "notify_email", to="admin@example.com"),
    )
    model = ScriptedChatModel(
        [proposal, Message.assistant("Deleted temp.txt; the email was not sent.")]
    )
    agent = basic_agent(box, model, checkpointer)
    question = Message.user("Delete temp.txt and email the admin.")

    paused = agent.invoke({"messages": [question]}, config=config)

    assert isinstance(paused, Interrupted)
    assert box.ran == []
    assert paused.interrupt.value == {
        "action_requests": [
            {
                "name": "remove_file",
                "args": {"path": "temp.txt"},
                "description": 'Tool execution pending approval\n\nTool: remove_file\nArgs: {"path": "temp.txt"}',
            },
            {
                "name": "notify_email",
                "args": {"to": "admin@example.com"},
                "description": 'Tool execution pending approval\n\nTool: notify_email\nArgs: {"to": "admin@example.com"}',
            },
        ],
        "review_configs": [
            {
                "action_name": "remove_file",
                "allowed_decisions": ALL_DECISIONS,
                "args_schema": PATH_SCHEMA,
            },
            {
                "action_name": "notify_email",
                "allowed_decisions": ["approve", "reject"],
                "args_schema": {
                    "type": "object",
                    "properties": {
                        "to": {"type": "string"},
                        "subject": {"type": "string", "default": "Update"},
                    },
                    "required": ["to"],
                    "additionalProperties": False,
                },
            },
        ],
    }

    done = agent.resume({"decisions": [{"type": "approve"}, {"type": "reject"}]}, config=config)

    assert isinstance(done, Completed)
    assert done.state["messages"] == [
        question,
        proposal,
        rejected(
            "c3",
            "notify_email",
            "The human reviewer rejected the tool call `notify_email` (id c3); the tool was not "
            "executed.\nDo not retry this tool call unless the user explicitly asks for it.",
        ),
        result("c1", "remove_file", "deleted temp.txt"),
        result("c2", "fetch_file", "contents of notes.txt"),
        Message.assistant("Deleted temp.txt; the email was not sent."),
    ]
    assert sorted(box.names()) == ["fetch_file", "remove_file"]


def test_module_defined_agent_uses_interrupt_on(checkpointer: MemoryCheckpointer) -> None:
    """Module-defined agents: class attributes, and the class itself invokes and resumes."""
    box = Toolbox()

    class ReviewedAgent(Agent):
        model = ScriptedChatModel(
            [ai(call("c1", "remove_file", path="old.log")), Message.assistant("Removed.")]
        )
        tools = [box.remove_file, box.fetch_file, box.notify_email]
        interrupt_on = {
            "remove_file": True,
            "fetch_file": False,
            "notify_email": {"allowed_decisions": ["approve", "reject"]},
        }

    config = {"configurable": {"thread_id": "module-1"}}
    paused = ReviewedAgent.invoke(
        {"messages": [Message.user("Remove old.log")]}, checkpointer=checkpointer, config=config
    )
    assert isinstance(paused, Interrupted)
    assert [a["name"] for a in paused.interrupt.value["action_requests"]] == ["remove_file"]

    done = ReviewedAgent.resume(
        {"decisions": [{"type": "approve"}]}, checkpointer=checkpointer, config=config
    )

    assert isinstance(done, Completed)
    assert done.state["messages"][-2:] == [
        result("c1", "remove_file", "deleted old.log"),
        Message.assistant("Removed."),
    ]
    assert ReviewedAgent.get_state(config, checkpointer=checkpointer).values == done.state


def test_decision_types_true_allows_all_four_and_false_skips_review(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Decision Types: `True` enables approve, edit, reject and respond; `False` never pauses."""
    box = Toolbox()
    model = ScriptedChatModel(
        [
            ai(call("c1", "fetch_file", path="a.txt")),
            ai(call("c2", "remove_file", path="a.txt")),
            Message.assistant("ok"),
        ]
    )
    agent = basic_agent(box, model, checkpointer)

    paused = agent.invoke({"messages": [Message.user("Read then delete a.txt")]}, config=config)

    assert box.names() == ["fetch_file"]
    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value["review_configs"][0]["allowed_decisions"] == ALL_DECISIONS


def test_advanced_middleware_configuration(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Advanced Middleware Configuration: an explicit HumanInTheLoop with its own prefix and
    `tools` whose schemas validate edits; it is a node of its own after the model."""
    box = Toolbox()

    class ReviewedAgent(Agent):
        model = ScriptedChatModel(
            [
                ai(
                    call("c1", "write_file", path="report.md", content="# Report"),
                    call("c2", "execute_sql", query="SELECT 1"),
                    call("c3", "read_data", table="orders"),
                ),
                Message.assistant("All done."),
            ]
        )
        tools = [box.write_file, box.execute_sql, box.read_data]
        middleware = [
            HumanInTheLoop(
                interrupt_on={
                    "write_file": True,
                    "execute_sql": {"allowed_decisions": ["approve", "reject"]},
                    "read_data": False,
                },
                description_prefix="Tool execution pending approval",
                tools=[box.write_file, box.execute_sql, box.read_data],
            )
        ]

    paused = ReviewedAgent.invoke(
        {"messages": [Message.user("Report")]}, checkpointer=checkpointer, config=config
    )

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.node == "HumanInTheLoop.after_model"
    assert ReviewedAgent.get_state(config, checkpointer=checkpointer).next == (
        "HumanInTheLoop.after_model",
    )
    assert paused.interrupt.value["review_configs"] == [
        {
            "action_name": "write_file",
            "allowed_decisions": ALL_DECISIONS,
            "args_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
        {
            "action_name": "execute_sql",
            "allowed_decisions": ["approve", "reject"],
            "args_schema": SQL_SCHEMA,
        },
    ]
    done = ReviewedAgent.resume_review(
        [{"type": "approve"}, {"type": "approve"}], checkpointer=checkpointer, config=config
    )
    assert isinstance(done, Completed)
    assert sorted(box.names()) == ["execute_sql", "read_data", "write_file"]


def test_description_callable_with_runtime_context(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Advanced Middleware Configuration: arity-3 descriptions receive the runtime, whose
    `context` is what the caller passed to invoke; arity-2 ones receive the state."""
    box = Toolbox()

    def describe_sql(call: dict[str, Any], _state: Any, runtime: Any) -> str:
        context = runtime.context or {}
        user = context.get("user_id", "unknown")
        return f"SQL requested by {user}: {call['args']}"

    def describe_write(call: dict[str, Any], state: Any) -> str:
        return f"Write {call['args']['path']} ({len(state['messages'])} messages so far)"

    agent = Agent.build(
        model=ScriptedChatModel(
            [
                ai(
                    call("c1", "execute_sql", query="SELECT 1"),
                    call("c2", "write_file", path="x", content="y"),
                )
            ]
        ),
        tools=[box.execute_sql, box.write_file],
        middleware=[
            HumanInTheLoop(
                interrupt_on={
                    "execute_sql": {
                        "allowed_decisions": ["approve", "reject"],
                        "description": describe_sql,
                    },
                    "write_file": {"description": describe_write},
                }
            )
        ],
        checkpointer=checkpointer,
    )

    paused = agent.invoke(
        {"messages": [Message.user("go")]}, config=config, context={"user_id": "alice"}
    )

    assert isinstance(paused, Interrupted)
    descriptions = [a["description"] for a in paused.interrupt.value["action_requests"]]
    assert descriptions == [
        "SQL requested by alice: {'query': 'SELECT 1'}",
        "Write x (2 messages so far)",
    ]
    # Without `tools`, the explicit middleware knows no schema: none is announced.
    assert [set(c) for c in paused.interrupt.value["review_configs"]] == [
        {"action_name", "allowed_decisions"}
    ] * 2


class SqlAgent(Agent):
    """The guide's reviewed SQL agent, used by the "Respond To Interrupts" examples."""

    interrupt_on = {"execute_sql": {"allowed_decisions": ["approve", "edit", "reject"]}}


def sql_agent(box: Toolbox, *replies: Message) -> type[Agent]:
    class ReviewedAgent(SqlAgent):
        model = ScriptedChatModel([ai(call("sql1", "execute_sql", query=DELETE_OLD)), *replies])
        tools = [box.execute_sql]

    return ReviewedAgent


def test_respond_to_interrupts_with_from_interrupt(checkpointer: MemoryCheckpointer) -> None:
    """Respond To Interrupts: HITL.from_interrupt turns the payload into typed review structs."""
    config = {"configurable": {"thread_id": "review-thread-1"}}
    box = Toolbox()
    reviewed = sql_agent(box, Message.assistant("Old records deleted."))

    paused = reviewed.invoke(
        {"messages": [Message.user("Delete old records from the database.")]},
        checkpointer=checkpointer,
        config=config,
    )

    assert isinstance(paused, Interrupted)
    review = HITL.from_interrupt(paused.interrupt)
    assert review == ReviewRequest(
        action_requests=(
            ActionRequest(
                name="execute_sql",
                args={"query": DELETE_OLD},
                description=f'Tool execution pending approval\n\nTool: execute_sql\nArgs: {{"query": "{DELETE_OLD}"}}',
            ),
        ),
        review_configs=(ReviewConfig("execute_sql", ("approve", "edit", "reject"), SQL_SCHEMA),),
        interrupt_id=paused.interrupt.id,
    )
    assert review.to_value() == paused.interrupt.value

    done = reviewed.resume(
        {"decisions": [{"type": "approve"}]}, checkpointer=checkpointer, config=config
    )

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": DELETE_OLD})]


def test_resume_decision_edit_runs_the_edited_call_in_place_of_the_proposed_one(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Resume Decisions / Edit: the reviewer's call replaces the proposed one in the history
    (the model sees the call that ran and its plain result); the proposed call is kept in
    the message's metadata."""
    box = Toolbox()
    reviewed = sql_agent(box, Message.assistant("Archived records older than 30 days are deleted."))
    question = Message.user("Delete old records from the database.")
    reviewed.invoke({"messages": [question]}, checkpointer=checkpointer, config=config)

    done = reviewed.resume(
        {
            "decisions": [
                {
                    "type": "edit",
                    "edited_action": {"name": "execute_sql", "args": {"query": DELETE_ARCHIVED}},
                }
            ]
        },
        checkpointer=checkpointer,
        config=config,
    )

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": DELETE_ARCHIVED})]
    edited = Message(
        role="assistant",
        tool_calls=(call("sql1", "execute_sql", query=DELETE_ARCHIVED),),
        metadata={
            "original_tool_calls": [
                {"id": "sql1", "name": "execute_sql", "args": {"query": DELETE_OLD}}
            ]
        },
    )
    assert done.state["messages"] == [
        question,
        edited,
        result("sql1", "execute_sql", f"ran: {DELETE_ARCHIVED}"),
        Message.assistant("Archived records older than 30 days are deleted."),
    ]


def test_resume_decision_reject_with_message(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Resume Decisions / Reject: feedback reaches the model as a tool error; nothing runs."""
    box = Toolbox()
    reviewed = sql_agent(box, Message.assistant("I will ask for a date range first."))
    question = Message.user("Delete old records from the database.")
    reviewed.invoke({"messages": [question]}, checkpointer=checkpointer, config=config)
    reason = "Do not delete records. Ask for a date range and dry-run count first."

    done = reviewed.resume(
        {"decisions": [{"type": "reject", "message": reason}]},
        checkpointer=checkpointer,
        config=config,
    )

    assert isinstance(done, Completed)
    assert box.ran == []
    assert done.state["messages"] == [
        question,
        ai(call("sql1", "execute_sql", query=DELETE_OLD)),
        rejected("sql1", "execute_sql", reason),
        Message.assistant("I will ask for a date range first."),
    ]


def test_resume_decision_respond_answers_in_place_of_the_tool(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Resume Decisions / Respond: the human's reply is the tool's successful result."""
    box = Toolbox()
    question = Message.user("What is Ada's favorite color?")
    agent = Agent.build(
        model=ScriptedChatModel(
            [ai(call("q1", "favorite_color", person="Ada")), Message.assistant("Ada likes blue.")]
        ),
        tools=[box.favorite_color],
        interrupt_on={"favorite_color": True},
        checkpointer=checkpointer,
    )
    agent.invoke({"messages": [question]}, config=config)

    done = agent.resume_review([HITL.decision("respond", message="Blue.")], config=config)

    assert isinstance(done, Completed)
    assert box.ran == []
    assert done.state["messages"] == [
        question,
        ai(call("q1", "favorite_color", person="Ada")),
        responded("q1", "favorite_color", "Blue."),
        Message.assistant("Ada likes blue."),
    ]


def test_multiple_decisions_one_per_action_in_order(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Multiple Decisions: approve, edit and reject in the order of the action requests."""
    box = Toolbox()
    proposal = ai(
        call("a1", "fetch_file", path="q3.csv"),
        call("a2", "send_email", to="team@example.com", subject="Draft"),
        call("a3", "remove_file", path="q3.csv"),
    )
    agent = Agent.build(
        model=ScriptedChatModel([proposal, Message.assistant("Done.")]),
        tools=[box.fetch_file, box.send_email, box.remove_file],
        interrupt_on={"fetch_file": True, "send_email": True, "remove_file": True},
        checkpointer=checkpointer,
    )
    question = Message.user("Send the Q3 numbers for review, then clean up.")
    paused = agent.invoke({"messages": [question]}, config=config)
    assert isinstance(paused, Interrupted)
    assert [a["name"] for a in paused.interrupt.value["action_requests"]] == [
        "fetch_file",
        "send_email",
        "remove_file",
    ]

    done = agent.resume(
        {
            "decisions": [
                {"type": "approve"},
                {
                    "type": "edit",
                    "edited_action": {
                        "name": "send_email",
                        "args": {"to": "team@example.com", "subject": "Review needed"},
                    },
                },
                {"type": "reject", "message": "This action is not allowed for the current user."},
            ]
        },
        config=config,
    )

    assert isinstance(done, Completed)
    sent = call("a2", "send_email", to="team@example.com", subject="Review needed")
    assert done.state["messages"] == [
        question,
        Message(
            role="assistant",
            tool_calls=(proposal.tool_calls[0], sent, proposal.tool_calls[2]),
            metadata={"original_tool_calls": [proposal.tool_calls[1].to_dict()]},
        ),
        rejected("a3", "remove_file", "This action is not allowed for the current user."),
        result("a1", "fetch_file", "contents of q3.csv"),
        result("a2", "send_email", "sent to team@example.com: Review needed"),
        Message.assistant("Done."),
    ]
    assert sorted(box.ran) == [
        ("fetch_file", {"path": "q3.csv"}),
        ("send_email", {"to": "team@example.com", "subject": "Review needed", "body": ""}),
    ]


def test_execution_lifecycle(checkpointer: MemoryCheckpointer, config: dict[str, Any]) -> None:
    """Execution Lifecycle: model -> HumanInTheLoop.after_model (pause, saved) -> decision ->
    tools -> model; the tool runs only after the decision."""
    box = Toolbox()
    agent = basic_agent(
        box,
        ScriptedChatModel(
            [ai(call("c1", "remove_file", path="t.txt")), Message.assistant("Gone.")]
        ),
        checkpointer,
    )

    paused = agent.stream_events({"messages": [Message.user("rm t.txt")]}, config=config)

    assert [(e.event, e.node) for e in paused.events if e.event.startswith("node.")] == [
        ("node.started", "model"),
        ("node.finished", "model"),
        ("node.started", "HumanInTheLoop.after_model"),
        ("node.finished", "HumanInTheLoop.after_model"),
    ]
    assert paused.events[-2].data["status"] == "interrupted"
    assert box.ran == []
    assert agent.get_state(config).interrupts == paused.interrupts

    done = agent.stream_events(Command(resume={"decisions": [{"type": "approve"}]}), config=config)

    assert [e.node for e in done.events if e.event == "node.started"] == [
        "HumanInTheLoop.after_model",
        "tools",
        "model",
        "HumanInTheLoop.after_model",
    ]
    assert box.ran == [("remove_file", {"path": "t.txt"})]


def test_static_breakpoints_on_the_agent(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Static Breakpoints: `interrupt_before=["model"]` and `interrupt_after=["tools"]`.

    As in LangGraph, continuing past the pause after `tools` also passes the pause before
    the `model` call scheduled by that same step."""
    box = Toolbox()

    class DebugAgent(Agent):
        model = ScriptedChatModel(
            [ai(call("c1", "fetch_file", path="a")), Message.assistant("Read it.")]
        )
        tools = [box.fetch_file]
        interrupt_before = ["model"]
        interrupt_after = ["tools"]

    def pause(outcome: Any) -> tuple[str | None, str]:
        assert isinstance(outcome, Interrupted)
        return outcome.interrupt.timing, outcome.interrupt.node

    outcome = DebugAgent.invoke(
        {"messages": [Message.user("read a")]}, checkpointer=checkpointer, config=config
    )
    assert pause(outcome) == ("before", "model")
    with pytest.raises(NotAReviewError):
        HITL.from_interrupt(outcome.interrupt)
    outcome = DebugAgent.resume(None, checkpointer=checkpointer, config=config)
    assert pause(outcome) == ("after", "tools")
    assert box.names() == ["fetch_file"]
    outcome = DebugAgent.resume(None, checkpointer=checkpointer, config=config)
    assert isinstance(outcome, Completed)
    assert outcome.state["messages"][-1] == Message.assistant("Read it.")


def test_interrupts_in_tools(checkpointer: MemoryCheckpointer, config: dict[str, Any]) -> None:
    """Interrupts In Tools: a tool may call interrupt() (it runs inside its graph task), but
    the payload is not a standard review and the tool body runs again on resume."""
    entries: list[str] = []

    @tool
    def deploy(release: str) -> str:
        """Deploy a release."""
        entries.append(release)
        approved = interrupt({"question": "Approve deployment?", "release": release})
        return f"deployed {release}" if approved else "deployment cancelled"

    agent = Agent.build(
        model=ScriptedChatModel(
            [ai(call("d1", "deploy", release="v2")), Message.assistant("Deployed.")]
        ),
        tools=[deploy],
        checkpointer=checkpointer,
    )

    paused = agent.invoke({"messages": [Message.user("ship v2")]}, config=config)

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value == {"question": "Approve deployment?", "release": "v2"}
    with pytest.raises(NotAReviewError, match="not a HumanInTheLoop tool review"):
        HITL.from_interrupt(paused.interrupt)
    done = agent.resume(True, config=config)
    assert isinstance(done, Completed)
    assert done.state["messages"][-2:] == [
        result("d1", "deploy", "deployed v2"),
        Message.assistant("Deployed."),
    ]
    assert entries == ["v2", "v2"]


def test_interrupts_in_tools_the_recommended_middleware(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Interrupts In Tools, the recommended shape: the send_email policy lives in the
    middleware (approve / edit / reject, a fixed description, the tool's schema for edits),
    so the tool body stays free of approval logic and runs once, with the reviewed args."""
    box = Toolbox()

    class MailAgent(Agent):
        model = ScriptedChatModel(
            [
                ai(call("m1", "send_email", to="admin@example.com", subject="Export failed")),
                Message.assistant("Sent."),
            ]
        )
        tools = [box.send_email]
        middleware = [
            HumanInTheLoop(
                interrupt_on={
                    "send_email": {
                        "allowed_decisions": ["approve", "edit", "reject"],
                        "description": "Approve or edit this email before sending.",
                    }
                },
                tools=[box.send_email],
            )
        ]

    paused = MailAgent.invoke(
        {"messages": [Message.user("Tell the admin")]}, checkpointer=checkpointer, config=config
    )

    assert isinstance(paused, Interrupted)
    review = HITL.from_interrupt(paused.interrupt)
    assert review.action_requests == (
        ActionRequest(
            name="send_email",
            args={"to": "admin@example.com", "subject": "Export failed"},
            description="Approve or edit this email before sending.",
        ),
    )
    assert review.review_configs[0].allowed_decisions == ("approve", "edit", "reject")
    assert review.review_configs[0].args_schema["required"] == ["to", "subject"]
    for wrong in (
        [HITL.decision("respond", message="I told them.")],
        [HITL.decision("edit", edited_action={"name": "send_email", "args": {"to": 1}})],
    ):
        with pytest.raises(InvalidDecisionError):
            MailAgent.resume_review(wrong, checkpointer=checkpointer, config=config)
    assert box.ran == []

    edited = {"to": "ops@example.com", "subject": "Export failed", "body": "Rerun at 02:00."}
    done = MailAgent.resume_review(
        [HITL.decision("edit", edited_action={"name": "send_email", "args": edited})],
        checkpointer=checkpointer,
        config=config,
    )

    assert isinstance(done, Completed)
    assert box.ran == [("send_email", edited)]


def test_custom_hitl_logic_in_a_graph_node(checkpointer: MemoryCheckpointer) -> None:
    """Custom HITL Logic: the low-level primitive in a graph node; its interrupt is not a
    review payload (the middleware's action_requests / review_configs are not produced)."""

    def approval_node(state: dict[str, Any]) -> dict[str, Any]:
        decision = interrupt({"question": "Approve deployment?", "release": state.get("release")})
        return {"approved_by_human": decision}

    graph = (
        Graph(name="Deploy")
        .add_node("approval", approval_node)
        .add_edge(START, "approval")
        .add_edge("approval", END)
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "deploy-1"}}

    paused = graph.invoke({"release": "v3"}, config=config)

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value == {"question": "Approve deployment?", "release": "v3"}
    with pytest.raises(NotAReviewError):
        HITL.from_interrupt(paused.interrupt)
    done = graph.resume(True, config=config)
    assert isinstance(done, Completed)
    assert done.state == {"release": "v3", "approved_by_human": True}
