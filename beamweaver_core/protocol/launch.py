"""Starting and resuming runs from a run request: the one place the protocol turns a
`RunCreate` body into runtime calls.

- A run with input (or a `command` with `goto` / `update`) is `runtime.service.start_run`
  with the request's config, fork point, breakpoints and context as run options; a busy
  thread follows the `multitask_strategy` (reject: 409; enqueue: the run waits its turn;
  interrupt: the active runs are cancelled; rollback: rolled back). On a thread waiting
  for answers, a `goto` / `update` without `resume` changes it and runs the goto targets;
  the questions keep waiting.
- `command.resume` (a value, or a map of interrupt ids to values; `{"decisions": [...]}`
  for a tool review) and a run with no input on a thread paused at a breakpoint are
  answers: every one counts against the user's `RATE_DECISIONS` and goes through the
  decision service (`runtime.answers`), with its validation, review policy (nobody approves their own run: the token's user counts),
  audit, and one decision per interrupt. The resume run it queues is the run returned;
  the command's `goto` / `update` go with it (`runtime.service.add_command`), for those who
  may change the thread.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from beamweaver_core import ratelimit
from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import assistants, lookup, webhooks
from beamweaver_core.protocol.errors import ProtocolError, not_found
from beamweaver_core.protocol.messages import input_values
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.protocol.stopping import stop
from beamweaver_core.runtime import forks, service, thread_ids
from beamweaver_core.runtime.answers import (
    ACCEPTED,
    APPROVAL_RECORDED,
    AnswerOutcome,
    AnswerRequest,
    answers,
)
from beamweaver_core.types import Interrupt

REFUSAL_STATUS = {
    "not_found": 404,
    "key_reused": 422,
    "already_decided": 409,
    "gone": 409,
    "not_allowed": 403,
    "self_approval": 403,
    "claimed": 409,
    "stale": 409,
    "payload_changed": 409,
    "already_approved": 409,
    "invalid": 422,
    "busy": 409,
}
"""The decision service's refusals as protocol statuses."""

_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")
BUSY = "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
KWARGS = (
    "input",
    "command",
    "config",
    "context",
    "stream_mode",
    "stream_subgraphs",
    "interrupt_before",
    "interrupt_after",
    "checkpoint",
    "checkpoint_id",
    "webhook",
    "on_completion",
)


def launch(
    user: Any, thread_id: str | None, body: Mapping[str, Any], *, own_thread: str | None = None
) -> Run:
    """Start or resume a run as `body` asks (`thread_id=None`: a stateless run, on a
    thread of its own, `own_thread` if given); the run that will carry it out."""
    graph = _graph(user, str(body["assistant_id"]))
    if body.get("after_seconds"):
        raise ProtocolError(
            422, "Scheduled runs (after_seconds) are not supported; start the run when it is due."
        )
    webhook = webhooks.checked_url(body["webhook"]) if body.get("webhook") else ""
    thread = None if thread_id is None else _thread(user, thread_id, body)
    if thread is not None and thread.graph and thread.graph != graph:
        raise ProtocolError(
            422, f"Thread {thread.id!r} runs graph {thread.graph!r}; run it with that assistant."
        )
    command = body.get("command") or {}
    if "resume" in command:
        if thread is None:
            raise ProtocolError(
                409, "A new thread has no interrupt to resume; start it with input."
            )
        return _answer(user, thread, graph, body, webhook)
    if body.get("input") is None and thread is not None:
        # A run from a checkpoint (a replay) asks what is pending there, not at the
        # thread's head.
        try:
            fork = (_options(body) or {}).get("checkpoint_id")
        except ValueError as exc:
            raise ProtocolError(422, str(exc)) from None
        pending = _pending(thread, fork)
        asked = [i.id for i in pending if i.timing is None]
        if not _changes(body):
            # Nothing would answer them: the run would stop at the same questions again.
            try:
                forks.refuse_unanswered(thread.id, pending)
            except forks.QuestionPendingError as exc:
                raise ProtocolError(409, str(exc)) from None
        if pending and not asked and fork is None:
            # Continuing past a breakpoint, with a goto or update or without, is an answer.
            return _answer(user, thread, graph, body, webhook, breakpoints=pending)
    return _start(user, thread_id, thread, graph, body, webhook, own_thread)


