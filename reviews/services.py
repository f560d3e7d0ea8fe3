"""The decision service: the one way a review item is answered (the inbox, the `resume`
command and any API call `decide`).

`decide` runs in one transaction. It locks the run that paused on the item, its thread,
then the item (the order of `beamweaver_core.runtime.locks`), and refuses, in this order,
with the outcome code (`reviews.outcomes.Code`; the inbox and the API answer it with the
status in brackets, `reviews.http_statuses`):

- `not_found` (404): no such item, or the user may not see it (indistinguishable);
- `key_reused` (422): the client decision id was used by this user for another answer;
- `already_decided` (409): the item was decided (the message names who decided);
- `gone` (410): the item was cancelled (run cancelled, run moved on) or expired;
- `not_allowed` (403): the item's review policy does not let this user decide it;
- `claimed` (409): another reviewer claimed the item;
- `stale` (409): the answer names another interrupt than the item's;
- `payload_changed` (409): the digest the reviewer saw is not the item's digest;
- `self_approval` (403): the user started the run and the answer would let it proceed;
- `already_approved` (409): the user's approval is already counted (N-of-M items);
- `invalid` (422): the answer fails validation (`problems` lists every problem, with the
  same shape as `InvalidDecisionError.problems`: `index`, `field`, `message`);
- `busy` (409): the thread could not take the resume.

The policy refusals (`not_allowed`, `claimed`, `self_approval`, `already_approved`) are
the rules of `reviews.rules`, the same ones the item page's offer reads.
On an item that needs several approvals (`reviews.quorum`), an approval that is not yet
the last one is stored and answered with `approval_recorded` (202); the item stays
pending. Otherwise (`accepted`, 200) it stores the decision (one per item, enforced by a
unique constraint), appends the audit event and queues the resume through
`beamweaver_core.runtime.service.resume_thread`, in the run's own context (which names
who requested the run; the decider is recorded here, not put in it). Approvals and edits are bound to what
executes (`HITL.bind_decisions`): the resume value carries each one's execution digest,
and the middleware refuses a call that no longer matches it. The reviewer's private note
is stored with the decision and the audit event, never in the resume value; a preset
rejection reason fills the message of rejects that have none. Re-sending the same client
decision id with the same answer returns the first outcome again (`replayed=True`, its code
read from the stored decision); an id the caller minted for the request alone
(`DecisionRequest.minted_id`) is not looked up. Every refusal is appended to the audit
log as well.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from django.db import IntegrityError, transaction

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run
from beamweaver_core.runtime import service as runtime_service
from beamweaver_core.runtime.locks import run_and_thread
from beamweaver_core.users import User
from reviews import answers, outcomes, payloads, quorum, realtime
from reviews.models import Approval, AuditEvent, Decision, NotificationEvent, ReviewItem
from reviews.notifications import notify
from reviews.outcomes import Code, DecisionOutcome, DecisionRequest
from reviews.rules import decision_refusal

logger = logging.getLogger(__name__)


KEY_REUSED_ANSWER = (
    "This decision id was already used for a different answer; reload the item and decide again."
)
KEY_REUSED_ITEM = "This decision id was already used for another item; reload and decide again."


def _key_reused(request: DecisionRequest, item: ReviewItem, message: str) -> DecisionOutcome:
    """The one `key_reused` refusal: the user's client decision id names another answer."""
    return outcomes.refuse(request, item, Code.KEY_REUSED, message)


class _RunChanged(Exception):
    """The item moved to a newer run between reading it and locking it; try again."""


def decide(request: DecisionRequest) -> DecisionOutcome:
    """Answer a review item (see the module docstring for the contract)."""
    for _ in range(3):
        try:
            with transaction.atomic():
                return _decide(request)
        except _RunChanged:
            # The caller's run id is where the item was; read where it is now.
            request = dataclasses.replace(request, run_id=None)
    return DecisionOutcome(Code.BUSY, "The run moved on while deciding; reload and try again.")


