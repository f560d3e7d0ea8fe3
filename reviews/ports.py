"""What the inbox app provides to the ways in above the runtime (the protocol under
`/lg`): token authentication and visibility (`runtime.access`), and answers through the
decision service (`runtime.answers`). Registered in `ReviewsConfig.ready`."""

from __future__ import annotations

import uuid
from collections.abc import Hashable

from django.db import transaction
from django.db.models import QuerySet

from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime.answers import (
    ACCEPTED,
    APPROVAL_RECORDED,
    AnswerOutcome,
    AnswerRequest,
)
from beamweaver_core.users import User
from reviews.cancelling import cancel_refusal
from reviews.models import ApiToken, Decision, ReviewItem
from reviews.permissions import can_review, hidden_from_some, visible_threads
from reviews.roles import visibility
from reviews.services import DecisionRequest, decide
from reviews.thread_rights import change_refusal
from reviews.token_check import live_token


class ReviewsAccess:
    """API tokens act as their user; what a user sees is what the inbox shows them."""

    def authenticate(self, raw_token: str) -> User | None:
        token = live_token(raw_token)  # one statement, the user's permissions and groups primed
        if token is None or not can_review(token.user):
            return None
        token.touch()
        return token.user

    def visible_threads(self, user: User) -> QuerySet[Thread]:
        threads: QuerySet[Thread] = visible_threads(user)
        return threads

    def visibility(self, user: User) -> Hashable | None:
        # The same key as the inbox's visible items: what hides a thread is an item.
        return visibility(user) if can_review(user) else None

    def may_start(self, user: User, graph: str) -> bool:
        # As in the inbox's "Start a run": every reviewer may start every registered graph.
        return can_review(user)

    def cancel_refusal(self, user: User, run: Run) -> str | None:
        refusal = cancel_refusal(user, run)
        return refusal.message if refusal is not None else None

    def change_refusal(self, user: User, thread: Thread) -> str | None:
        refusal = change_refusal(user, thread)
        return refusal.message if refusal is not None else None

    def copy_refusal(self, thread: Thread) -> str | None:
        if not hidden_from_some(thread.id):
            return None
        return (
            f"Thread {thread.id!r} is hidden from some reviewers by its review items, and a "
            "copy has none: it would show them the thread, so it is not copied."
        )

    def issue_token(self, user: User, name: str) -> str:
        return ApiToken.objects.issue(user, name)[1]


class ReviewsAnswers:
    """Each answer is a decision of the decision service, taken as the token's user."""

    def answer(self, request: AnswerRequest) -> AnswerOutcome:
        # One transaction: the resume run that the first decision queues is not visible to
        # workers before the last answer has joined it, so the thread resumes once. No
        # savepoint inside a caller's transaction: a refusal returns, it does not raise.
        decided: list[str] = []
        recorded = False
        run = None
        with transaction.atomic(savepoint=False):
            for interrupt_id, value in request.answers.items():
                item = (
                    ReviewItem.objects.filter(
                        thread_id=request.thread_id, interrupt_id=interrupt_id
                    )
                    .only("pk", "digest", "kind", "run_id")
                    .first()
                )
                answer = value
                if item is not None and item.kind == ReviewItem.Kind.TOOL_REVIEW:
                    answer = {"decisions": value} if isinstance(value, list) else value
                outcome = decide(
                    DecisionRequest(
                        item_id=item.pk if item is not None else None,
                        run_id=item.run_id if item is not None else None,
                        user=request.user,
                        client_decision_id=f"lg-{uuid.uuid4().hex}",
                        digest=item.digest if item is not None else "",
                        answer=answer,
                        interrupt_id=interrupt_id,
                        source=Decision.Source.API,
                        minted_id=True,
                    )
                )
                if outcome.code == APPROVAL_RECORDED:
                    recorded = True
                    continue
                if not outcome.accepted:
                    return AnswerOutcome(
                        outcome.code,
                        outcome.message,
                        run=run,
                        interrupt_id=interrupt_id,
                        answered=tuple(decided),
                        problems=tuple(outcome.problems),
                    )
                decided.append(interrupt_id)
                if outcome.decision is not None and outcome.decision.resume_run_id is not None:
                    run = outcome.decision.resume_run
        if recorded:
            return AnswerOutcome(
                APPROVAL_RECORDED,
                "The approval was recorded; the run resumes once the other reviewers the "
                "item's policy requires have approved it.",
                run=run,
                answered=tuple(decided),
            )
        return AnswerOutcome(
            ACCEPTED, "Answered; the run resumes.", run=run, answered=tuple(decided)
        )


__all__ = ["ReviewsAccess", "ReviewsAnswers"]
