"""Time travel on a thread: write state as a node would have (`update_state`, the
protocol's `POST /threads/{id}/state`), and replay or fork the thread from a past
checkpoint as a new durable run (the thread page's timeline, the protocol's runs with a
`checkpoint_id`).

A fork never rewrites the thread's history: `update_state` at a past checkpoint writes a
new checkpoint whose parent is that one, and the run continues from there (the engine's
fork, `RunLoop._fork`), so the old line stays as it was, beside the new branch. Each is
one transaction under the thread's row lock, which workers skip, so it never races a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.exceptions import BeamWeaverError, ThreadBusyError
from beamweaver_core.graph.compiled import CompiledGraph, Config
from beamweaver_core.models import Checkpoint, Run, Thread
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.signals import state_written
from beamweaver_core.types import END, Interrupt

BUSY_STATUSES = (Run.Status.WAITING, Run.Status.QUEUED, Run.Status.RUNNING)
MAX_VALUE = 100_000
"""Characters of one edited value's JSON at most."""


class ForkError(BeamWeaverError, ValueError):
    """The fork cannot be made as asked (the message says why and what to do)."""


class QuestionPendingError(ForkError):
    """Writing as a node, or running without the answers, would go past a question of the
    step still unanswered."""


@dataclass(frozen=True, slots=True)
class Fork:
    """A fork or replay: the run carrying it out, the checkpoint it started from, and the
    checkpoint the edit wrote (empty for a replay)."""

    run: Run
    from_checkpoint: str
    written_checkpoint: str = ""


def update_state(
    graph: CompiledGraph,
    thread_id: str,
    values: Mapping[str, Any] | None,
    *,
    as_node: str | None = None,
    checkpoint_id: str | None = None,
    user: Any = None,
) -> Config:
    """Write `values` as if `as_node` had returned them, at the thread's latest checkpoint
    or at `checkpoint_id`; the new checkpoint's config. Refused with `ThreadBusyError`
    while a run of the thread waits, is queued or runs.

    Questions (`interrupt()`, every tool review among them) are answered only through the
    decision service, so writing as a node at a checkpoint whose step waits on one is
    refused with `QuestionPendingError`: it would schedule what comes after the question
    without an answer (a reviewed tool call run unreviewed, or one that was rejected
    later, from a fork). Without `as_node` the question stays pending (its node runs again
    on the new state when it is answered); with `END` nothing runs, the questions are
    dropped and the thread is idle again. `state_written` tells the inbox which questions
    are still pending."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    if checkpoint_id:
        config["configurable"]["checkpoint_id"] = checkpoint_id
    with transaction.atomic():
        locked = Thread.objects.select_for_update().get(id=thread_id)
        if Run.objects.filter(thread=locked, status__in=BUSY_STATUSES).exists():
            raise ThreadBusyError(
                f"Thread {thread_id!r} has an active run; update its state once it ends."
            )
        if as_node not in (None, END):
            _refuse_skipping_questions(graph, config, as_node)
        written = graph.update_state(config, values, as_node=as_node)
        after = graph.get_state({"configurable": {"thread_id": thread_id}})
        pending = tuple(i for i in after.interrupts if i.timing is None)
        if locked.status == Thread.Status.INTERRUPTED and not pending:
            locked.status = Thread.Status.IDLE
        locked.save(update_fields=["status", "updated_at"])
        state_written.send(sender=Thread, thread=locked, interrupts=pending, user=user)
    return written


def _questions(interrupts: Iterable[Interrupt]) -> list[str]:
    """The ids of the questions among a step's pending interrupts (`interrupt()`; a
    breakpoint is no question: continuing past it is the run)."""
    return [i.id for i in interrupts if i.timing is None]


def refuse_unanswered(thread_id: str, interrupts: Iterable[Interrupt]) -> None:
    """`QuestionPendingError` if a run without answers (a replay from the step, a fork
    whose edit leaves the questions pending) would start at a step waiting on the
    questions among `interrupts`: it would reach them again unanswered. Questions are
    answered only through the decision service (a resume). A run that changes the step
    (`command.goto` / `command.update`) is not such a run: the questions stay waiting."""
    asked = _questions(interrupts)
    if asked:
        raise QuestionPendingError(
            f"Thread {thread_id!r} waits for answers to interrupt(s) {', '.join(asked)} at "
            "this step: a run from here without them would ask them again. Answer them (in "
            "the inbox, or over /lg with command={'resume': ...}, a map of interrupt ids to "
            "answers for several), or run from another checkpoint."
        )


def _refuse_skipping_questions(graph: CompiledGraph, config: Config, as_node: str) -> None:
    asked = _questions(graph.get_state(config).interrupts)
    if asked:
        raise QuestionPendingError(
            f"The state cannot be written as node {as_node!r} here: the step waits on "
            f"{len(asked)} question(s) ({', '.join(asked)}), and writing as a "
            "node would go past them unanswered. Answer them (a run with command.resume, or "
            "in the inbox), or write without as_node (the node runs again on the new state "
            "when answered), or as __end__ (nothing runs)."
        )


def state_keys(graph: CompiledGraph, values: Mapping[str, Any]) -> list[str]:
    """The keys of `values` sorted, each checked against the graph's state keys."""
    keys = sorted(values)
    if graph.keys is not None:
        unknown = [k for k in keys if k not in graph.keys]
        if unknown:
            raise ForkError(
                f"{', '.join(map(repr, unknown))} is not a state key of graph {graph.name!r}; "
                f"its keys: {', '.join(sorted(graph.keys))}."
            )
    for key in keys:
        if len(json.dumps(values[key], ensure_ascii=False, default=str)) > MAX_VALUE:
            raise ForkError(f"The value of {key!r} is over {MAX_VALUE:,} characters of JSON.")
    return keys


