"""`/threads/{id}/state` and `/history`: read a thread's state (latest, at a checkpoint,
with subgraphs), update it (as a node, from a checkpoint), and list its history."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from django.db import transaction
from django.http import HttpRequest

from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.protocol import lookup, representations
from beamweaver_core.protocol.body import flag, json_body, number
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.protocol.messages import input_values
from beamweaver_core.runtime import forks
from beamweaver_core.types import StateSnapshot

SCAN_LIMIT = 1000
"""Checkpoints read at most to match a history `metadata` filter."""


def _empty(thread_id: str) -> dict[str, Any]:
    return {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": {},
        "created_at": None,
        "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None},
        "parent_checkpoint": None,
        "interrupts": [],
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
    }


def _state(user: Any, thread_id: str, checkpoint_id: str | None, subgraphs: bool) -> dict[str, Any]:
    thread = lookup.thread(user, thread_id, latest_options=True)
    snapshot = lookup.snapshot(thread, checkpoint_id, subgraphs=subgraphs)
    return representations.state(snapshot) if snapshot is not None else _empty(thread.id)


def get(
    request: HttpRequest, user: Any, thread_id: str, checkpoint_id: str | None = None
) -> dict[str, Any]:
    return _state(user, thread_id, checkpoint_id, flag(request.GET, "subgraphs"))


def at_checkpoint(request: HttpRequest, user: Any, thread_id: str) -> dict[str, Any]:
    body = json_body(request, "ThreadStateCheckpointRequest")
    checkpoint = body["checkpoint"]
    if checkpoint.get("checkpoint_ns"):
        raise ProtocolError(
            422,
            "Only checkpoints of the root namespace can be read here; read subgraphs' state "
            "with subgraphs=true.",
        )
    return _state(user, thread_id, checkpoint.get("checkpoint_id"), bool(body.get("subgraphs")))


def update(request: HttpRequest, user: Any, thread_id: str) -> dict[str, Any]:
    body = json_body(request, "ThreadStateUpdate")
    checkpoint_id = (body.get("checkpoint") or {}).get("checkpoint_id") or body.get("checkpoint_id")
    with transaction.atomic():
        # The thread's lock from the check to the write (`forks.update_state` takes it too).
        thread = lookup.changeable(user, thread_id)
        graph = lookup.require_graph(thread)
        try:
            values = input_values(body["values"]) if body.get("values") else None
        except ValueError as exc:
            raise ProtocolError(422, f"Invalid values: {exc}") from None
        try:
            written = forks.update_state(
                graph,
                thread.id,
                values,
                as_node=body.get("as_node"),
                checkpoint_id=checkpoint_id,
                user=user,
            )
        except ThreadBusyError:
            raise ProtocolError(
                409, f"Thread {thread_id!r} has an active run; update its state once it ends."
            ) from None
        except forks.QuestionPendingError as exc:
            raise ProtocolError(409, str(exc)) from None
        except TypeError as exc:
            raise ProtocolError(422, f"Invalid values: {exc}") from None
    return {"checkpoint": representations.checkpoint(written)}


def _before(value: Any) -> str | None:
    if isinstance(value, Mapping):
        found = value.get("checkpoint_id")
        return str(found) if found else None
    return str(value) if value else None


def _history(
    snapshots: Iterator[StateSnapshot], *, start: str | None, metadata: Mapping[str, Any]
) -> Iterator[StateSnapshot]:
    started = start is None
    for snapshot in itertools.islice(snapshots, SCAN_LIMIT):
        if not started:
            started = snapshot.config["configurable"].get("checkpoint_id") == start
            if not started:
                continue
        if all(snapshot.metadata.get(k) == v for k, v in metadata.items()):
            yield snapshot


def history(request: HttpRequest, user: Any, thread_id: str) -> list[dict[str, Any]]:
    if request.method == "GET":
        body: dict[str, Any] = {
            "limit": number(request.GET, "limit", 10, low=1, high=1000),
            "before": request.GET.get("before") or None,
        }
    else:
        body = json_body(request, "ThreadStateSearch")
    thread = lookup.thread(user, thread_id, latest_options=True)
    graph = lookup.graph(thread)
    if graph is None:
        return []
    start = (body.get("checkpoint") or {}).get("checkpoint_id")
    if (body.get("checkpoint") or {}).get("checkpoint_ns"):
        raise ProtocolError(422, "Only the root namespace's history can be listed.")
    snapshots = graph.get_state_history(
        {"configurable": {"thread_id": thread.id}}, before=_before(body.get("before"))
    )
    chosen = _history(snapshots, start=start, metadata=body.get("metadata") or {})
    return [representations.state(s) for s in itertools.islice(chosen, body.get("limit", 10))]


__all__ = ["at_checkpoint", "get", "history", "update"]
