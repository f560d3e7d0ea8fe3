"""The demo IT assistant's offline rules (beamweaver_core.demo.it_planner)."""

from __future__ import annotations

from beamweaver_core.agent import Message
from beamweaver_core.agent.review_updates import rejection_text
from beamweaver_core.demo.it_planner import parse_it_request, plan_it_reply
from tests.agent.support import rejected

REQUEST = "Delete /logs/debug-old.log, close ticket T-101 as resolved and restart the web service."


def test_a_request_becomes_its_tool_calls_in_order() -> None:
    assert parse_it_request(REQUEST) == [
        ("files_delete_file", {"path": "/logs/debug-old.log"}),
        ("tickets_close_ticket", {"ticket_id": "T-101", "resolution": "resolved"}),
        ("restart_service", {"service": "web"}),
    ]


def test_a_reject_is_reported_as_a_rejection_whatever_the_reviewer_wrote() -> None:
    """A reject's tool message is the reviewer's text as written (issue 12, point 7), so the
    summary cannot look for the word "rejected" in it; a tool that failed on its own is
    still a failure."""
    user = Message.user(REQUEST)
    proposal = plan_it_reply([user])
    delete, close, restart = proposal.tool_calls

    results = [
        rejected(delete.id, delete.name, "Keep it until the audit is done."),
        rejected(close.id, close.name, rejection_text(close, None)),
        Message.tool(
            "Error: the service manager is down",
            tool_call_id=restart.id,
            name=restart.name,
            status="error",
        ),
    ]

    summary = plan_it_reply([user, proposal, *results])

    assert summary.content.splitlines() == [
        "Here is what happened:",
        "- files_delete_file: the reviewer rejected it, so it did not run.",
        "- tickets_close_ticket: the reviewer rejected it, so it did not run.",
        "- restart_service failed: the service manager is down",
    ]


def test_the_demo_planners_read_a_bounded_prefix_of_a_request() -> None:
    """Their regexes are quadratic on long runs of spaces (1.5 s for 20,000 characters,
    found by an outside review): they read the first `READ_LIMIT` characters only."""
    from beamweaver_core.demo.planner import READ_LIMIT, parse_request

    padding = " " * READ_LIMIT
    assert parse_it_request("restart the web service" + padding) != []
    assert parse_it_request(padding + "restart the web service") == []
    assert parse_request("Refund order 1234 $250" + padding) != []
    assert parse_request(padding + "Refund order 1234 $250") == []
