"""A thread's checkpoint history as a timeline: each step with what changed in the state
(field by field, lists as the items they gained) and what caused it (the input, the
nodes that ran, a decision, an update or a fork), the branches forks made beside the
main line, oldest branch first.

Read through the graph (`get_state_history`), so values are decoded, never raw deltas,
and redacted for display by the same policy as the rest of the page.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, overload

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.models import Run, Thread
from beamweaver_core.redaction import redact
from beamweaver_core.runtime import registry
from beamweaver_core.types import StateSnapshot
from reviews import payloads
from reviews.diffs import args_diff
from reviews.models import AuditEvent

logger = logging.getLogger(__name__)

LIMIT = 50
"""Checkpoints shown at most (the newest)."""
MAX_SHOWN = 300
"""Characters of a changed value shown (longer ones end with their length)."""


@dataclass(frozen=True)
class Step:
    """One checkpoint of the timeline."""

    checkpoint_id: str
    parent_id: str
    step: int
    source: str
    cause: str
    changes: tuple[dict[str, Any], ...]
    branch: int
    forked_from: str
    next: tuple[str, ...]
    created_at: datetime | str
    """When the checkpoint was written ("" when the checkpointer does not say)."""
    values: Mapping[str, Any]

    @property
    def short_id(self) -> str:
        return self.checkpoint_id[:12]


def timeline(thread: Thread, limit: int = LIMIT) -> list[Step]:
    """The thread's newest `limit` root checkpoints, newest first (empty on errors,
    which are logged: the page shows the rest)."""
    if not thread.graph:
        return []
    try:
        graph = registry.compiled_graph(thread.graph, PostgresCheckpointer())
        snapshots = list(
            graph.get_state_history({"configurable": {"thread_id": thread.id}}, limit=limit)
        )
    except Exception as exc:
        logger.warning("Cannot read the history of thread %s: %s", thread.id, exc)
        return []
    snapshots.reverse()  # oldest first, to number branches in the order they were made
    runs = _runs(snapshots)
    forks = _forks(thread)
    by_id = {_id(s): s for s in snapshots}
    values = {_id(s): redact(payloads.plain(s.values)) for s in snapshots}
    children: dict[str, list[str]] = {}
    branch: dict[str, int] = {}
    branches = 0
    steps = []
    for snapshot in snapshots:
        cid, parent = _id(snapshot), _parent(snapshot)
        siblings = children.setdefault(parent, [])
        siblings.append(cid)
        if parent in branch and len(siblings) == 1:
            branch[cid] = branch[parent]
        elif parent in branch or branches == 0:
            branch[cid] = branches
            branches += 1
        else:  # the parent is older than the window: the line it continues
            branch[cid] = 0
        before = values.get(parent)
        steps.append(
            Step(
                checkpoint_id=cid,
                parent_id=parent,
                step=int(snapshot.metadata.get("step", 0)),
                source=str(snapshot.metadata.get("source", "")),
                cause=_cause(snapshot, by_id.get(parent), runs, forks),
                changes=tuple(state_diff(before, values[cid]))
                if before is not None
                else tuple(state_diff({}, values[cid])),
                branch=branch[cid],
                forked_from=parent[:12] if len(siblings) > 1 else "",
                next=tuple(snapshot.next),
                created_at=snapshot.created_at or "",
                values=values[cid] if isinstance(values[cid], Mapping) else {},
            )
        )
    steps.reverse()
    return steps


def state_diff(before: Any, after: Any) -> list[dict[str, Any]]:
    """What changed between two states, readable: a list that grew lists the items it
    gained (`appended`), other values are compared field by field (`reviews.diffs`)."""
    before = before if isinstance(before, Mapping) else {}
    after = after if isinstance(after, Mapping) else {}
    changes: list[dict[str, Any]] = []
    rest_before: dict[str, Any] = {}
    rest_after: dict[str, Any] = {}
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if (
            isinstance(old, list)
            and isinstance(new, list)
            and len(new) > len(old)
            and payloads.canonical(new[: len(old)]) == payloads.canonical(old)
        ):
            changes.extend(
                {"field": key, "change": "appended", "before": None, "after": _short(item)}
                for item in new[len(old) :]
            )
            continue
        if key in before:
            rest_before[key] = old
        if key in after:
            rest_after[key] = new
    for change in args_diff(rest_before, rest_after):
        changes.append(
            {
                **change,
                "before": _clip(change["before"]),
                "after": _clip(change["after"]),
            }
        )
    return sorted(changes, key=lambda c: str(c["field"]))


def _short(value: Any) -> str:
    if isinstance(value, Mapping) and "role" in value:
        text = str(value.get("content") or "")
        calls = [
            str(c.get("name", "")) for c in value.get("tool_calls") or () if isinstance(c, Mapping)
        ]
        if calls:
            text += f" (calls {', '.join(calls)})"
        return _clip(f"{value['role']}: {text}")
    return _clip(payloads.canonical(value))


@overload
def _clip(text: str) -> str: ...


@overload
def _clip(text: None) -> None: ...


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}… ({len(text)} characters)"


def _id(snapshot: StateSnapshot) -> str:
    return str(snapshot.config["configurable"]["checkpoint_id"])


def _parent(snapshot: StateSnapshot) -> str:
    parent = snapshot.parent_config or {}
    return str((parent.get("configurable") or {}).get("checkpoint_id") or "")


def _runs(snapshots: list[StateSnapshot]) -> dict[str, Run]:
    ids = {str(s.metadata.get("run_id")) for s in snapshots if s.metadata.get("run_id")}
    found: dict[str, Run] = {}
    for run in Run.objects.filter(id__in=_uuids(ids)).select_related("created_by"):
        found[str(run.id)] = run
    return found


def _uuids(ids: set[str]) -> list[str]:
    valid = []
    for text in ids:
        try:
            valid.append(str(uuid.UUID(text)))
        except ValueError:
            continue
    return valid


def _forks(thread: Thread) -> dict[str, AuditEvent]:
    """The audited forks of the thread by the checkpoint each wrote or started from."""
    found: dict[str, AuditEvent] = {}
    events = AuditEvent.objects.filter(thread_ref=thread.id, action=AuditEvent.Action.FORKED)
    for event in events.order_by("at")[:200]:
        detail = event.decision if isinstance(event.decision, Mapping) else {}
        for key in ("written_checkpoint", "run_id"):
            if detail.get(key):
                found[str(detail[key])] = event
    return found


def _cause(
    snapshot: StateSnapshot,
    parent: StateSnapshot | None,
    runs: Mapping[str, Run],
    forks: Mapping[str, AuditEvent],
) -> str:
    source = snapshot.metadata.get("source")
    run = runs.get(str(snapshot.metadata.get("run_id") or ""))
    who = run.created_by.get_username() if run is not None and run.created_by else ""
    if source == "input":
        return f"Input from {who}" if who else "Input"
    if source == "update":
        fork = forks.get(_id(snapshot))
        if fork is not None:
            node = (fork.decision or {}).get("as_node")
            return f"{fork.actor_name} edited the state (fork{f' as {node}' if node else ''})"
        return "State updated"
    if source == "fork":
        fork = forks.get(str(run.id)) if run is not None else None
        return f"{fork.actor_name} replayed it" if fork is not None else "Replay of an earlier step"
    ran = ", ".join(parent.next) if parent is not None and parent.next else ""
    if run is not None and run.kind == Run.Kind.RESUME:
        return f"{who} decided, then it ran {ran}" if who else f"Resumed, ran {ran}"
    return f"Ran {ran}" if ran else "Step"


__all__ = ["LIMIT", "Step", "state_diff", "timeline"]
