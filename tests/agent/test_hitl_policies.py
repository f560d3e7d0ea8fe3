"""HumanInTheLoop review policies: `when` / `predicate`, `interrupt_mode`, options."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.agent import Agent, HumanInTheLoop, Message
from beamweaver_core.agent.review_updates import rejection_text
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call, rejected, responded, result


def big_sql(call: dict[str, Any]) -> bool:
    return "DELETE" in call["args"]["query"]


def sql_agent(
    checkpointer: MemoryCheckpointer, policy: dict[str, Any], *replies: Message, mode: str = "all"
) -> tuple[Agent, Toolbox]:
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel(list(replies)),
        tools=[box.execute_sql, box.fetch_file],
        middleware=[
            HumanInTheLoop({"execute_sql": policy}, tools=[box.execute_sql], interrupt_mode=mode)
        ],  # type: ignore[arg-type]
        checkpointer=checkpointer,
    )
    return agent, box


@pytest.mark.parametrize(
    "predicate",
    [
        big_sql,
        lambda call, state: "DELETE" in call["args"]["query"] and len(state["messages"]) == 2,
        lambda call, state, runtime: (
            "DELETE" in call["args"]["query"] and runtime.context == {"role": "ops"}
        ),
    ],
    ids=["call", "call-state", "call-state-runtime"],
)
@pytest.mark.parametrize("option", ["when", "predicate"])
def test_when_predicate_arities_gate_review(
    predicate: Any, option: str, checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """`when` (alias `predicate`) of arity 1, 2 or 3 decides per call; calls it lets through
    run without review alongside the reviewed ones. (On resume the answer goes to the calls
    the question was asked about, whatever the predicate says then: see
    `test_review_on_resume.py`.)"""
    proposal = ai(
        call("s1", "execute_sql", query="SELECT 1"),
        call("s2", "execute_sql", query="DELETE FROM t"),
    )
    agent, box = sql_agent(checkpointer, {option: predicate}, proposal, Message.assistant("ok"))

    paused = agent.invoke(
        {"messages": [Message.user("clean")]}, config=config, context={"role": "ops"}
    )

    assert isinstance(paused, Interrupted)
    assert [a["args"] for a in paused.interrupt.value["action_requests"]] == [
        {"query": "DELETE FROM t"}
    ]
    done = agent.resume_review([{"type": "reject"}], config=config, context={"role": "ops"})
    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "SELECT 1"})]
    assert done.state["messages"][2:] == [
        rejected("s2", "execute_sql", rejection_text(call("s2", "execute_sql"), None)),
        result("s1", "execute_sql", "ran: SELECT 1"),
        Message.assistant("ok"),
    ]


def test_when_false_for_every_call_never_pauses(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    agent, box = sql_agent(
        checkpointer,
        {"when": big_sql},
        ai(call("s1", "execute_sql", query="SELECT 1")),
        Message.assistant("ok"),
    )

    done = agent.invoke({"messages": [Message.user("q")]}, config=config)

    assert isinstance(done, Completed)
    assert box.names() == ["execute_sql"]


def test_interrupt_mode_first_reviews_one_call_at_a_time(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """`interrupt_mode="first"`: pause at the first matching call; the next matching call is
    reviewed after it, in its own interrupt; nothing runs before every review is decided."""
    proposal = ai(
        call("s1", "execute_sql", query="DELETE FROM a"),
        call("f1", "fetch_file", path="x"),
        call("s2", "execute_sql", query="DELETE FROM b"),
    )
    agent, box = sql_agent(
        checkpointer, {"when": big_sql}, proposal, Message.assistant("done"), mode="first"
    )
    question = Message.user("clean a and b")

    first = agent.invoke({"messages": [question]}, config=config)
    assert isinstance(first, Interrupted)
    assert [a["args"] for a in first.interrupt.value["action_requests"]] == [
        {"query": "DELETE FROM a"}
    ]

    second = agent.resume_review([{"type": "approve"}], config=config)
    assert isinstance(second, Interrupted)
    assert second.interrupt.id != first.interrupt.id
    assert [a["args"] for a in second.interrupt.value["action_requests"]] == [
        {"query": "DELETE FROM b"}
    ]
    assert box.ran == []

    done = agent.resume_review([{"type": "reject", "message": "Keep b."}], config=config)
    assert isinstance(done, Completed)
    assert done.state["messages"] == [
        question,
        proposal,
        rejected("s2", "execute_sql", "Keep b."),
        result("s1", "execute_sql", "ran: DELETE FROM a"),
        result("f1", "fetch_file", "contents of x"),
        Message.assistant("done"),
    ]


def test_every_call_answered_by_review_calls_the_model_again(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """When no call is left to run (all rejected or responded), the loop goes back to the model."""
    agent, box = sql_agent(
        checkpointer,
        {},
        ai(call("s1", "execute_sql", query="DROP TABLE x")),
        Message.assistant("I will not drop it."),
    )
    agent.invoke({"messages": [Message.user("drop x")]}, config=config)

    done = agent.resume_review(
        [{"type": "respond", "message": "Table x is needed."}], config=config
    )

    assert isinstance(done, Completed)
    assert box.ran == []
    assert done.state["messages"][-2:] == [
        responded("s1", "execute_sql", "Table x is needed."),
        Message.assistant("I will not drop it."),
    ]


def test_policy_args_schema_is_announced_and_validates_edits(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """`args_schema` on a policy takes precedence over the tool's schema."""
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "pattern": "^SELECT"}},
        "required": ["query"],
    }
    agent, box = sql_agent(
        checkpointer,
        {"args_schema": schema},
        ai(call("s1", "execute_sql", query="DELETE FROM t")),
        Message.assistant("ok"),
    )

    paused = agent.invoke({"messages": [Message.user("q")]}, config=config)

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value["review_configs"][0]["args_schema"] == schema
    with pytest.raises(ValueError, match="does not match '\\^SELECT'"):
        agent.resume_review(
            [
                {
                    "type": "edit",
                    "edited_action": {"name": "execute_sql", "args": {"query": "DELETE FROM u"}},
                }
            ],
            config=config,
        )
    done = agent.resume_review(
        [
            {
                "type": "edit",
                "edited_action": {
                    "name": "execute_sql",
                    "args": {"query": "SELECT count(*) FROM t"},
                },
            }
        ],
        config=config,
    )
    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "SELECT count(*) FROM t"})]


