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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.exceptions import BeamWeaverError, ThreadBusyError
from beamweaver_core.graph.compiled import CompiledGraph, Config
from beamweaver_core.models import Checkpoint, Run, Thread
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.signals import state_written
from beamweaver_core.types import END

BUSY_STATUSES = (Run.Status.WAITING, Run.Status.QUEUED, Run.Status.RUNNING)
MAX_VALUE = 100_000
"""Characters of one edited value's JSON at most."""


class ForkError(BeamWeaverError, ValueError):
    """The fork cannot be made as asked (the message says why and what to do)."""


class QuestionPendingError(ForkError):
    """Writing as a node would go past a question of the step still unanswered."""


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


def _refuse_skipping_questions(graph: CompiledGraph, config: Config, as_node: str) -> None:
    asked = [i for i in graph.get_state(config).interrupts if i.timing is None]
    if asked:
        raise QuestionPendingError(
            f"The state cannot be written as node {as_node!r} here: the step waits on "
            f"{len(asked)} question(s) ({', '.join(i.id for i in asked)}), and writing as a "
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
    an unknown checkpoint, node or state key; `ThreadBusyError` while a run is active.
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
    "state_keys",
    "update_state",
]
