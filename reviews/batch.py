"""Batch decisions from the inbox list: approve or reject several items at once.

Every selected item goes through `reviews.services.decide` on its own (its own
transaction, validation, policy checks and audit), with the digest the reviewer saw in
the list, so a batch never applies something another reviewer changed meanwhile and one
refused item never holds up the others. The report says what happened to each one.
Re-sending the same batch (the same batch id) replays instead of deciding twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from beamweaver_core.agent import HITL
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.users import User
from reviews.models import Decision, ReviewItem
from reviews.outcomes import Code, Outcome
from reviews.services import DecisionRequest, decide

MAX_ITEMS = 100
ACTIONS = ("approve", "reject")
_SELECTION = re.compile(r"^(\d{1,18}):([0-9a-f]{64})$")


@dataclass(frozen=True)
class BatchLine:
    """One selected item of a batch and its outcome (`message` with the outcome's
    problems spelled out)."""

    item_id: int
    label: str
    outcome: Outcome

    @property
    def code(self) -> Code:
        return self.outcome.code

    @property
    def applied(self) -> bool:
        return self.outcome.recorded

    @property
    def message(self) -> str:
        detail = self.outcome.message
        if self.outcome.problems:
            detail += " " + " ".join(str(p.get("message", "")) for p in self.outcome.problems)
        return detail


@dataclass(frozen=True)
class BatchReport:
    """The per-item outcome of a batch, and its one-line summary."""

    action: str
    lines: tuple[BatchLine, ...] = field(default_factory=tuple)

    @property
    def applied(self) -> list[BatchLine]:
        return [line for line in self.lines if line.applied]

    @property
    def refused(self) -> list[BatchLine]:
        return [line for line in self.lines if not line.applied]

    @property
    def summary(self) -> str:
        """e.g. "7 applied, 1 refused because it was already decided by bob"."""
        waiting = sum(1 for line in self.applied if line.outcome.waiting)
        text = f"{len(self.applied)} applied"
        if waiting:
            text += f" ({waiting} waiting for more approvals)"
        refused = self.refused
        if not refused:
            return text + "."
        reasons = {line.message for line in refused}
        text += f", {len(refused)} refused"
        if len(reasons) == 1:
            only = reasons.pop()
            return f"{text} because: {only}"
        return f"{text} (see each item below)."

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "summary": self.summary,
            "applied": len(self.applied),
            "refused": len(self.refused),
            "items": [
                {"id": line.item_id, "code": str(line.code), "message": line.message}
                for line in self.lines
            ],
        }


def parse_selection(values: Iterable[str]) -> tuple[list[tuple[int, str]], list[str]]:
    """`"<item id>:<digest>"` values into pairs; the values that are not of that form."""
    chosen: list[tuple[int, str]] = []
    bad: list[str] = []
    for value in values:
        match = _SELECTION.match(str(value))
        if match is None:
            bad.append(str(value)[:80])
        elif int(match[1]) not in {pk for pk, _ in chosen}:
            chosen.append((int(match[1]), match[2]))
    return chosen, bad


def _label(item: ReviewItem | None, item_id: int) -> str:
    if item is None:
        return f"#{item_id}"
    return f"#{item.pk} " + (", ".join(item.tool_names) or item.get_kind_display().lower())


def _answer(item: ReviewItem, action: str, message: str) -> tuple[Any, str]:
    """The answer `action` makes for `item`, or a reason it cannot be batch-decided."""
    if item.kind == ReviewItem.Kind.INTERRUPT:
        return None, "A question needs a typed answer; open the item to answer it."
    if item.kind == ReviewItem.Kind.BREAKPOINT:
        if action == "approve":
            return None, ""
        return None, "A breakpoint can only be continued; open it to cancel its run instead."
    try:
        count = len(HITL.from_value(item.payload).action_requests)
    except NotAReviewError as exc:
        return None, str(exc)
    decision: dict[str, Any] = {"type": action}
    if action == "reject" and message:
        decision["message"] = message
    return {"decisions": [dict(decision) for _ in range(count)]}, ""


def decide_many(
    user: User,
    selection: list[tuple[int, str]],
    action: str,
    *,
    batch_id: str,
    message: str = "",
    reason: str = "",
    note: str = "",
    source: str = Decision.Source.WEB,
) -> BatchReport:
    """Approve or reject every selected item through `decide`; one line per item."""
    if action not in ACTIONS:
        raise ValueError(f"A batch approves or rejects, not {action!r}.")
    lines = []
    visible = ReviewItem.objects.visible_to(user)
    for item_id, digest in selection[:MAX_ITEMS]:
        item = visible.filter(pk=item_id).first()
        if item is None:
            lines.append(
                BatchLine(item_id, _label(None, item_id), Outcome(Code.NOT_FOUND, "No such item."))
            )
            continue
        answer, problem = _answer(item, action, message)
        if problem:
            lines.append(BatchLine(item_id, _label(item, item_id), Outcome(Code.INVALID, problem)))
            continue
        outcome = decide(
            DecisionRequest(
                item_id=item_id,
                run_id=item.run_id,
                user=user,
                client_decision_id=f"{batch_id}-{item_id}"[:64],
                digest=digest,
                interrupt_id=item.interrupt_id,
                answer=answer,
                source=source,
                note=note,
                reason=reason if action == "reject" else "",
            )
        )
        lines.append(BatchLine(item_id, _label(item, item_id), outcome))
    return BatchReport(action=action, lines=tuple(lines))


__all__ = ["ACTIONS", "MAX_ITEMS", "BatchLine", "BatchReport", "decide_many", "parse_selection"]
