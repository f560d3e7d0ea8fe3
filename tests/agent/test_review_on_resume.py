"""A review answer is applied to exactly the calls it was asked about (issue 12, point 1).

Whatever decided "review or not" at the pause (a `when` predicate reading the run's
context, the `interrupt_on` map, the model's reply in the state) may read differently on
resume. The answer still goes to the recorded calls; when that is impossible the resume is
refused and the thread stays paused: never execute unreviewed, never drop a decision.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from beamweaver_core.agent import Agent, HumanInTheLoop, Message
from beamweaver_core.checkpoint import MemoryCheckpointer, PostgresCheckpointer
from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.exceptions import BeamWeaverError, GraphChangedError, ReviewChangedError
from beamweaver_core.graph import Command, Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call

DROP = "DROP TABLE records"
DELETE_OLD = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days'"


@pytest.fixture(
    params=[
        "memory",
        pytest.param("postgres", marks=pytest.mark.django_db(transaction=True)),
    ]
)
def store(request: pytest.FixtureRequest) -> Checkpointer:
    """Each test runs on both checkpointers: what is recorded with the pause must survive
    Postgres as it does memory."""
    if request.param == "memory":
        return MemoryCheckpointer()
    return PostgresCheckpointer()


@pytest.fixture
def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"review-{uuid.uuid4().hex[:10]}"}}


def strict(call: dict[str, Any], state: Any, runtime: Any) -> bool:
    """The issue's predicate: review only when the run's context says `strict`."""
    return bool((runtime.context or {}).get("strict"))


def sql_agent(
    box: Toolbox,
    model: ScriptedChatModel,
    store: Checkpointer,
    interrupt_on: dict[str, Any],
    **options: Any,
) -> Agent:
    return Agent.build(
        model=model,
        tools=[box.execute_sql, box.write_file],
        interrupt_on=interrupt_on,
        checkpointer=store,
        **options,
    )


def tool_messages(state: dict[str, Any]) -> list[Message]:
    return [m for m in state["messages"] if m.role == "tool"]


def test_a_when_predicate_reading_context_is_not_re_evaluated_on_resume(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """The issue's scenario: paused under `context={"strict": True}`, resumed with a reject
    and no context. The reject reaches the model and `execute_sql` never runs."""
    box = Toolbox()
    model = ScriptedChatModel(
        [ai(call("q1", "execute_sql", query=DELETE_OLD)), Message.assistant("Understood.")]
    )
    agent = sql_agent(box, model, store, {"execute_sql": {"when": strict}})

    paused = agent.invoke(
        {"messages": [Message.user("Clean old records")]},
        config=thread,
        context={"strict": True},
    )
    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value["action_requests"][0]["args"] == {"query": DELETE_OLD}

    done = agent.resume(
        {"decisions": [{"type": "reject", "message": "Ask for a date range first."}]},
        config=thread,
    )

    assert isinstance(done, Completed)
    assert box.ran == []
    rejected = tool_messages(done.state)
    assert [(m.tool_call_id, m.status, m.content) for m in rejected] == [
        ("q1", "error", "Ask for a date range first.")
    ]
    # The model's second call saw the reviewer's message as the tool result.
    assert model.calls[1][-1] == rejected[0]


def test_interrupt_mode_first_keeps_each_answer_on_its_own_call(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """`interrupt_mode="first"` asks one call at a time in one node; an answer consumed at an
    earlier resume still belongs to its own call when the predicates read differently at a
    later one (here: the context is gone at the second resume)."""
    box = Toolbox()
    model = ScriptedChatModel(
        [
            ai(
                call("q1", "execute_sql", query=DELETE_OLD),
                call("q2", "execute_sql", query=DROP),
            ),
            Message.assistant("Done."),
        ]
    )
    agent = Agent.build(
        model=model,
        tools=[box.execute_sql],
        middleware=[
            HumanInTheLoop(
                {"execute_sql": {"when": strict}}, tools=[box.execute_sql], interrupt_mode="first"
            )
        ],
        checkpointer=store,
    )
    strict_run = {"strict": True}
    first = agent.invoke(
        {"messages": [Message.user("Clean up")]}, config=thread, context=strict_run
    )
    assert isinstance(first, Interrupted)
    second = agent.resume({"decisions": [{"type": "approve"}]}, config=thread, context=strict_run)
    assert isinstance(second, Interrupted)
    assert second.interrupt.value["action_requests"][0]["args"] == {"query": DROP}

    done = agent.resume({"decisions": [{"type": "reject", "message": "Never."}]}, config=thread)

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": DELETE_OLD})]
    assert [(m.tool_call_id, m.status, m.content) for m in tool_messages(done.state)] == [
        ("q2", "error", "Never."),
        ("q1", "success", f"ran: {DELETE_OLD}"),
    ]


def test_a_changed_interrupt_on_map_still_applies_the_answer_to_the_reviewed_call(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """A deploy between pause and resume: the new agent no longer reviews `execute_sql` but
    now reviews `write_file`. The reviewed `execute_sql` gets its reject; `write_file`, newly
    under review, pauses for its own review instead of running."""
    box = Toolbox()
    proposal = ai(
        call("q1", "execute_sql", query=DROP),
        call("w1", "write_file", path="notes.md", content="hello"),
    )
    before = sql_agent(
        box,
        ScriptedChatModel([proposal]),
        store,
        {"execute_sql": True, "write_file": False},
    )
    paused = before.invoke({"messages": [Message.user("Tidy up")]}, config=thread)
    assert isinstance(paused, Interrupted)
    assert [a["name"] for a in paused.interrupt.value["action_requests"]] == ["execute_sql"]

    after = sql_agent(
        box,
        ScriptedChatModel([Message.assistant("Wrote the notes; no SQL ran.")]),
        store,
        {"execute_sql": False, "write_file": True},
    )
    again = after.resume({"decisions": [{"type": "reject"}]}, config=thread)

    assert isinstance(again, Interrupted)
    assert again.interrupt.id != paused.interrupt.id
    assert [a["name"] for a in again.interrupt.value["action_requests"]] == ["write_file"]
    assert box.ran == []

    done = after.resume({"decisions": [{"type": "approve"}]}, config=thread)

    assert isinstance(done, Completed)
    assert box.ran == [("write_file", {"path": "notes.md", "content": "hello"})]
    statuses = {m.tool_call_id: m.status for m in tool_messages(done.state)}
    assert statuses == {"q1": "error", "w1": "success"}


def test_a_call_no_longer_reviewed_still_gets_its_decision(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """The new agent reviews nothing: the reject recorded for `execute_sql` still holds. An
    agent without the review middleware at all cannot run the paused step: the resume is
    refused and the thread stays paused."""
    box = Toolbox()
    before = sql_agent(
        box,
        ScriptedChatModel([ai(call("q1", "execute_sql", query=DROP))]),
        store,
        {"execute_sql": True},
    )
    paused = before.invoke({"messages": [Message.user("x")]}, config=thread)
    assert isinstance(paused, Interrupted)
    reject = {"decisions": [{"type": "reject", "message": "No."}]}
    without_review = sql_agent(box, ScriptedChatModel([]), store, {})
    with pytest.raises(GraphChangedError):
        without_review.resume(reject, config=thread)
    assert [i.id for i in without_review.get_state(thread).interrupts] == [paused.interrupt.id]
    after = sql_agent(
        box, ScriptedChatModel([Message.assistant("ok")]), store, {"execute_sql": False}
    )

    done = after.resume(reject, config=thread)

    assert isinstance(done, Completed)
    assert box.ran == []
    assert [m.content for m in tool_messages(done.state)] == ["No."]


def paused_on_delete(
    box: Toolbox, store: Checkpointer, thread: dict[str, Any]
) -> tuple[Agent, Message, Interrupted]:
    """An agent paused on the review of a DELETE: the agent, the reviewed reply, the pause."""
    reviewed = ai(call("q1", "execute_sql", query=DELETE_OLD))
    agent = sql_agent(
        box,
        ScriptedChatModel([reviewed, Message.assistant("Old records deleted.")]),
        store,
        {"execute_sql": True},
    )
    paused = agent.invoke({"messages": [Message.user("Clean old records")]}, config=thread)
    assert isinstance(paused, Interrupted)
    return agent, reviewed, paused


def test_a_changed_model_reply_refuses_the_resume_and_keeps_the_thread_paused(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """The state changed under the pause (another reply now proposes `DROP TABLE`): an
    approval of the reviewed DELETE must not run the DROP. The resume is refused with a
    clear error, the interrupt stays pending, and after restoring the reviewed reply the
    same answer goes through."""
    box = Toolbox()
    agent, reviewed, paused = paused_on_delete(box, store, thread)
    approve = {"decisions": [{"type": "approve"}]}

    with pytest.raises(ReviewChangedError) as refused:
        agent.invoke(
            Command(
                update={"messages": [ai(call("q9", "execute_sql", query=DROP))]}, resume=approve
            ),
            config=thread,
        )

    assert isinstance(refused.value, BeamWeaverError)
    text = str(refused.value)
    assert "execute_sql" in text and DROP in text and DELETE_OLD in text
    assert "still paused" in text
    assert box.ran == []
    snapshot = agent.get_state(thread)
    assert [i.id for i in snapshot.interrupts] == [paused.interrupt.id]

    # Refused again while the state differs; then the reviewed reply is restored.
    with pytest.raises(ReviewChangedError):
        agent.resume(approve, config=thread)
    assert box.ran == []
    done = agent.invoke(Command(update={"messages": [reviewed]}, resume=approve), config=thread)

    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": DELETE_OLD})]


def test_update_state_on_the_messages_refuses_the_resume_until_restored(
    store: Checkpointer, thread: dict[str, Any]
) -> None:
    """The same through `update_state` (which keeps the pending interrupt answerable): a
    reply appended under the pause proposes another call, so the approval of the reviewed
    DELETE is refused, not spent on the DROP; restoring the reviewed reply lets it through."""
    box = Toolbox()
    agent, reviewed, paused = paused_on_delete(box, store, thread)
    graph = agent.graph_for()
    graph.update_state(thread, {"messages": [ai(call("q9", "execute_sql", query=DROP))]})
    approve = {"decisions": [{"type": "approve"}]}

    with pytest.raises(ReviewChangedError, match="DROP TABLE records"):
        agent.resume(approve, config=thread)

    assert box.ran == []
    assert [i.id for i in agent.get_state(thread).interrupts] == [paused.interrupt.id]
    graph.update_state(thread, {"messages": [reviewed]})
    done = agent.resume(approve, config=thread)
    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": DELETE_OLD})]