@pytest.mark.parametrize(
    ("interrupt_on", "message"),
    [
        ({"t": {"allowed_decisions": []}}, "must be a non-empty list"),
        ({"t": {"allowed_decisions": ["approve", "ignore"]}}, "must be a non-empty list"),
        ({"t": {"allowed": ["approve"]}}, "unknown option"),
        ({"t": {"when": big_sql, "predicate": big_sql}}, "sets both 'when' and 'predicate'"),
        ({"t": {"when": lambda a, b, c, d: True}}, "takes 4 argument"),
        ({"t": {"description": lambda call: "x"}}, "takes 1 argument"),
        ({"t": {"description": 42}}, "must be a str or a callable"),
        ({"t": "yes"}, "must be True, False or a dict"),
    ],
)
def test_invalid_policies_fail_at_construction(interrupt_on: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        HumanInTheLoop(interrupt_on)


def test_invalid_interrupt_mode() -> None:
    with pytest.raises(ValueError, match="interrupt_mode must be 'all' or 'first'"):
        HumanInTheLoop({}, interrupt_mode="batched")  # type: ignore[arg-type]


def test_interrupt_on_and_explicit_middleware_are_not_combined() -> None:
    box = Toolbox()
    with pytest.raises(ValueError, match="both interrupt_on and a HumanInTheLoop middleware"):
        Agent.build(
            model=ScriptedChatModel([]),
            tools=[box.execute_sql],
            interrupt_on={"execute_sql": True},
            middleware=[HumanInTheLoop({"execute_sql": True})],
        )


def test_custom_description_prefix(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel([ai(call("w1", "write_file", path="a", content="b"))]),
        tools=[box.write_file],
        middleware=[HumanInTheLoop({"write_file": True}, description_prefix="Please check")],
        checkpointer=checkpointer,
    )

    paused = agent.invoke({"messages": [Message.user("w")]}, config=config)

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value["action_requests"][0]["description"] == (
        'Please check\n\nTool: write_file\nArgs: {"content": "b", "path": "a"}'
    )


def test_interrupt_mode_first_invalid_later_answer_keeps_earlier_ones(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    proposal = ai(
        call("s1", "execute_sql", query="DELETE FROM a"),
        call("s2", "execute_sql", query="DELETE FROM b"),
    )
    agent, box = sql_agent(checkpointer, {}, proposal, Message.assistant("done"), mode="first")
    agent.invoke({"messages": [Message.user("clean")]}, config=config)
    second = agent.resume_review([{"type": "approve"}], config=config)
    assert isinstance(second, Interrupted)

    with pytest.raises(ValueError, match="Unknown decision type 'nope'"):
        agent.resume_review([{"type": "nope"}], config=config)

    assert agent.get_state(config).interrupts == second.interrupts
    done = agent.resume_review([{"type": "reject"}], config=config)
    assert isinstance(done, Completed)
    assert box.ran == [("execute_sql", {"query": "DELETE FROM a"})]