def fork(
    thread_id: str,
    checkpoint_id: str,
    *,
    user: Any,
    values: Mapping[str, Any] | None = None,
    as_node: str | None = None,
) -> Fork:
    """Replay the thread from `checkpoint_id` (no `values`), or fork it there with
    `values` written as `as_node` (`update_state`), as a new queued run. `ForkError` for
    an unknown checkpoint, node or state key; `QuestionPendingError` where the step waits
    on a question the run would reach unanswered (`refuse_unanswered`; written as a node,
    `update_state` refuses); `ThreadBusyError` while a run is active.
    Who may is the caller's to check, under the thread's lock in its own transaction
    (`runtime.access.locked_if_visible`)."""
    thread = Thread.objects.filter(id=thread_id).first()
    if thread is None or not thread.graph:
        raise ForkError(f"Thread {thread_id!r} has no graph to fork.")
    if not Checkpoint.objects.filter(thread=thread, ns="", checkpoint_id=checkpoint_id).exists():
        raise ForkError(f"Thread {thread_id!r} has no checkpoint {checkpoint_id!r}.")
    graph = registry.compiled_graph(thread.graph, PostgresCheckpointer())
    if as_node is not None and as_node not in graph.nodes:
        raise ForkError(
            f"Graph {graph.name!r} has no node {as_node!r}; its nodes: {', '.join(graph.nodes)}."
        )
    if values is not None:
        state_keys(graph, values)
    if as_node is None:
        at = {"configurable": {"thread_id": thread.id, "checkpoint_id": checkpoint_id}}
        refuse_unanswered(thread.id, graph.get_state(at).interrupts)
    with transaction.atomic():
        # The lock first (the caller may hold it already): the busy check below, or
        # `update_state`'s, holds until the run is queued.
        Thread.objects.select_for_update().filter(id=thread.id).first()
        written = ""
        start = checkpoint_id
        if values:
            config = update_state(
                graph, thread.id, values, as_node=as_node, checkpoint_id=checkpoint_id, user=user
            )
            written = start = str(config["configurable"]["checkpoint_id"])
        elif Run.objects.filter(thread=thread, status__in=BUSY_STATUSES).exists():
            raise ThreadBusyError(
                f"Thread {thread_id!r} has an active run; replay it once it ends."
            )
        run = service.start_run(
            thread.graph, None, thread_id=thread.id, user=user, options={"checkpoint_id": start}
        )
    return Fork(run=run, from_checkpoint=checkpoint_id, written_checkpoint=written)


__all__ = [
    "BUSY_STATUSES",
    "Fork",
    "ForkError",
    "QuestionPendingError",
    "fork",
    "refuse_unanswered",
    "state_keys",
    "update_state",
]
