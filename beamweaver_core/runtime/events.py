"""Run events: pushed live to the thread's group and kept in Postgres (`RunEvent`).

Every envelope a run emits is pushed at once as a hint to `thread.<id>`; all but the
token-by-token `model.delta` events are also stored, written in the same transaction as
the run's next checkpoint, so storing them costs no extra commit and a page that missed
pushes can replay them from Postgres.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max

from beamweaver_core.graph.runtime import Envelope
from beamweaver_core.redaction import redact
from beamweaver_core.runtime.groups import thread_group
from beamweaver_core.runtime.publish import group_send

LIVE_ONLY = frozenset({"model.delta"})
_MAX_TEXT = 20_000


def to_display(value: Any, depth: int = 0) -> Any:
    """JSON data for showing `value` (engine objects as their plain dicts), storable in
    Postgres whatever the run produced: NUL and lone surrogates become U+FFFD, NaN and
    infinities their names (the checkpoint itself refuses such values; the event that
    reports them must still be written, or the run could not even fail)."""
    if depth > 20:
        return "…"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        value = _storable(value)
        return (
            value
            if len(value) <= _MAX_TEXT
            else value[:_MAX_TEXT] + f"… [{len(value) - _MAX_TEXT} more characters]"
        )
    if isinstance(value, datetime):
        return value.isoformat()
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_display(to_dict(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_display(dataclasses.asdict(value), depth + 1)
    if isinstance(value, Mapping):
        return {_storable(str(k)): to_display(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_display(v, depth + 1) for v in value]
    return repr(value)


def _storable(text: str) -> str:
    text = text.replace("\x00", "\ufffd")
    if any("\ud800" <= char <= "\udfff" for char in text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def envelope_record(envelope: Envelope, seq_base: int = 0) -> dict[str, Any]:
    data = envelope.data
    if isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if k not in ("result", "exception")}
    return {
        "seq": seq_base + envelope.seq,
        "event": envelope.event,
        "node": envelope.node,
        "ns": envelope.ns,
        "data": redact(to_display(data)),
        "at": envelope.at.isoformat(),
    }


class RunRecorder:
    """The `EventSink` listener of one run. `seq_base` is added to the engine's sequence
    numbers: the number of events earlier attempts of the run stored, so a retried run's
    events follow theirs (`last_stored_seq`)."""

    def __init__(self, run_id: str, thread_id: str, *, seq_base: int = 0) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.seq_base = seq_base
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._group = thread_group(thread_id)

    def __call__(self, envelope: Envelope) -> None:
        record = envelope_record(envelope, self.seq_base)
        if envelope.event not in LIVE_ONLY:
            with self._lock:
                self._pending.append(record)
        group_send(
            self._group,
            {
                "type": "run.event",
                "thread_id": self.thread_id,
                "run_id": self.run_id,
                "event": record,
            },
        )

    def take(self) -> list[dict[str, Any]]:
        """The events not stored yet (the caller stores them)."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def store(self, cursor: Any) -> None:
        """Insert the pending events with `cursor` (inside the caller's transaction)."""
        from beamweaver_core.models import RunEvent

        pending = self.take()
        if not pending:
            return
        table = RunEvent._meta.db_table
        rows: list[Any] = []
        for record in pending:
            rows.extend(
                [
                    self.run_id,
                    self.thread_id,
                    record["seq"],
                    record["event"],
                    record["node"] or "",
                    record["ns"],
                    _json(record["data"]),
                    record["at"],
                ]
            )
        values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s::jsonb, %s)"] * len(pending))
        cursor.execute(
            f"INSERT INTO {table} (run_id, thread_id, seq, event, node, ns, data, created_at) VALUES {values} "
            "ON CONFLICT DO NOTHING",
            rows,
        )
        # Readers of the stored log (the protocol's streams) wait for this hint, not for
        # the live pushes above, which reach them before the events are committed.
        hint = {
            "type": "run.stored",
            "thread_id": self.thread_id,
            "run_id": self.run_id,
            "seq": pending[-1]["seq"],
        }
        transaction.on_commit(lambda: group_send(self._group, hint))


def announce_status(thread_id: str, run_id: str, status: str) -> None:
    """Hint the thread's group that the run's status is now `status` (sent at once: call
    it after the change commits). Waiters for a run's end read the row on this hint."""
    group_send(
        thread_group(thread_id),
        {"type": "run.status", "thread_id": thread_id, "run_id": run_id, "status": str(status)},
    )


def last_stored_seq(run_id: str, using: str = "default") -> int:
    """The highest sequence number of the run's stored events (0 without any)."""
    from beamweaver_core.models import RunEvent

    top = RunEvent.objects.using(using).filter(run_id=run_id).aggregate(top=Max("seq"))["top"]
    return int(top or 0)


def _json(data: Any) -> str:
    import json

    return json.dumps(data, ensure_ascii=False, default=repr)


__all__ = [
    "LIVE_ONLY",
    "RunRecorder",
    "announce_status",
    "envelope_record",
    "last_stored_seq",
    "to_display",
]