def _within_decision_rate(user: Any) -> None:
    """429 past the user's decision rate (`RATE_DECISIONS`), the limit the inbox and the
    review API apply to the same user's decisions."""
    wait = ratelimit.hit("decide", str(user.pk), ratelimit.configured("RATE_DECISIONS"))
    if wait is not None:
        raise ProtocolError(429, f"Too many decisions in a short time; try again in {wait} s.")


def _graph(user: Any, ident: str) -> str:
    name = assistants.graph_name(ident, user)
    if name is not None:
        return name
    try:
        uuid.UUID(ident)
    except ValueError:
        known = ", ".join(assistants.names(user)) or "none"
        raise ProtocolError(
            422,
            f"Invalid assistant: {ident[:100]!r}. Must be either:\n- A valid assistant UUID, or\n"
            f"- One of the registered graphs: {known}",
        ) from None
    raise not_found(f"Assistant {ident!r}")


def _thread(user: Any, thread_id: str, body: Mapping[str, Any]) -> Thread | None:
    """The visible thread, read with whether it is busy (`lookup.with_busy`: a resume and
    a multitask strategy ask) and, for a run without input (an answer, or a continuation),
    with its latest run's options (`lookup.with_latest_options`: its pending interrupts are
    read); `None` for one `if_not_exists="create"` will create."""
    found = lookup.visible_thread(
        user, thread_id, busy=True, latest_options=body.get("input") is None
    )
    if found is not None:
        return found
    if body.get("if_not_exists") != "create" or Thread.objects.filter(id=thread_id).exists():
        raise not_found(f"Thread {thread_id!r}")
    thread_ids.check(thread_id)
    return None


def _pending(thread: Thread, checkpoint_id: str | None = None) -> tuple[Interrupt, ...]:
    snapshot = lookup.snapshot(thread, checkpoint_id)
    return snapshot.interrupts if snapshot is not None else ()


def _answers(thread: Thread, value: Any) -> dict[str, Any]:
    """`command.resume` as `{interrupt_id: answer}` for the thread's pending interrupts."""
    pending = [i.id for i in _pending(thread)]
    if not pending:
        raise ProtocolError(
            409, f"Thread {thread.id!r} has no pending interrupt to resume; start a run with input."
        )
    if isinstance(value, Mapping) and value and set(value) <= set(pending):
        return dict(value)
    if isinstance(value, Mapping) and value and all(_INTERRUPT_ID.fullmatch(str(k)) for k in value):
        unknown = sorted(set(value) - set(pending))
        raise ProtocolError(
            409,
            f"Interrupt(s) {unknown} are not pending on thread {thread.id!r} (stale or unknown); "
            f"pending: {pending}.",
        )
    if len(pending) == 1:
        return {pending[0]: value}
    raise ProtocolError(
        422,
        f"Thread {thread.id!r} has {len(pending)} pending interrupts ({', '.join(pending)}): "
        "resume with a map {interrupt_id: answer}.",
    )


