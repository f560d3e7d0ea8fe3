"""Review payloads and decision validation: the pure functions review UIs share with the
middleware, and the guarantee that an invalid answer consumes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.agent import HITL, ActionRequest, Agent, Message, ReviewConfig, ReviewRequest
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import InvalidDecisionError, NotAReviewError
from beamweaver_core.graph import Completed, Interrupt, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call, result

EMAIL_SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
    "required": ["to", "subject"],
    "additionalProperties": False,
}
REVIEW = ReviewRequest(
    action_requests=(
        ActionRequest("remove_file", {"path": "a"}, "Remove a"),
        ActionRequest("send_email", {"to": "x@example.com", "subject": "Hi"}, "Send"),
    ),
    review_configs=(
        ReviewConfig("remove_file", ("approve", "reject")),
        ReviewConfig("send_email", ("approve", "edit", "reject", "respond"), EMAIL_SCHEMA),
    ),
)


def problems_of(decisions: Any) -> list[tuple[int | None, str]]:
    with pytest.raises(InvalidDecisionError) as caught:
        HITL.validate_decisions(REVIEW, decisions)
    return [(p["index"], p["field"]) for p in caught.value.problems]


def test_valid_decisions_are_normalized() -> None:
    decisions = [
        {"type": "reject"},
        {
            "type": "edit",
            "edited_action": {
                "name": "send_email",
                "args": {"to": "y@example.com", "subject": "Yo"},
            },
        },
    ]
    assert HITL.validate_decisions(REVIEW, {"decisions": decisions}) == (
        {"type": "reject"},
        {
            "type": "edit",
            "edited_action": {
                "name": "send_email",
                "args": {"to": "y@example.com", "subject": "Yo"},
            },
        },
    )
    assert HITL.validate_decisions(
        REVIEW, [{"type": "approve"}, {"type": "respond", "message": "Sent it myself."}]
    ) == (
        {"type": "approve"},
        {"type": "respond", "message": "Sent it myself."},
    )


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ([{"type": "approve"}], [(None, "decisions")]),
        ([{"type": "approve"}] * 3, [(None, "decisions")]),
        (
            [
                {"type": "edit", "edited_action": {"name": "remove_file", "args": {}}},
                {"type": "approve"},
            ],
            [(0, "type")],
        ),
        ([{"type": "ignore"}, {"type": "approve"}], [(0, "type")]),
        ([{}, {"type": "approve"}], [(0, "type")]),
        (["approve", {"type": "approve"}], [(0, "")]),
        ([{"type": "approve"}, {"type": "edit"}], [(1, "edited_action")]),
        (
            [
                {"type": "approve"},
                {"type": "edit", "edited_action": {"name": "send_email", "args": "to=x"}},
            ],
            [(1, "edited_action.args")],
        ),
        ([{"type": "reject", "message": 3}, {"type": "approve"}], [(0, "message")]),
        ([{"type": "approve"}, {"type": "respond"}], [(1, "message")]),
        (
            [
                {"type": "approve"},
                {"type": "edit", "edited_action": {"name": "remove_file", "args": {"path": "b"}}},
            ],
            [(1, "edited_action.name")] + [(1, "edited_action.args")] * 3,
        ),
        (
            [
                {"type": "approve"},
                {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": 5}}},
            ],
            [(1, "edited_action.args"), (1, "edited_action.args.to")],
        ),
        ({"answers": []}, [(None, "decisions")]),
        ({"decisions": "approve"}, [(None, "decisions")]),
        ("approve", [(None, "decisions")]),
    ],
    ids=[
        "too-few",
        "too-many",
        "type-not-allowed",
        "unknown-type",
        "missing-type",
        "not-a-dict",
        "edit-without-edited-action",
        "edit-args-not-a-dict",
        "message-not-a-string",
        "respond-without-message",
        "edit-renames-the-tool",
        "edit-args-fail-the-schema",
        "wrong-wrapper",
        "decisions-not-a-list",
        "bare-string",
    ],
)
def test_validation_matrix(decisions: Any, expected: list[tuple[int | None, str]]) -> None:
    assert problems_of(decisions) == expected


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(InvalidDecisionError) as caught:
        HITL.validate_decisions(REVIEW, [{"type": "edit"}])
    assert caught.value.problems == (
        {
            "index": None,
            "field": "decisions",
            "message": "answer: Expected 2 decision(s), one per action request in order (remove_file, send_email); got 1.",
        },
        {
            "index": 0,
            "field": "type",
            "message": "decisions[0]: Decision type 'edit' is not allowed for tool 'remove_file'; allowed: ['approve', 'reject'].",
        },
        {
            "index": 0,
            "field": "edited_action",
            "message": "decisions[0]: An 'edit' decision needs 'edited_action': {'name': <the same tool>, 'args': {...}}; got None.",
        },
    )
    assert str(caught.value).startswith(
        "The review decisions are invalid (3 problem(s)):\n  - answer: Expected 2"
    )
    assert isinstance(caught.value, ValueError)


def test_decision_builder() -> None:
    assert HITL.decision("respond", message="Blue.") == {"type": "respond", "message": "Blue."}
    assert HITL.decision("approve") == {"type": "approve"}
    assert HITL.decision("edit", edited_action={"name": "t", "args": {"a": 1}}) == {
        "type": "edit",
        "edited_action": {"name": "t", "args": {"a": 1}},
    }
    with pytest.raises(ValueError, match="Unknown decision type 'accept'"):
        HITL.decision("accept")  # type: ignore[arg-type]


def test_from_interrupt_round_trips_the_payload() -> None:
    interrupt = Interrupt(id="i1", value=REVIEW.to_value(), node="HumanInTheLoop.after_model")
    review = HITL.from_interrupt(interrupt)
    assert review == ReviewRequest(REVIEW.action_requests, REVIEW.review_configs, interrupt_id="i1")


@pytest.mark.parametrize(
    ("interrupt", "message"),
    [
        (
            Interrupt(id="i", value="Approve?", node="n"),
            "has no 'action_requests' and 'review_configs'",
        ),
        (
            Interrupt(id="i", value=None, node="model", timing="before"),
            "static breakpoint before node 'model'",
        ),
        (
            Interrupt(
                id="i",
                value={"action_requests": [{"name": "a", "args": {}}], "review_configs": []},
                node="n",
            ),
            "lists of equal length",
        ),
        (
            Interrupt(
                id="i",
                value={
                    "action_requests": [{"name": "a", "args": {}}],
                    "review_configs": [{"action_name": "b", "allowed_decisions": ["approve"]}],
                },
                node="n",
            ),
            "review config names 'b'",
        ),
        (
            Interrupt(
                id="i",
                value={
                    "action_requests": [{"name": "a", "args": {}}],
                    "review_configs": [{"action_name": "a", "allowed_decisions": ["accept"]}],
                },
                node="n",
            ),
            "allowed_decisions must be",
        ),
    ],
)
def test_from_interrupt_refuses_other_interrupts(interrupt: Interrupt, message: str) -> None:
    with pytest.raises(NotAReviewError, match=message):
        HITL.from_interrupt(interrupt)


def test_invalid_answer_keeps_the_same_interrupt_pending(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """An invalid answer raises InvalidDecisionError, consumes nothing, runs no tool; the
    same interrupt (same id) is still pending and a corrected answer then works."""
    box = Toolbox()
    proposal = ai(
        call("c1", "remove_file", path="a"),
        call("c2", "send_email", to="x@example.com", subject="Hi"),
    )
    agent = Agent.build(
        model=ScriptedChatModel([proposal, Message.assistant("Done.")]),
        tools=[box.remove_file, box.send_email],
        interrupt_on={
            "remove_file": {"allowed_decisions": ["approve", "reject"]},
            "send_email": True,
        },
        checkpointer=checkpointer,
    )
    paused = agent.invoke({"messages": [Message.user("go")]}, config=config)
    assert isinstance(paused, Interrupted)
    before = agent.get_state(config)

    for wrong in (
        [{"type": "approve"}],
        [
            {"type": "edit", "edited_action": {"name": "remove_file", "args": {"path": "b"}}},
            {"type": "approve"},
        ],
        [
            {"type": "approve"},
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "y@example.com"}},
            },
        ],
        [
            {"type": "approve"},
            {"type": "edit", "edited_action": {"name": "remove_file", "args": {"path": "b"}}},
        ],
    ):
        with pytest.raises(InvalidDecisionError):
            agent.resume_review(wrong, config=config)
        after = agent.get_state(config)
        assert after.interrupts == before.interrupts
        assert after.config == before.config
        assert box.ran == []

    done = agent.resume_review(
        [
            {"type": "approve"},
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "y@example.com", "subject": "Hi"},
                },
            },
        ],
        config=config,
    )
    assert isinstance(done, Completed)
    assert sorted(box.names()) == ["remove_file", "send_email"]
    assert done.state["messages"][-1] == Message.assistant("Done.")
    assert result("c1", "remove_file", "deleted a") in done.state["messages"]


def test_an_edit_under_a_schema_whose_pattern_re2_cannot_run_is_a_problem_not_a_crash() -> None:
    # Reviews paused before schema patterns ran on RE2 may hold a look-ahead; the edit is
    # refused, saying why, and never matched by a backtracking engine.
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(?!root)"}}}
    review = ReviewRequest(
        action_requests=(ActionRequest("rename", {"name": "a"}, "Rename"),),
        review_configs=(ReviewConfig("rename", ("approve", "edit", "reject"), schema),),
    )
    edit = {"type": "edit", "edited_action": {"name": "rename", "args": {"name": "b"}}}
    with pytest.raises(InvalidDecisionError) as caught:
        HITL.validate_decisions(review, [edit])
    [problem] = caught.value.problems
    assert (problem["index"], problem["field"]) == (0, "edited_action.args")
    assert "cannot be checked" in problem["message"] and "RE2" in problem["message"]
    assert HITL.validate_decisions(review, [{"type": "approve"}]) == ({"type": "approve"},)
