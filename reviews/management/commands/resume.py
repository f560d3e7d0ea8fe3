"""`manage.py resume THREAD_ID (--value JSON | --decisions JSON) [--interrupt ID]
[--user USERNAME] [--wait | --no-wait]`: answer a pending review item exactly as the inbox
would, then run the resumed run to its next pause or end in this process (or wait for a
worker to, or only queue it)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet

from beamweaver_core.models import Run
from beamweaver_core.runtime.foreground import run_outcome, run_to_pause, wait_for_run
from beamweaver_core.users import User, find_user, username_field
from reviews import payloads
from reviews.http_statuses import http_status
from reviews.models import Decision, ReviewItem
from reviews.permissions import can_review
from reviews.services import DecisionRequest, decide

SYSTEM_USERNAME = "beamweaver-system"


def system_user() -> User:
    """The reviewer commands decide as when no `--user` is given (cannot log in)."""
    model = get_user_model()
    # Only the fields this user model has (a host's may have no first or last name).
    names = {f.name for f in model._meta.get_fields()}
    defaults = {"first_name": "BeamWeaver", "last_name": "system"}
    user, created = model._default_manager.get_or_create(
        **{username_field(): SYSTEM_USERNAME},
        defaults={k: v for k, v in defaults.items() if k in names},
    )
    if created:
        user.set_unusable_password()
        user.save()
    if not can_review(user):
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="reviews", codename="review")
        )
        user = model.objects.get(pk=user.pk)
    return user


class Command(BaseCommand):
    help = (
        "Answer a pending review item of a thread through the same decision service as the "
        "inbox (same validation, same audit). Tool reviews take --decisions (a JSON list, one "
        'decision per action request, e.g. \'[{"type": "approve"}]\'); interrupt() '
        "questions take --value (any JSON); breakpoints take --value null. Exit status 0 "
        "when the decision (or one approval of several) is recorded, 1 when it is refused "
        "(the reason is printed). --note keeps a private note for the audit. The decision "
        "queues the resumed run; by default this command then runs it to its next pause or "
        "end in its own process (through the same durable claim a worker takes; if a "
        "worker has it already, it waits for the worker), --wait waits for a worker to "
        "run it instead, --no-wait only queues it. The outcome (with the run's, as "
        "run_graph prints it, under --json) is printed. Exit status 2 when the resumed run "
        "fails, 3 when it is still unfinished after --timeout seconds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("thread_id", help="The thread whose pending item to answer.")
        answer = parser.add_mutually_exclusive_group(required=True)
        answer.add_argument("--value", help="The answer as JSON (interrupt() questions).")
        answer.add_argument("--decisions", help="Tool review decisions as a JSON list.")
        parser.add_argument(
            "--interrupt", default=None, help="The interrupt id (when several are pending)."
        )
        parser.add_argument(
            "--user",
            default=None,
            help=f"Decide as this reviewer (default: the {SYSTEM_USERNAME!r} user).",
        )
        parser.add_argument(
            "--digest",
            default=None,
            help="The payload digest you reviewed (from `pending --json`); refused if it changed.",
        )
        parser.add_argument(
            "--decision-id",
            default=None,
            help="A client decision id; repeating the command with it does nothing twice.",
        )
        parser.add_argument(
            "--note", default="", help="A private note for the audit (never sent to the run)."
        )
        parser.add_argument(
            "--reason",
            default="",
            help="A preset rejection reason code (REVIEW_REJECTION_REASONS).",
        )
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="Print the outcome as JSON."
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--wait",
            action="store_const",
            const="wait",
            dest="mode",
            help="Wait for a worker to run the resumed run to its next pause or end.",
        )
        mode.add_argument(
            "--no-wait",
            action="store_const",
            const="queue",
            dest="mode",
            help="Only queue the resumed run (a worker runs it).",
        )
        parser.set_defaults(mode="here")
        parser.add_argument(
            "--timeout",
            type=float,
            default=600.0,
            help="Seconds to wait for the resumed run to pause or end (default 600).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["timeout"] <= 0:
            raise CommandError(
                f"--timeout must be a positive number of seconds, got {options['timeout']}."
            )
        user = self._user(options["user"])
        item = self._item(options["thread_id"], options["interrupt"], user)
        text = options["decisions"] if options["decisions"] is not None else options["value"]
        problems: list[dict[str, Any]] = []
        try:
            answer = payloads.parse_json(text)
        except payloads.PayloadError as exc:
            answer = None
            problems.append({"index": None, "field": "answer", "message": str(exc)})
        if not problems:
            answer, found = _shape(item, answer, options["decisions"] is not None)
            problems.extend(found)
        outcome = decide(
            DecisionRequest(
                item_id=item.pk,
                run_id=item.run_id,
                user=user,
                client_decision_id=options["decision_id"] or uuid.uuid4().hex,
                digest=options["digest"] or item.digest,
                interrupt_id=item.interrupt_id,
                answer=answer,
                problems=problems,
                source=Decision.Source.COMMAND,
                note=options["note"],
                reason=options["reason"],
            )
        )
        if not outcome.recorded:
            if options["as_json"]:
                shown = {**outcome.to_dict(), "status": http_status(outcome)}
                self.stdout.write(json.dumps(shown, indent=2, sort_keys=True))
            details = "".join(f"\n  - {p['message']}" for p in outcome.problems)
            status = http_status(outcome)
            raise CommandError(f"HTTP {status} {outcome.code}: {outcome.message}{details}")
        run = self._follow(outcome.decision, options["mode"], options["timeout"])
        if options["as_json"]:
            shown = {
                **outcome.to_dict(),
                "status": http_status(outcome),
                "run": None if run is None else run_outcome(run),
            }
            self.stdout.write(json.dumps(shown, indent=2, sort_keys=True))
        else:
            self.stdout.write(f"{outcome.message} Item #{item.pk}.")
            if run is not None:
                self.stdout.write(f"Resume run {run.id}: {_progress(run)}")
        if run is not None and run.status == Run.Status.FAILED:
            raise CommandError(f"Resume run {run.id} failed.", returncode=2)
        if (
            run is not None
            and run.status in (Run.Status.QUEUED, Run.Status.RUNNING)
            and options["mode"] != "queue"
        ):
            raise CommandError(
                f"The decision is recorded, but resume run {run.id} is still {run.status} after "
                f"{options['timeout']:g} s; a worker finishes it (see `manage.py pending`).",
                returncode=3,
            )

    def _follow(self, decision: Decision | None, mode: str, timeout: float) -> Run | None:
        """The resumed run (none while an item still waits for more approvals): run here,
        waited for, or as queued."""
        if decision is None or decision.resume_run_id is None:
            return None
        if mode == "here":
            return run_to_pause(decision.resume_run_id, owner="manage.py resume", timeout=timeout)
        if mode == "wait":
            return wait_for_run(decision.resume_run_id, timeout=timeout)
        return Run.objects.get(pk=decision.resume_run_id)

    def _user(self, username: str | None) -> User:
        if username is None:
            return system_user()
        user = find_user(username)
        if user is None or not can_review(user):
            raise CommandError(
                f"No active user {username!r} with the reviewer permission (reviews.review)."
            )
        return user

    def _item(self, thread_id: str, interrupt_id: str | None, user: User) -> ReviewItem:
        pending = ReviewItem.objects.visible_to(user).pending().filter(thread_id=thread_id)
        if interrupt_id is not None:
            item = pending.filter(interrupt_id=interrupt_id).first()
            if item is None:
                raise CommandError(
                    f"Thread {thread_id!r} has no pending interrupt {interrupt_id!r}; "
                    f"pending: {_ids(pending)}."
                )
            return item
        items = list(pending.order_by("created_at", "id"))
        if not items:
            raise CommandError(
                f"Thread {thread_id!r} has no pending review item (see `manage.py pending`)."
            )
        if len(items) > 1:
            raise CommandError(
                f"Thread {thread_id!r} has {len(items)} pending interrupts; choose one with "
                f"--interrupt: {_ids(pending)}."
            )
        return items[0]


def _progress(run: Run) -> str:
    """Where the resumed run got to, in words."""
    if run.status == Run.Status.INTERRUPTED:
        return "paused again for review (see `manage.py pending`)."
    if run.status == Run.Status.SUCCEEDED:
        return "completed."
    if run.status == Run.Status.FAILED:
        return f"failed: {run.error.splitlines()[0] if run.error else 'no error recorded'}"
    if run.status == Run.Status.QUEUED:
        return "queued; a worker resumes it (`manage.py beamweaver_worker` runs workers)."
    return f"{run.status}."


def _ids(items: QuerySet[ReviewItem]) -> str:
    return ", ".join(items.values_list("interrupt_id", flat=True)) or "none"


def _shape(item: ReviewItem, answer: Any, as_decisions: bool) -> tuple[Any, list[dict[str, Any]]]:
    """The answer in the shape the decision service expects for the item's kind."""
    if item.kind == ReviewItem.Kind.TOOL_REVIEW:
        if isinstance(answer, list):
            answer = {"decisions": answer}
        return answer, []
    if as_decisions:
        return answer, [
            {
                "index": None,
                "field": "answer",
                "message": f"Item #{item.pk} is a {item.get_kind_display().lower()}, not a tool "
                "review; answer it with --value.",
            }
        ]
    # A value for a breakpoint is refused by the decision service (continue: --value null).
    return answer, []
