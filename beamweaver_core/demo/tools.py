"""The operations assistant's tools over the demo store.

Side-effecting tools (`delete_records`, `issue_refund`, `send_email`) do their work through
`OpsStore.once(runtime.idempotency_key, ...)`: running the same call again returns the
first outcome instead of acting twice.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from beamweaver_core.agent.tools import ToolRuntime, tool
from beamweaver_core.demo import store as store_module
from beamweaver_core.demo.store import OpsStore

RecordStatus = Literal["open", "closed", "archived"]


def current_store() -> OpsStore:
    """The store the tools act on (replaceable in tests)."""
    return store_module.STORE


@tool
def search_records(
    query: Annotated[str, "Words to look for in the customer name or subject."] = "",
    older_than_days: Annotated[int | None, "Only records older than this many days."] = None,
    status: RecordStatus | None = None,
    limit: int = 20,
) -> dict[str, Any]:
    """Search the customer support records. Read-only; use it before deleting anything."""
    now = datetime.now(UTC)
    found = current_store().matching_records(older_than_days, status, query)
    return {"count": len(found), "records": [r.to_dict(now) for r in found[:limit]]}


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order: customer, total, status and how much was already refunded."""
    order = current_store().orders.get(order_id)
    if order is None:
        raise LookupError(f"There is no order {order_id!r}.")
    return order.to_dict()


@tool
def delete_records(
    older_than_days: Annotated[int, "Delete records older than this many days."],
    status: RecordStatus | None = None,
    *,
    runtime: ToolRuntime,
) -> dict[str, Any]:
    """Permanently delete support records older than a number of days (optionally only
    those with a given status). Needs human approval."""
    store = current_store()

    def delete() -> dict[str, Any]:
        doomed = store.matching_records(older_than_days, status)
        with store.lock:
            for record in doomed:
                del store.records[record.id]
        return {"deleted": len(doomed), "record_ids": [r.id for r in doomed]}

    return store.once(runtime.idempotency_key, delete)


@tool
def issue_refund(
    order_id: str,
    amount: Annotated[float, "Amount in USD."],
    reason: str = "Customer request",
    *,
    runtime: ToolRuntime,
) -> dict[str, Any]:
    """Refund part or all of an order to the customer's original payment method."""
    store = current_store()

    def refund() -> dict[str, Any]:
        with store.lock:
            order = store.orders.get(order_id)
            if order is None:
                raise LookupError(f"There is no order {order_id!r}.")
            available = round(order.total - order.refunded, 2)
            if amount <= 0 or amount > available:
                raise ValueError(
                    f"A refund of ${amount:.2f} is not possible: ${available:.2f} of order {order_id} is refundable."
                )
            order.refunded = round(order.refunded + amount, 2)
        return {
            "order_id": order_id,
            "refunded": amount,
            "reason": reason,
            "customer": order.customer,
        }

    return store.once(runtime.idempotency_key, refund)


@tool
def send_email(to: str, subject: str, body: str, *, runtime: ToolRuntime) -> dict[str, Any]:
    """Send an email from the operations team."""
    store = current_store()

    def send() -> dict[str, Any]:
        with store.lock:
            store.outbox.append({"to": to, "subject": subject, "body": body})
            number = len(store.outbox)
        return {"sent": True, "to": to, "subject": subject, "message_number": number}

    return store.once(runtime.idempotency_key, send)


OPS_TOOLS = (search_records, lookup_order, delete_records, issue_refund, send_email)

__all__ = [
    "OPS_TOOLS",
    "current_store",
    "delete_records",
    "issue_refund",
    "lookup_order",
    "search_records",
    "send_email",
]
