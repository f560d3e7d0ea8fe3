"""What a finished run answers `runs.wait` and `runs.join` (and its webhook carries): the
thread's values, with `__interrupt__` when it paused on questions, or
`{"__error__": {"error", "message"}}` when it failed (with status 200, as LangGraph's
server answers; the SDK raises it)."""

from __future__ import annotations

from typing import Any

from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import lookup, representations
from beamweaver_core.protocol.values import interrupt


def result(run: Run, thread: Thread | None = None) -> dict[str, Any]:
    """The result body of a run that is no longer active; `thread`: the run's thread, if
    the caller has just read it (with its latest run's options,
    `lookup.with_latest_options`, nothing but its checkpoint is read again)."""
    error = representations.error_of(run)
    if error is not None:
        return {"__error__": error}
    if thread is None:
        thread = Thread.objects.filter(id=run.thread_id).first()
    snapshot = lookup.snapshot(thread) if thread is not None else None
    if snapshot is None:
        return {}
    values: dict[str, Any] = representations.state(snapshot)["values"]
    asked = representations.asked(snapshot.interrupts)
    if run.status == Run.Status.INTERRUPTED and asked:
        values["__interrupt__"] = [interrupt(i) for i in asked]
    return values


__all__ = ["result"]