def _decide(request: DecisionRequest) -> DecisionOutcome:
    visible = ReviewItem.objects.visible_to(request.user)
    try:
        item_id = None if request.item_id is None else int(request.item_id)
    except (TypeError, ValueError):
        item_id = None
    if item_id is None:
        return _not_found(request, None)
    run_id = request.run_id
    if run_id is None:
        run_id = visible.filter(pk=item_id).values_list("run_id", flat=True).first()
    if run_id is None:
        return _not_found(request, item_id)
    # The run, its thread, then the item (`runtime.locks`; the resume locks the thread
    # again): a cancel, a pause or a state write racing this decision waits for it or is
    # waited for, and never deadlocks with it. The item is read after its lock among those
    # the user sees: the caller's run id was read before.
    try:
        run, _ = run_and_thread(run_id)
    except Run.DoesNotExist:  # deleted since the item was read: read the item again
        raise _RunChanged from None
    item = visible.select_for_update().filter(pk=item_id).first()
    if item is None:
        return _not_found(request, item_id)
    if item.run_id != run.pk:
        raise _RunChanged
    body_json = answers.body_json(request.answer)

    replay = None if request.minted_id else _replayed_approval(request, item, body_json)
    if replay is not None:
        return replay
    prior = None if request.minted_id else _prior_decision(request)
    if prior is not None:
        if prior.item_id == item.pk and prior.body_json == body_json:
            return DecisionOutcome(
                Code(prior.outcome),
                "This decision was already recorded; nothing was done again.",
                item=item,
                decision=prior,
                replayed=True,
            )
        return _key_reused(request, item, KEY_REUSED_ANSWER)

    if item.status == ReviewItem.Status.DECIDED:
        decision = Decision.objects.select_related("user").filter(item=item).first()
        who = _who(decision, request.user)
        when = decision.created_at.strftime("%Y-%m-%d %H:%M:%S UTC") if decision else "earlier"
        what = decision.summary if decision else "a decision"
        return outcomes.refuse(
            request,
            item,
            Code.ALREADY_DECIDED,
            f"Already decided by {who} at {when} ({what}).",
            decision=decision,
        )
    if item.status in (ReviewItem.Status.CANCELLED, ReviewItem.Status.EXPIRED):
        reason = item.status_reason or item.status
        return outcomes.refuse(
            request, item, Code.GONE, f"This item is {item.status} ({reason}); nothing to decide."
        )
    if run.status == Run.Status.CANCELLED:
        return outcomes.refuse(
            request, item, Code.GONE, "The run was cancelled; nothing to decide."
        )
    refusal = decision_refusal(request.user, item, executes=False)
    if refusal is not None:
        return outcomes.refuse(request, item, refusal.code, refusal.message)
    if request.interrupt_id is not None and request.interrupt_id != item.interrupt_id:
        return outcomes.refuse(
            request,
            item,
            Code.STALE,
            "This answer is for another interrupt than the one pending; reload the item.",
        )

    id_problems = answers.check_ids(request.client_decision_id, request.digest)
    if id_problems:
        return outcomes.refuse(
            request,
            item,
            Code.INVALID,
            "The decision form is incomplete; reload the item.",
            problems=[*id_problems, *(dict(p) for p in request.problems)],
        )
    if request.digest != item.digest:
        return outcomes.refuse(
            request,
            item,
            Code.PAYLOAD_CHANGED,
            "The proposal changed since you loaded it; reload to see the current version.",
        )
    executes = quorum.executes(item, request.answer)
    refusal = decision_refusal(request.user, item, executes=executes)
    if refusal is not None:
        return outcomes.refuse(request, item, refusal.code, refusal.message)
    voting = quorum.applies(item) and executes
    answer, diff, summary = None, None, ""
    problems = [dict(p) for p in request.problems]
    if not problems:
        answer, diff, summary, problems = answers.validate(item, request.answer, request.reason)
    if not problems:
        problems = answers.note_problems(request.note, request.reason)
    if not problems and quorum.applies(item) and answer is not None:
        shortfall = quorum.problem(item, answer["decisions"]) if "decisions" in answer else None
        if shortfall:
            problems = [answers.problem(None, "answer", shortfall)]
    if problems:
        return outcomes.refuse(
            request,
            item,
            Code.INVALID,
            "The decision is not valid; correct the fields marked below.",
            problems=problems,
        )
    if voting:
        approvals = _vote(request, item, body_json)
        if len(approvals) < item.required_approvals:
            return _vote_recorded(request, item, approvals)
        summary = f"{summary} ({len(approvals)} of {item.required_approvals} approvals)"
    return _accept(request, item, answer=answer, body_json=body_json, diff=diff, summary=summary)


def _not_found(request: DecisionRequest, item_id: int | None) -> DecisionOutcome:
    """The 404 of an item the user may not see, audited against the item when it exists
    but is hidden from the user, so that only those who may see the item read the attempt
    (`visible_audit`); the answer stays the 404 of an item that does not exist."""
    hidden = ReviewItem.objects.filter(pk=item_id).first() if item_id is not None else None
    return outcomes.refuse(request, None, Code.NOT_FOUND, "No such review item.", audited=hidden)


