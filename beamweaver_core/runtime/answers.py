"""Answering a paused thread's interrupts from a way in above the runtime (the protocol
under `/lg`): the interface to the decision service, which the inbox app registers.

Every answer, however it arrives, goes through the decision service (validation, review
policy, audit, one decision per interrupt). The runtime cannot import it (it lives in the
`reviews` app, a layer above), so `reviews` registers an `AnswerService` at start-up
(`register_answers`, from its `AppConfig.ready`), as it registers its access policy
(`runtime.access`) and its receivers of the runtime's signals.

Outcomes are domain values (`AnswerOutcome.code`); the way in maps them to its statuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run
from beamweaver_core.users import User

ACCEPTED = "accepted"
"""Every answer was recorded as a decision; the thread resumes (`run_id`)."""

APPROVAL_RECORDED = "approval_recorded"
"""An approval was counted, but the item needs more approvals before the run resumes."""

REFUSALS = frozenset(
    {
        "not_found",  # no such interrupt pending, or the user may not see it
        "key_reused",
        "already_decided",
        "gone",  # cancelled, expired, or the run was cancelled
        "not_allowed",  # the review policy does not let the user decide it
        "self_approval",  # the user started the run and the answer lets it proceed
        "claimed",
        "stale",
        "payload_changed",
        "already_approved",
        "invalid",  # the answer fails validation (`problems`)
        "busy",  # the thread could not take the resume
    }
)
"""The codes of an answer the decision service refused (nothing of it was applied)."""


@dataclass(frozen=True)
class AnswerRequest:
    """Answers to a thread's pending interrupts, as one caller sent them.

    `answers` maps interrupt ids to answers: `{"decisions": [...]}` (or the bare list) for
    a tool review, any JSON value for a plain `interrupt()`, `None` for a breakpoint
    (continuing takes no value)."""

    user: User
    thread_id: str
    answers: Mapping[str, Any]
    source: str = "api"


@dataclass(frozen=True)
class AnswerOutcome:
    """What the decision service did with an `AnswerRequest`.

    `code` is `ACCEPTED`, `APPROVAL_RECORDED` or one of `REFUSALS`; for a refusal,
    `interrupt_id` names the refused answer and `answered` the interrupts of the same
    request that were decided before it (they stand, and resume the thread as `run`, the
    queued resume run, as the decision service left it in the caller's transaction).
    """

    code: str
    message: str
    run: Run | None = None
    interrupt_id: str | None = None
    answered: tuple[str, ...] = ()
    problems: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def accepted(self) -> bool:
        return self.code == ACCEPTED

    @property
    def run_id(self) -> UUID | None:
        return None if self.run is None else self.run.pk


class AnswerService(Protocol):
    """The decision service, as the ways in above the runtime call it."""

    def answer(self, request: AnswerRequest) -> AnswerOutcome:
        """Decide each answer in order through the decision service; stop at the first
        refusal."""


class AnswersNotConfiguredError(BeamWeaverError, LookupError):
    """No answer service is registered (the `reviews` app is not installed)."""


_service: AnswerService | None = None


def register_answers(service: AnswerService) -> None:
    """Install the answer service (the inbox app does, in its `AppConfig.ready`)."""
    global _service
    _service = service


def answers() -> AnswerService:
    """The registered answer service; `AnswersNotConfiguredError` without one."""
    if _service is None:
        raise AnswersNotConfiguredError(
            "No answer service is registered, so interrupts cannot be answered here: add "
            "'reviews.apps.ReviewsConfig' to INSTALLED_APPS (its decision service records "
            "every answer)."
        )
    return _service


__all__ = [
    "ACCEPTED",
    "APPROVAL_RECORDED",
    "REFUSALS",
    "AnswerOutcome",
    "AnswerRequest",
    "AnswerService",
    "AnswersNotConfiguredError",
    "answers",
    "register_answers",
]
