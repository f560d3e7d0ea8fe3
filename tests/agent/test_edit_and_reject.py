"""Edit and reject as the guide says (issue 12, point 7).

An edit replaces the tool call in the assistant message that proposed it, so the model's
history shows the call that actually ran; the original stays in that message's metadata.
A reject sends the reviewer's message as the tool error text, a default only when they
left it empty.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from beamweaver_core.agent import HITL, Agent, HumanInTheLoop, Message
from beamweaver_core.agent.review_updates import REVIEW_DECISION_KEY
from beamweaver_core.checkpoint import MemoryCheckpointer, PostgresCheckpointer
from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from beamweaver_core.messages import ORIGINAL_TOOL_CALLS_KEY
from tests.agent.support import Toolbox, ai, call

OLD = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days';"
ARCHIVED = "DELETE FROM records WHERE status = 'archived';"


@pytest.fixture(
    params=[
        "memory",
        pytest.param("postgres", marks=pytest.mark.django_db(transaction=True)),
    ]
)
def store(request: pytest.FixtureRequest) -> Checkpointer:
    if request.param == "memory":
        return MemoryCheckpointer()
    return PostgresCheckpointer()


@pytest.fixture
def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"edit-{uuid.uuid4().hex[:10]}"}}


def reviewed_sql(
    box: Toolbox, model: ScriptedChatModel, store: Checkpointer, **policy: Any
) -> Agent:
    return Agent.build(
        model=model,
        tools=[box.execute_sql, box.read_data],
        interrupt_on={"execute_sql": policy or True},
        checkpointer=store,
    )


def test_an_edit_replaces_the_call_in_the_history_and_keeps_the_original(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    box = Toolbox()
    model = ScriptedChatModel(
        [
            ai(
                call("s1", "execute_sql", query=OLD),
                call("r1", "read_data", table="t"),
                text="On it.",
            ),
            Message.assistant("Archived records deleted."),
        ]
    )
    agent = reviewed_sql(box, model, store)
    question = Message.user("Delete old records")
    agent.invoke({"messages": [question]}, config=thread)

    done = agent.resume_review(
        [HITL.decision("edit", edited_action={"name": "execute_sql", "args": {"query": ARCHIVED}})],
        config=thread,
    )

    assert isinstance(done, Completed)
    assert sorted(box.ran) == [("execute_sql", {"query": ARCHIVED}), ("read_data", {"table": "t"})]
    proposal = done.state["messages"][1]
    assert proposal.content == "On it."
    assert [(c.id, c.name, dict(c.args)) for c in proposal.tool_calls] == [
        ("s1", "execute_sql", {"query": ARCHIVED}),
        ("r1", "read_data", {"table": "t"}),
    ]
    assert proposal.metadata == {
        ORIGINAL_TOOL_CALLS_KEY: [{"id": "s1", "name": "execute_sql", "args": {"query": OLD}}]
    }
    executed = next(m for m in done.state["messages"] if m.tool_call_id == "s1")
    assert (executed.status, executed.content) == ("success", f"ran: {ARCHIVED}")
    # The model's next call sees the edited call followed by its result, nothing else.
    seen = model.calls[1]
    assert seen[1].tool_calls[0].args == {"query": ARCHIVED}
    assert not any("replaced" in m.content or "Note:" in m.content for m in seen)
    # The metadata survives the checkpointer (a fresh read of the thread).
    stored = agent.get_state(thread).values["messages"][1]
    assert stored == proposal
    assert stored.metadata[ORIGINAL_TOOL_CALLS_KEY][0]["args"] == {"query": OLD}


def test_edited_arguments_the_tool_refuses_get_one_consistent_message(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """No schema was announced to the reviewer, so the edit is accepted; the tool's own
    validation refuses it. The model sees the edited call and the refusal of exactly that
    call, with no claim that something was executed instead."""
    box = Toolbox()
    model = ScriptedChatModel(
        [ai(call("s1", "execute_sql", query=OLD)), Message.assistant("The edit was invalid.")]
    )
    agent = Agent.build(
        model=model,
        tools=[box.execute_sql],
        middleware=[HumanInTheLoop({"execute_sql": True})],
        checkpointer=store,
    )
    agent.invoke({"messages": [Message.user("Delete")]}, config=thread)

    done = agent.resume_review(
        [HITL.decision("edit", edited_action={"name": "execute_sql", "args": {"sql": ARCHIVED}})],
        config=thread,
    )

    assert isinstance(done, Completed)
    assert box.ran == []
    proposal, refused = done.state["messages"][1:3]
    assert proposal.tool_calls[0].args == {"sql": ARCHIVED}
    assert refused.status == "error"
    assert "query" in refused.content
    assert "Executed instead" not in refused.content and "Note:" not in refused.content


def test_an_edit_refused_by_its_binding_says_only_that(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """An edit bound to other arguments than the ones that would run is refused; the
    message names the call the model's history now shows."""
    box = Toolbox()
    model = ScriptedChatModel([ai(call("s1", "execute_sql", query=OLD)), Message.assistant("ok")])
    agent = reviewed_sql(box, model, store)
    paused = agent.invoke({"messages": [Message.user("Delete")]}, config=thread)
    assert isinstance(paused, Interrupted)
    review = HITL.from_interrupt(paused.interrupt)
    bound = HITL.bind_decisions(
        review,
        [
            HITL.decision(
                "edit", edited_action={"name": "execute_sql", "args": {"query": "SELECT 1"}}
            )
        ],
    )
    tampered = [{**bound[0], "edited_action": {"name": "execute_sql", "args": {"query": ARCHIVED}}}]

    done = agent.resume_review(tampered, config=thread)

    assert isinstance(done, Completed)
    assert box.ran == []
    refused = done.state["messages"][2]
    assert refused.status == "error"
    assert "differs from what the human reviewer approved" in refused.content
    assert "Executed instead" not in refused.content


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Ask for a date range and a dry-run count first.",
            "Ask for a date range and a dry-run count first.",
        ),
        ("", "DEFAULT"),
        (None, "DEFAULT"),
    ],
)
def test_a_reject_sends_the_reviewers_message_as_written(
    message: str | None, expected: str, store: Checkpointer, thread: dict[str, Any]
) -> None:
    box = Toolbox()
    model = ScriptedChatModel([ai(call("s1", "execute_sql", query=OLD)), Message.assistant("ok")])
    agent = reviewed_sql(box, model, store)
    agent.invoke({"messages": [Message.user("Delete")]}, config=thread)

    done = agent.resume_review([HITL.decision("reject", message=message)], config=thread)

    assert isinstance(done, Completed)
    assert box.ran == []
    rejected = done.state["messages"][2]
    if expected == "DEFAULT":
        expected = (
            "The human reviewer rejected the tool call `execute_sql` (id s1); the tool was not "
            "executed.\nDo not retry this tool call unless the user explicitly asks for it."
        )
    assert (rejected.role, rejected.status, rejected.content) == ("tool", "error", expected)
    assert rejected.metadata == {REVIEW_DECISION_KEY: "reject"}
    assert model.calls[1][-1] == rejected
    assert agent.get_state(thread).values["messages"][2] == rejected