def _answer(
    user: Any,
    thread: Thread,
    graph: str,
    body: Mapping[str, Any],
    webhook: str,
    *,
    breakpoints: tuple[Interrupt, ...] = (),
) -> Run:
    """A decision over `/lg`: `command.resume`'s answers, or continuing the thread past
    its pending `breakpoints`. Every one counts against the user's decision rate first,
    even one refused afterwards."""
    _within_decision_rate(user)
    if breakpoints:
        chosen: dict[str, Any] = {i.id: None for i in breakpoints}
    else:
        chosen = _answers(thread, body["command"]["resume"])
    refused = [
        k
        for k in ("checkpoint", "checkpoint_id", "interrupt_before", "interrupt_after")
        if body.get(k)
    ]
    if refused or body.get("input") is not None:
        raise ProtocolError(
            422,
            f"A resume answers the pending interrupts only; {', '.join(refused) or 'input'} cannot "
            "be combined with it (update the state first, or start a new run).",
        )
    changes = _changes(body)
    if changes:
        # Answering is a decision; the goto / update change the thread as well.
        lookup.may_change(user, thread)
        try:
            service.check_start(graph, None, options=changes)
        except ValueError as exc:
            raise ProtocolError(422, str(exc)) from None
    if lookup.busy(thread):
        raise ProtocolError(409, "The thread is running; resume it once it has paused.")
    # The resume run's protocol record commits with the decision: workers are woken when
    # the decision commits, and a later insert referencing the run would hold its row
    # (`FOR KEY SHARE`) while a woken worker's claim skips locked runs, leaving the run
    # to the next poll. Nothing raises inside: a refusal keeps what the service stored.
    with transaction.atomic():
        outcome = answers().answer(AnswerRequest(user=user, thread_id=thread.id, answers=chosen))
        run = outcome.run if outcome.code in (ACCEPTED, APPROVAL_RECORDED) else None
        if changes:
            # The answers and the changes are one request: all of it is taken, or none.
            run = _with_changes(outcome, changes)
        if run is not None:
            # A run that an earlier answer of the thread queued keeps its record, so the
            # answer reads the stored one (by id: this one is not cached as `run.protocol`).
            ProtocolRun.objects.bulk_create(
                [ProtocolRun(run_id=run.pk, **_record(graph, body, webhook, stateless=False))],
                ignore_conflicts=True,
            )
    if run is None:
        raise _refusal(outcome)
    return run


def _changes(body: Mapping[str, Any]) -> dict[str, Any]:
    """The command's `goto` / `update` as run options (`{}` without either)."""
    try:
        options = _options(body) or {}
    except ValueError as exc:
        raise ProtocolError(422, f"Invalid input: {exc}") from None
    return {k: options[k] for k in ("goto", "update") if options.get(k)}


def _with_changes(outcome: AnswerOutcome, changes: dict[str, Any]) -> Run:
    """The resume run the accepted answers queued, made to apply `changes` as well; a
    refusal of either is raised, taking back the decisions of the request."""
    if outcome.code != ACCEPTED or outcome.run is None:
        if outcome.code == APPROVAL_RECORDED:
            raise ProtocolError(
                409,
                "The approval counts towards the item's quorum but does not resume the thread "
                "yet, so command.goto / command.update have no run to go with: approve "
                "without them, or send them with the last approval.",
            )
        raise _refusal(dataclasses.replace(outcome, answered=()))
    try:
        return service.add_command(outcome.run, **changes)
    except ThreadBusyError as exc:
        raise ProtocolError(409, str(exc)) from None
    except ValueError as exc:
        raise ProtocolError(422, str(exc)) from None


def _refusal(outcome: AnswerOutcome) -> ProtocolError:
    if outcome.code == APPROVAL_RECORDED:
        return ProtocolError(202, outcome.message)
    detail = outcome.message
    if outcome.problems:
        detail += " " + " ".join(str(p.get("message", "")) for p in outcome.problems)
    if outcome.interrupt_id:
        detail = f"Interrupt {outcome.interrupt_id}: {detail}"
    if outcome.answered:
        detail += (
            f" (Interrupt(s) {', '.join(outcome.answered)} of the same request were answered "
            f"and resume the thread as run {outcome.run_id}.)"
        )
    return ProtocolError(REFUSAL_STATUS[outcome.code], detail)


