"""What the admin shows of a thread: its decoded current state, its pending interrupts and
their review items, a page of its checkpoint history (decoded values, not the stored
deltas), and its latest runs and events; every value redacted by the pages' policy
(`beamweaver_core.redaction`).

Each part is a bounded number of queries whatever the thread's size: the history is read
`HISTORY_PAGE` checkpoints at a time (`before=` names the page), the runs and events are
the latest `RUNS_LIMIT` and `EVENTS_LIMIT`.

The review items are read through the reverse relation the review app adds to `Thread`
(`review_items`), by interrupt id, and linked by URL name: the admin is below the review
app and never imports it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import NoReverseMatch, reverse

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.checkpoint.types import Checkpoint as Saved
from beamweaver_core.models import Checkpoint, Run, RunEvent, Thread
from beamweaver_core.redaction import redact
from beamweaver_core.runtime import registry

logger = logging.getLogger(__name__)

HISTORY_PAGE = 20
RUNS_LIMIT = 20
EVENTS_LIMIT = 100


def as_json(value: Any) -> str:
    """`value` redacted, as indented JSON text (the template escapes it)."""
    return json.dumps(redact(_plain(value)), indent=2, sort_keys=True, ensure_ascii=False)


def _plain(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _plain(to_dict())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def url(name: str, *args: Any) -> str:
    """The URL named `name`, or "" where the project does not route it."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return ""


@dataclass(frozen=True)
class Pending:
    """A pending interrupt and the review item that asks a human about it."""

    interrupt_id: str
    node: str
    value: str
    item_admin_url: str = ""
    item_url: str = ""
    item_label: str = ""


@dataclass(frozen=True)
class State:
    """The thread's latest root checkpoint, decoded (`error` says why it could not be)."""

    values: str = ""
    next: tuple[str, ...] = ()
    checkpoint_id: str = ""
    pending: tuple[Pending, ...] = ()
    error: str = ""


def current_state(thread: Thread) -> State:
    """The latest state, with the graph's view of what is pending when the graph is
    registered (interrupts of subgraphs included), else the stored checkpoint alone."""
    try:
        if thread.graph and thread.graph in registry.registered_names():
            graph = registry.compiled_graph(thread.graph, PostgresCheckpointer())
            snapshot = graph.get_state({"configurable": {"thread_id": thread.id}})
            config = snapshot.config.get("configurable", {}) if snapshot.config else {}
            interrupts = [(i.id, i.node or "", i.value) for i in snapshot.interrupts]
            return State(
                values=as_json(snapshot.values),
                next=tuple(snapshot.next),
                checkpoint_id=str(config.get("checkpoint_id") or ""),
                pending=_with_items(thread, interrupts),
            )
        saved = PostgresCheckpointer().load(thread.id)
    except Exception as exc:  # a graph that no longer loads must not break the admin
        logger.warning("Cannot read the state of thread %s: %s", thread.id, exc)
        return State(error=f"The state cannot be read: {type(exc).__name__}.")
    if saved is None:
        return State(error="The thread has no checkpoint yet.")
    interrupts = [
        (i.id, i.node or "", i.value)
        for record in saved.records.values()
        if record.status == "interrupted"
        for i in record.interrupts
    ]
    return State(
        values=as_json(saved.values),
        next=tuple(t.name for t in saved.tasks),
        checkpoint_id=saved.id,
        pending=_with_items(thread, interrupts),
    )


def _with_items(thread: Thread, interrupts: Sequence[tuple[str, str, Any]]) -> tuple[Pending, ...]:
    """The interrupts with their review items (one query)."""
    related = getattr(thread, "review_items", None)
    items = {}
    if related is not None and interrupts:
        ids = [interrupt_id for interrupt_id, _, _ in interrupts]
        items = {item.interrupt_id: item for item in related.filter(interrupt_id__in=ids)}
    pending = []
    for interrupt_id, node, value in interrupts:
        item = items.get(interrupt_id)
        pending.append(
            Pending(
                interrupt_id=interrupt_id,
                node=node,
                value=as_json(value),
                item_admin_url=url("admin:reviews_reviewitem_change", item.pk) if item else "",
                item_url=url("reviews:item", item.pk) if item else "",
                item_label=str(item) if item else "",
            )
        )
    return tuple(pending)


@dataclass(frozen=True)
class Step:
    """One checkpoint of the history: what changed there and the values after it."""

    seq: int
    step: int
    source: str
    created_at: datetime
    checkpoint_id: str
    changed: tuple[str, ...]
    values: str
    writer: str
    run_id: str
    admin_url: str = ""


@dataclass(frozen=True)
class HistoryPage:
    steps: tuple[Step, ...] = ()
    older: str = ""
    """The `before=` of the next (older) page, "" on the last one."""
    error: str = ""


def history(thread: Thread, before: str = "", size: int = HISTORY_PAGE) -> HistoryPage:
    """A page of the root checkpoints, newest first, from the one before `before`."""
    try:
        saved = list(
            PostgresCheckpointer().history(thread.id, before=before or None, limit=size + 1)
        )
    except Exception as exc:
        logger.warning("Cannot read the history of thread %s: %s", thread.id, exc)
        return HistoryPage(error=f"The history cannot be read: {type(exc).__name__}.")
    shown, more = saved[:size], len(saved) > size
    pks = dict(
        Checkpoint.objects.filter(
            thread=thread, ns="", checkpoint_id__in=[c.id for c in shown]
        ).values_list("checkpoint_id", "pk")
    )
    steps = tuple(_step(c, pks.get(c.id)) for c in shown)
    return HistoryPage(steps=steps, older=shown[-1].id if more and shown else "")


def _step(saved: Saved, pk: int | None) -> Step:
    metadata = saved.metadata if isinstance(saved.metadata, Mapping) else {}
    after = metadata.get("_after")  # the nodes whose writes made this checkpoint
    writer = ", ".join(map(str, after)) if isinstance(after, list) else ""
    return Step(
        seq=saved.seq,
        step=saved.step,
        source=saved.source,
        created_at=saved.created_at,
        checkpoint_id=saved.id,
        changed=tuple(sorted(k for k, v in saved.versions.items() if v == saved.seq)),
        values=as_json(saved.values),
        writer=writer,
        run_id=str(metadata.get("run_id") or ""),
        admin_url=url("admin:beamweaver_core_checkpoint_change", pk) if pk else "",
    )


@dataclass(frozen=True)
class EventLine:
    run_id: str
    seq: int
    event: str
    node: str
    data: str
    created_at: datetime


def runs(thread: Thread, limit: int = RUNS_LIMIT) -> list[Run]:
    """The thread's latest runs, newest first."""
    return list(Run.objects.filter(thread=thread).order_by("-created_at")[:limit])


def events(thread: Thread, limit: int = EVENTS_LIMIT) -> list[EventLine]:
    """The thread's latest stored run events, newest first."""
    rows = RunEvent.objects.filter(thread=thread).order_by("-created_at", "-seq")[:limit]
    return [
        EventLine(
            run_id=str(r.run_id),
            seq=r.seq,
            event=r.event,
            node=r.node,
            data=json.dumps(redact(r.data), sort_keys=True, ensure_ascii=False, default=repr),
            created_at=r.created_at,
        )
        for r in rows
    ]


__all__ = [
    "EVENTS_LIMIT",
    "HISTORY_PAGE",
    "RUNS_LIMIT",
    "HistoryPage",
    "Pending",
    "State",
    "Step",
    "current_state",
    "events",
    "history",
    "runs",
]
