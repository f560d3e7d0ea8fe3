"""Graphs the inbox tests run (registered by `tests/reviews/conftest.py`, and by the
browser tests' server through `BEAMWEAVER_GRAPHS`).

`tool_review` pauses with a HumanInTheLoop-shaped review of the calls in its input
(`{"calls": [{"name", "args"}]}`, a `send_email` by default), validates the answer with
the same rules as the middleware, and records what it would execute. `checkpointed` stops
at a static breakpoint before its `work` node. `text_question` asks its input's
`question`, a plain string, and keeps the answer.
"""

from __future__ import annotations

from typing import Any

from beamweaver_core.agent import HITL
from beamweaver_core.agent.review import ActionRequest, ReviewConfig, ReviewRequest
from beamweaver_core.graph import START, Graph, interrupt
from tests.support.graphs import TEST_GRAPHS, ledger

REVIEW_GRAPHS = {
    **TEST_GRAPHS,
    "tool_review": "tests.reviews.graphs:tool_review",
    "checkpointed": "tests.reviews.graphs:checkpointed",
    "text_question": "tests.reviews.graphs:text_question",
}

EMAIL_SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "maxLength": 200},
        "subject": {"type": "string", "maxLength": 200},
        "body": {"type": "string"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}
REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
SCHEMAS = {"send_email": EMAIL_SCHEMA, "issue_refund": REFUND_SCHEMA}
ALLOWED = {
    "send_email": ["approve", "edit", "reject", "respond"],
    "issue_refund": ["approve", "edit", "reject"],
    "notify": ["approve", "reject"],
}
DEFAULT_CALLS = [
    {
        "name": "send_email",
        "args": {"to": "ops@example.com", "subject": "Weekly report", "body": "All good.\nBye."},
    }
]


def review_for(calls: list[dict[str, Any]]) -> ReviewRequest:
    """The review the `tool_review` graph raises for `calls`."""
    return ReviewRequest(
        tuple(
            ActionRequest(
                name=c["name"], args=c["args"], description=f"Run {c['name']} as proposed?"
            )
            for c in calls
        ),
        tuple(
            ReviewConfig(
                action_name=c["name"],
                allowed_decisions=tuple(ALLOWED.get(c["name"], ["approve", "reject"])),  # type: ignore[arg-type]
                args_schema=SCHEMAS.get(c["name"]),
            )
            for c in calls
        ),
    )


def _propose(state: dict[str, Any]) -> dict[str, Any]:
    review = review_for(state.get("calls") or DEFAULT_CALLS)
    answer = interrupt(review.to_value())
    decisions = HITL.validate_decisions(review, answer)
    return {"decisions": list(decisions)}


def _act(state: dict[str, Any]) -> dict[str, Any]:
    executed = []
    for decision, call in zip(state["decisions"], state.get("calls") or DEFAULT_CALLS, strict=True):
        if decision["type"] == "approve":
            executed.append(call)
        elif decision["type"] == "edit":
            executed.append(decision["edited_action"])
    for call in executed:
        ledger(f"execute:{call['name']}")
    return {"executed": executed}


tool_review = (
    Graph(name="tool_review")
    .add_node("propose", _propose)
    .add_node("act", _act)
    .add_edge(START, "propose")
    .add_edge("propose", "act")
    .compile()
)


def _work(state: dict[str, Any]) -> dict[str, Any]:
    return {"worked": True}


checkpointed = (
    Graph(name="checkpointed")
    .add_node("work", _work)
    .add_edge(START, "work")
    .compile(interrupt_before=["work"])
)


def _ask_text(state: dict[str, Any]) -> dict[str, Any]:
    return {"answer": interrupt(str(state.get("question") or "Go on?"))}


text_question = (
    Graph(name="text_question").add_node("ask", _ask_text).add_edge(START, "ask").compile()
)