def _start(
    user: Any,
    thread_id: str | None,
    thread: Thread | None,
    graph: str,
    body: Mapping[str, Any],
    webhook: str,
    own_thread: str | None,
) -> Run:
    stateless = thread_id is None
    target = thread.id if thread is not None else (thread_id or own_thread or str(uuid.uuid4()))
    if body.get("input") is None and thread is None:
        raise ProtocolError(422, "A new thread needs input to start from.")
    try:
        values = input_values(body["input"]) if body.get("input") is not None else None
    except ValueError as exc:
        raise ProtocolError(422, f"Invalid input: {exc}") from None
    # Everything the run could be refused for is checked before the strategy stops the
    # thread's active runs: a refused request changes nothing.
    try:
        options = _options(body)
        service.check_start(graph, values, user=user, context=body.get("context"), options=options)
    except ValueError as exc:
        raise ProtocolError(422, str(exc)) from None
    fork = (options or {}).get("checkpoint_id")
    if fork is not None:
        _fork_point(thread, fork)
    strategy = body.get("multitask_strategy") or "enqueue"
    if thread is not None and lookup.busy(thread):
        _make_room(user, thread, strategy)
    metadata = {"graph_id": graph, "assistant_id": assistants.assistant_id(graph)}
    try:
        with transaction.atomic():
            if thread is not None:
                # New work on a thread is its owners' to start, as changing it is (a run
                # that answers a question is a decision instead, `_answer`): checked under
                # the thread's lock until the run is queued, as the thread page's fork is.
                # A pause that hides the thread, or asks what the caller may not reject,
                # updates the thread's row before it writes its review items.
                lookup.changeable(user, thread.id)
            elif not stateless:
                lookup.claimed(user, target)
            run = service.start_run(
                graph,
                values,
                thread_id=target,
                user=user,
                metadata=metadata,
                context=body.get("context"),
                options=options,
                enqueue=strategy == "enqueue",
            )
            ProtocolRun.objects.create(
                run=run, **_record(graph, body, webhook, stateless=stateless)
            )
    except ThreadBusyError:
        raise ProtocolError(409, BUSY) from None
    except (ValueError, TypeError) as exc:
        if isinstance(exc, thread_ids.InvalidThreadIdError):
            raise
        raise ProtocolError(422, str(exc)) from None
    return run


def _make_room(user: Any, thread: Thread, strategy: str) -> None:
    """Apply the multitask strategy to the thread's active runs."""
    if strategy == "reject":
        raise ProtocolError(409, BUSY)
    if strategy == "enqueue":
        return
    # Before any run is stopped (a refused request stops nothing); the start checks again.
    lookup.may_change(user, thread)
    active = Run.objects.filter(thread=thread, status__in=lookup.ACTIVE).order_by("created_at")
    stop(user, list(active), strategy)


def _fork_point(thread: Thread | None, checkpoint_id: str) -> None:
    """404 unless the thread has the checkpoint the run is to start from (a new thread has
    none), as reading the state at an unknown checkpoint answers."""
    if thread is None:
        raise not_found(f"Checkpoint {checkpoint_id!r}")
    lookup.snapshot(thread, checkpoint_id)


def _options(body: Mapping[str, Any]) -> dict[str, Any] | None:
    command = body.get("command") or {}
    checkpoint = (body.get("checkpoint") or {}).get("checkpoint_id") or body.get("checkpoint_id")
    config = body.get("config") or {}
    checkpoint = checkpoint or (config.get("configurable") or {}).get("checkpoint_id")
    options = {
        "config": {k: v for k, v in config.items() if k in ("recursion_limit", "configurable")}
        or None,
        "checkpoint_id": checkpoint,
        "interrupt_before": body.get("interrupt_before"),
        "interrupt_after": body.get("interrupt_after"),
        "goto": _goto(command.get("goto")),
        "update": input_values(command["update"]) if command.get("update") else None,
    }
    return {k: v for k, v in options.items() if v is not None} or None


def _goto(goto: Any) -> Any:
    """`command.goto` as run options take it: node names as given, a send (`{"node",
    "input"}`, LangGraph's `Send`) with an object input read as run input is."""
    if isinstance(goto, list):
        return [_goto(target) for target in goto]
    if isinstance(goto, Mapping):
        given = goto["input"]
        return {
            "node": goto["node"],
            "input": input_values(given) if isinstance(given, Mapping) else given,
        }
    return goto


def _record(
    graph: str, body: Mapping[str, Any], webhook: str, *, stateless: bool
) -> dict[str, Any]:
    modes = body.get("stream_mode") or ["values"]
    kwargs = {k: body.get(k) for k in KWARGS if k in body}
    kwargs["stream_mode"] = [modes] if isinstance(modes, str) else list(modes)
    kwargs["resumable"] = True
    return {
        "assistant_id": assistants.assistant_id(graph),
        "metadata": dict(body.get("metadata") or {}),
        "multitask_strategy": body.get("multitask_strategy") or "enqueue",
        "kwargs": kwargs,
        "stateless": stateless,
        "on_completion": (body.get("on_completion") or "delete") if stateless else "",
        "webhook": webhook,
    }


__all__ = ["REFUSAL_STATUS", "launch"]
