"""Threads, states, checkpoints and runs as the protocol shows them (LangGraph's
shapes: `Thread`, `ThreadState`, `Checkpoint`, `Run`)."""

from __future__ import annotations

from typing import Any

from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol.assistants import assistant_id
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.protocol.values import interrupt, state_values, wire
from beamweaver_core.redaction import redact_text
from beamweaver_core.types import Interrupt, StateSnapshot, TaskInfo

RUN_STATUS: dict[str, str] = {
    Run.Status.WAITING: "pending",
    Run.Status.QUEUED: "pending",
    Run.Status.RUNNING: "running",
    # A run that paused for a human ended well; its thread is the one interrupted.
    Run.Status.INTERRUPTED: "success",
    Run.Status.SUCCEEDED: "success",
    Run.Status.FAILED: "error",
    Run.Status.CANCELLED: "interrupted",
}
"""Our run statuses as LangGraph's (`pending`, `running`, `success`, `error`,
`interrupted`)."""

THREAD_STATUS: dict[str, str] = {
    Thread.Status.INTERRUPTED: "interrupted",
    Thread.Status.FAILED: "error",
}
"""Our thread statuses other than idle as LangGraph's; a thread with an active run is
`busy` whatever its status."""


def time(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def thread_status(thread: Thread, busy: bool) -> str:
    if busy:
        return "busy"
    return THREAD_STATUS.get(thread.status, "idle")


TASK_PATH_KINDS = {"pull": "__pregel_pull", "push": "__pregel_push"}
"""The first segment of our task paths as LangGraph's (its `PULL` and `PUSH`)."""


def namespace(ns: str) -> str:
    """Our checkpoint namespace (`node:task|graph|node:task|graph`) as LangGraph's
    (`node:task|node:task`): the segments naming a task."""
    return "|".join(part for part in ns.split("|") if ":" in part)


def asked(interrupts: tuple[Interrupt, ...]) -> list[Interrupt]:
    """The questions among a state's interrupts: static breakpoints are not shown as
    interrupts (as on LangGraph's server, where a run continues past them with no input)."""
    return [i for i in interrupts if i.timing is None]


def thread(
    thread: Thread, snapshot: StateSnapshot | None, *, busy: bool, error: str | None = None
) -> dict[str, Any]:
    """A thread with its values and pending interrupts by task."""
    interrupts: dict[str, list[dict[str, Any]]] = {}
    if snapshot is not None:
        for task in snapshot.tasks:
            questions = asked(task.interrupts)
            if questions:
                interrupts[task.id] = [interrupt(i) for i in questions]
    values = (
        state_values(snapshot.values)
        if snapshot is not None and snapshot.config.get("configurable", {}).get("checkpoint_id")
        else None
    )
    return {
        "thread_id": thread.id,
        "created_at": time(thread.created_at),
        "updated_at": time(thread.updated_at),
        "state_updated_at": time(thread.updated_at),
        "metadata": thread.metadata or {},
        "status": thread_status(thread, busy),
        "config": {},
        "values": values,
        "interrupts": interrupts,
        "error": error,
    }


def checkpoint(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """`{"thread_id", "checkpoint_ns", "checkpoint_id"}` of a snapshot's config."""
    if not config:
        return None
    configurable = config.get("configurable") or {}
    if not configurable.get("checkpoint_id"):
        return None
    return {
        "thread_id": configurable.get("thread_id"),
        "checkpoint_ns": namespace(configurable.get("checkpoint_ns", "")),
        "checkpoint_id": configurable["checkpoint_id"],
    }


def state(snapshot: StateSnapshot) -> dict[str, Any]:
    """A `ThreadState`."""
    current = checkpoint(snapshot.config)
    parent = checkpoint(snapshot.parent_config)
    if current is None:  # a thread with no checkpoint yet
        configurable = snapshot.config.get("configurable") or {}
        current = {
            "thread_id": configurable.get("thread_id"),
            "checkpoint_ns": "",
            "checkpoint_id": None,
        }
    return {
        "values": state_values(snapshot.values),
        "next": list(snapshot.next),
        "tasks": [_task(t) for t in snapshot.tasks],
        "metadata": wire(snapshot.metadata),
        "created_at": time(snapshot.created_at),
        "checkpoint": current,
        "parent_checkpoint": parent,
        "interrupts": [interrupt(i) for i in asked(snapshot.interrupts)],
        "checkpoint_id": current["checkpoint_id"],
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }


def _task(task: TaskInfo) -> dict[str, Any]:
    child = task.state
    kind, *rest = task.path
    return {
        "id": task.id,
        "name": task.name,
        "path": wire([TASK_PATH_KINDS.get(kind, kind), *rest]),
        # The error a node, tool or model raised: its text is theirs (cut to length when
        # it was stored), shown as LangGraph's server shows it, credentials withheld.
        "error": redact_text(task.error) if task.error is not None else None,
        "interrupts": [interrupt(i) for i in asked(task.interrupts)],
        "checkpoint": _child_checkpoint(child) if isinstance(child, dict) else None,
        "state": state(child) if isinstance(child, StateSnapshot) else None,
        "result": wire(task.result) if task.result is not None else None,
    }


def _child_checkpoint(config: dict[str, Any]) -> dict[str, Any]:
    """Where a task's subgraph keeps its state (`{"thread_id", "checkpoint_ns"}`)."""
    configurable = dict(config.get("configurable") or {})
    configurable["checkpoint_ns"] = namespace(configurable.get("checkpoint_ns", ""))
    return configurable


def run(run: Run, record: ProtocolRun | None) -> dict[str, Any]:
    """A `Run` (runs started elsewhere than `/lg` have no protocol record: defaults)."""
    return {
        "run_id": str(run.id),
        "thread_id": run.thread_id,
        "assistant_id": record.assistant_id if record is not None else assistant_id(run.graph),
        "created_at": time(run.created_at),
        "updated_at": time(run.updated_at),
        "status": RUN_STATUS.get(run.status, "pending"),
        "metadata": record.metadata if record is not None else {},
        "multitask_strategy": record.multitask_strategy if record is not None else "reject",
        "kwargs": record.kwargs if record is not None else {},
    }


def error_of(run: Run | None) -> dict[str, str] | None:
    """A failed run's error as `{"error": type, "message": text}` (already redacted when
    the runtime recorded it; the traceback is left to the inbox and the logs)."""
    if run is None or run.status != Run.Status.FAILED:
        return None
    first = (run.error or "The run failed.").split("\n\n", 1)[0]
    kind, sep, message = first.partition(": ")
    if not sep or " " in kind:
        return {"error": "RunError", "message": first}
    return {"error": kind, "message": message}


__all__ = [
    "RUN_STATUS",
    "TASK_PATH_KINDS",
    "THREAD_STATUS",
    "asked",
    "checkpoint",
    "error_of",
    "namespace",
    "run",
    "state",
    "thread",
    "thread_status",
    "time",
]
