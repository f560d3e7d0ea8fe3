"""What the decision service checks in an answer before storing it: the ids a request
must carry, the note and preset reason, and the answer itself (a tool review's decisions
validated and bound to what executes, a plain interrupt's value, a breakpoint's null).
Each problem has the shape of `InvalidDecisionError.problems` (`index`, `field`,
`message`); `reviews.services.decide` refuses a request with any of them as `invalid`.
"""

from __future__ import annotations

import re
from typing import Any

from beamweaver_core.agent import HITL
from beamweaver_core.exceptions import InvalidDecisionError, NotAReviewError
from beamweaver_core.redaction import REDACTED, redact, withheld
from reviews import payloads, reasons
from reviews.diffs import args_diff
from reviews.models import ReviewItem
from reviews.withheld_edits import placeholders_added, restore_withheld

CLIENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
MAX_NOTE_CHARS = 10_000
BREAKPOINT_TAKES_NO_ANSWER = (
    "A breakpoint takes no answer: continue it with null (no value), or cancel its run."
)


def note_problems(note: str, reason: str) -> list[dict[str, Any]]:
    problems = []
    if len(note) > MAX_NOTE_CHARS:
        problems.append(
            problem(None, "note", f"The note is longer than {MAX_NOTE_CHARS} characters.")
        )
    try:
        payloads.check_value(note, what="The note")
    except payloads.PayloadError as exc:
        problems.append(problem(None, "note", str(exc)))
    if reason and reasons.reason(reason) is None:
        known = ", ".join(r.code for r in reasons.rejection_reasons())
        problems.append(
            problem(None, "reason", f"Unknown rejection reason {reason!r}; use {known}.")
        )
    return problems


def decision_types(answer: Any) -> list[str]:
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        return [d["type"] for d in answer["decisions"]]
    return []


def bindings(answer: Any) -> list[dict[str, Any]] | None:
    found = [
        {"index": index, "digest": d["binding"]}
        for index, d in enumerate(answer.get("decisions", []) if isinstance(answer, dict) else [])
        if "binding" in d
    ]
    return found or None


def validate(
    item: ReviewItem, answer: Any, reason_code: str = ""
) -> tuple[Any, Any, str, list[dict[str, Any]]]:
    """The resume value (approvals and edits bound to what executes, preset reasons
    applied), the diff of edits, a summary, and the problems (if any)."""
    if item.kind == ReviewItem.Kind.BREAKPOINT:
        if answer is not None:  # it would be discarded, as the engine refuses it
            return None, None, "", [problem(None, "answer", BREAKPOINT_TAKES_NO_ANSWER)]
        return None, None, "continue", []
    try:
        payloads.check_value(answer)
        size = len(payloads.canonical(answer).encode())
    except payloads.PayloadError as exc:
        return None, None, "", [located(exc)]
    except ValueError as exc:
        return None, None, "", [problem(None, "answer", str(exc))]
    if item.kind == ReviewItem.Kind.INTERRUPT:
        if size > payloads.MAX_ANSWER_BYTES:
            return None, None, "", [problem(None, "answer", "The answer is larger than 64 KiB.")]
        return answer, None, "answer", []
    try:
        review = HITL.from_value(item.payload, item.interrupt_id)
    except NotAReviewError as exc:
        return None, None, "", [problem(None, "answer", str(exc))]
    try:
        decisions = HITL.validate_decisions(review, answer)
    except InvalidDecisionError as exc:
        return None, None, "", [dict(p) for p in exc.problems]
    problems: list[dict[str, Any]] = []
    diff: list[dict[str, Any]] = []
    decisions = tuple(
        _restored(d, a) for d, a in zip(decisions, review.action_requests, strict=True)
    )
    for index, (chosen, action) in enumerate(zip(decisions, review.action_requests, strict=True)):
        if chosen["type"] != "edit":
            continue
        args = chosen["edited_action"]["args"]
        original = payloads.plain(action.args)
        if withheld(original) and placeholders_added(args, original):
            problems.append(problem(index, "edited_action.args", PLACEHOLDER_KEPT))
            continue
        if len(payloads.canonical(args).encode()) > payloads.MAX_ANSWER_BYTES:
            problems.append(
                problem(index, "edited_action.args", "The edited arguments exceed 64 KiB.")
            )
            continue
        changes = args_diff(action.args, args)
        if changes:
            diff.append({"index": index, "tool": action.name, "changes": changes})
    preset = reasons.reason(reason_code) if reason_code else None
    if preset is not None:
        decisions = tuple(
            {**d, "message": preset.message}
            if d["type"] == "reject" and not d.get("message")
            else d
            for d in decisions
        )
    summary = ", ".join(d["type"] for d in decisions)
    bound = HITL.bind_decisions(review, decisions)
    return {"decisions": list(bound)}, diff or None, summary, problems


PLACEHOLDER_KEPT = (
    f"The edited arguments still hold {REDACTED}, a secret withheld from you: send the "
    "value as you were shown it to keep the original, or write it without the placeholder."
)


def _restored(chosen: dict[str, Any], action: Any) -> dict[str, Any]:
    """An edit with the values the reviewer left as shown to them (redacted) put back to
    the original (`reviews.withheld_edits`); other decisions as they are."""
    if chosen["type"] != "edit":
        return chosen
    original = payloads.plain(action.args)
    if not withheld(original):
        return chosen
    args = restore_withheld(chosen["edited_action"]["args"], redact(original), original)
    return {**chosen, "edited_action": {**chosen["edited_action"], "args": args}}


def check_ids(client_decision_id: str, digest: str) -> list[dict[str, Any]]:
    problems = []
    if not CLIENT_ID.match(client_decision_id or ""):
        problems.append(
            problem(
                None,
                "client_decision_id",
                "A client decision id (1-64 letters, digits, '.', '_', ':' or '-') is required.",
            )
        )
    if not DIGEST.match(digest or ""):
        problems.append(
            problem(None, "digest", "The digest of the payload you reviewed is required.")
        )
    return problems


def problem(index: int | None, field_name: str, message: str) -> dict[str, Any]:
    return {"index": index, "field": field_name, "message": message}


def located(exc: payloads.PayloadError) -> dict[str, Any]:
    """A refused value inside one decision (`decisions.N.field...`) is that decision's
    field problem, like a schema error there; anywhere else it is the answer's."""
    head, _, rest = exc.path.partition(".")
    index, _, field_name = rest.partition(".")
    if head == "decisions" and index.isdigit() and field_name:
        return problem(int(index), field_name, str(exc))
    return problem(None, "answer", str(exc))


def body_json(answer: Any) -> str:
    try:
        return payloads.canonical(answer)
    except (ValueError, TypeError):
        return payloads.canonical(repr(answer))


def jsonable_or_none(value: Any) -> Any:
    try:
        payloads.check_value(value)
        text = payloads.canonical(value)
    except (payloads.PayloadError, ValueError, TypeError):
        return None
    if len(text) > payloads.MAX_ANSWER_BYTES:
        return None
    return value


__all__ = [
    "BREAKPOINT_TAKES_NO_ANSWER",
    "MAX_NOTE_CHARS",
    "bindings",
    "body_json",
    "check_ids",
    "decision_types",
    "jsonable_or_none",
    "note_problems",
    "problem",
    "validate",
]
