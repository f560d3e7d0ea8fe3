"""`OpsAssistant`: the demo operations assistant (registered as `ops_assistant`).

It looks up orders, searches support records, issues refunds, deletes old records and
emails the team. Destructive or outward-facing calls wait for a human: every deletion and
email, and refunds above `REFUND_REVIEW_THRESHOLD`. It runs offline on rules (see
`demo.planner`) unless a provider key is configured (see `demo.model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beamweaver_core.agent.agent import Agent
from beamweaver_core.demo.model import DemoChatModel
from beamweaver_core.demo.tools import OPS_TOOLS, current_store
from beamweaver_core.graph.runtime import Runtime

REFUND_REVIEW_THRESHOLD = 100.0

SYSTEM_PROMPT = """You are the operations assistant of a small online shop.
You help the operations team with orders, refunds, support records and email.
- Look up an order before refunding it when you are unsure of its total.
- Search the records before deleting any, and delete only what the user asked for.
- Refunds above $100, every deletion and every email are reviewed by a human. If a reviewer
  rejects a call, do not retry it; tell the user what was rejected.
- Be brief and concrete in your answers."""


def refund_needs_review(call: Mapping[str, Any]) -> bool:
    """Only refunds above the threshold wait for a human."""
    return float(call["args"].get("amount", 0)) > REFUND_REVIEW_THRESHOLD


def describe_refund(call: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """The refund with the order it comes from, so the reviewer sees what is at stake."""
    args = call["args"]
    order = current_store().orders.get(str(args.get("order_id")))
    amount = float(args.get("amount", 0))
    if order is None:
        context = "unknown order"
    else:
        context = f"{order.customer}, order total ${order.total:.2f}, ${order.refunded:.2f} already refunded"
    return (
        f"Refund ${amount:.2f} on order {args.get('order_id')} ({context}).\n"
        f"Reason: {args.get('reason', 'not given')}"
    )


def describe_deletion(call: Mapping[str, Any], state: Mapping[str, Any], runtime: Runtime) -> str:
    """Which records the deletion would remove right now, and who asked for it (the run's
    context names the user who started it from the inbox or an API)."""
    args = call["args"]
    days, status = int(args.get("older_than_days", 0)), args.get("status")
    doomed = current_store().matching_records(days, status)
    context = runtime.context if isinstance(runtime.context, Mapping) else {}
    requested_by = (
        context.get("username") or context.get("user_id") or context.get("source") or "unknown"
    )
    scope = f" with status {status!r}" if status else ""
    ids = ", ".join(r.id for r in doomed) or "none"
    return (
        f"Permanently delete {len(doomed)} support record(s) older than {days} days{scope}: "
        f"{ids}.\nRequested by: {requested_by}"
    )


class OpsAssistant(Agent):
    """The demo operations assistant."""

    name = "OpsAssistant"
    model = DemoChatModel()
    tools = OPS_TOOLS
    system_prompt = SYSTEM_PROMPT
    interrupt_on = {
        "search_records": False,
        "lookup_order": False,
        "delete_records": {
            "allowed_decisions": ["approve", "edit", "reject"],
            "description": describe_deletion,
        },
        "issue_refund": {
            "allowed_decisions": ["approve", "edit", "reject"],
            "when": refund_needs_review,
            "description": describe_refund,
        },
        "send_email": {
            "allowed_decisions": ["approve", "edit", "reject"],
            "description": "Approve or edit this email before sending.",
        },
    }


__all__ = [
    "REFUND_REVIEW_THRESHOLD",
    "OpsAssistant",
    "describe_deletion",
    "describe_refund",
    "refund_needs_review",
]