def _prior_decision(request: DecisionRequest) -> Decision | None:
    """The user's decision under the request's client decision id, if any."""
    prior: Decision | None = (
        Decision.objects.filter(user=request.user, client_decision_id=request.client_decision_id)
        .select_related("item", "user")
        .first()
    )
    return prior


def _replayed_approval(
    request: DecisionRequest, item: ReviewItem, body_json: str
) -> DecisionOutcome | None:
    """The first outcome again for a re-sent approval that was not the deciding one."""
    prior = Approval.objects.filter(
        user=request.user, client_decision_id=request.client_decision_id
    ).first()
    if (
        prior is None
        or Decision.objects.filter(
            user=request.user, client_decision_id=request.client_decision_id
        ).exists()
    ):
        return None
    if prior.item_id == item.pk and prior.body_json == body_json:
        return DecisionOutcome(
            Code.APPROVAL_RECORDED,
            "This approval was already recorded; nothing was done again.",
            item=item,
            replayed=True,
        )
    return _key_reused(request, item, KEY_REUSED_ANSWER)


def _vote(request: DecisionRequest, item: ReviewItem, body_json: str) -> list[Approval]:
    """Store the user's approval (replacing one given on an older payload); the approvals
    that count now."""
    Approval.objects.filter(item=item, user=request.user).delete()
    Approval.objects.create(
        item=item,
        user=request.user,
        client_decision_id=request.client_decision_id,
        digest_seen=request.digest,
        body_json=body_json,
        note=request.note,
        source=request.source,
    )
    return quorum.counted(item)


def _vote_recorded(
    request: DecisionRequest, item: ReviewItem, approvals: list[Approval]
) -> DecisionOutcome:
    names = ", ".join(a.user.get_username() for a in approvals)
    left = item.required_approvals - len(approvals)
    message = (
        f"Approval recorded ({len(approvals)} of {item.required_approvals}: {names}); "
        f"waiting for {left} more from other reviewers."
    )
    item.save(update_fields=["updated_at"])
    outcomes.audit(
        request,
        item,
        AuditEvent.Action.APPROVED,
        Code.APPROVAL_RECORDED,
        message,
        summary="approve",
    )
    realtime.announce(realtime.UPDATED, item.pk, item.thread_id)
    return DecisionOutcome(Code.APPROVAL_RECORDED, message, item=item)


def _accept(
    request: DecisionRequest,
    item: ReviewItem,
    *,
    answer: Any,
    body_json: str,
    diff: Any,
    summary: str,
) -> DecisionOutcome:
    try:
        # The resume first, so the decision is inserted once, naming it; should the insert
        # still fail, the savepoint takes the resume back with it.
        with transaction.atomic():
            resume = runtime_service.resume_thread(
                item.thread_id, {item.interrupt_id: answer}, user=request.user
            )
            decision = Decision.objects.create(
                item=item,
                user=request.user,
                client_decision_id=request.client_decision_id,
                digest_seen=request.digest,
                body_json=body_json,
                answer_json=payloads.canonical(answer),
                summary=summary[:200],
                source=request.source,
                note=request.note,
                reason_code=request.reason,
                decision_types=answers.decision_types(answer),
                bindings=answers.bindings(answer),
                policy_version=item.policy_version,
                outcome=Code.ACCEPTED,
                resume_run=resume,
            )
    except IntegrityError:
        return _key_reused(request, item, KEY_REUSED_ITEM)
    except (BeamWeaverError, LookupError, ValueError) as exc:
        logger.warning("Resume of %s refused: %s", item.thread_id, exc)
        return outcomes.refuse(request, item, Code.BUSY, f"The run could not be resumed: {exc}")
    item.status = ReviewItem.Status.DECIDED
    item.decided_at = decision.created_at
    item.save(update_fields=["status", "decided_at", "updated_at"])
    outcomes.audit(
        request,
        item,
        AuditEvent.Action.DECIDED,
        Code.ACCEPTED,
        f"Decided ({summary}); resume queued as run {resume.pk}.",
        summary=summary,
        decision=answer,
        diff=diff,
        note=request.note,
    )
    realtime.announce(realtime.DECIDED, item.pk, item.thread_id)
    notify(NotificationEvent.DECIDED, item, actor=request.user)
    return DecisionOutcome(
        Code.ACCEPTED,
        f"Decision recorded ({summary}); the run resumes.",
        item=item,
        decision=decision,
    )


def _who(decision: Decision | None, user: User) -> str:
    if decision is None:
        return "another reviewer"
    if decision.user_id == getattr(user, "pk", None):
        return "you"
    return decision.user.get_username()


__all__ = ["DecisionOutcome", "DecisionRequest", "decide"]
