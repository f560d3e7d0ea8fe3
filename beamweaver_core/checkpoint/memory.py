"""`MemoryCheckpointer`: checkpoints kept in this process (the guide's `CheckpointETS`).

Values are stored encoded (JSON text), exactly as the Postgres checkpointer stores them,
so both behave the same: nothing a node does to its state afterwards can change history,
and an unstorable value fails in tests just as it would in production.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from beamweaver_core.checkpoint import task_writes
from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.encoding import EncodedCheckpoint, decode_checkpoint, decode_record
from beamweaver_core.checkpoint.types import Checkpoint, TaskRecord
from beamweaver_core.exceptions import ThreadBusyError


@dataclass
class _Namespace:
    rows: list[EncodedCheckpoint] = field(default_factory=list)
    by_id: dict[str, EncodedCheckpoint] = field(default_factory=dict)
    by_seq: dict[int, EncodedCheckpoint] = field(default_factory=dict)
    blobs: dict[tuple[str, int], str] = field(default_factory=dict)
    records: dict[str, dict[str, str]] = field(default_factory=dict)


class MemoryCheckpointer(Checkpointer):
    """In-process checkpointer; thread-safe; lost when the process exits."""

    blocking = False

    def __init__(self) -> None:
        self._threads: dict[str, dict[str, _Namespace]] = {}
        self._lock = threading.Lock()

    def _ns(self, thread_id: str, ns: str) -> _Namespace | None:
        spaces = self._threads.get(thread_id)
        return spaces.get(ns) if spaces is not None else None

    def load(
        self, thread_id: str, ns: str = "", checkpoint_id: str | None = None
    ) -> Checkpoint | None:
        with self._lock:
            space = self._ns(thread_id, ns)
            if space is None or not space.rows:
                return None
            if checkpoint_id is None:
                row = space.rows[-1]
            else:
                found = space.by_id.get(checkpoint_id)
                if found is None:
                    return None
                row = found
            return self._decode(space, row)

    def load_heads(self, thread_ids: Collection[str]) -> dict[str, Checkpoint]:
        """Every head read under one hold of the lock: all as they were at one moment,
        as Postgres reads them in one statement."""
        with self._lock:
            spaces = {thread_id: self._ns(thread_id, "") for thread_id in thread_ids}
            return {
                thread_id: self._decode(space, space.rows[-1])
                for thread_id, space in spaces.items()
                if space is not None and space.rows
            }

    def _decode(self, space: _Namespace, row: EncodedCheckpoint) -> Checkpoint:
        blobs = space.blobs

        def fetch(channel: str, low: int, high: int) -> Mapping[int, str]:
            return {
                v: text
                for v in range(low, high + 1)
                if (text := blobs.get((channel, v))) is not None
            }

        records: dict[str, TaskRecord] = {
            task_id: decode_record(text) for task_id, text in space.records.get(row.id, {}).items()
        }
        child = _step_child(space, row)
        results = (
            task_writes.results(child.writes, lambda key: blobs.get((key, child.seq)))
            if child is not None
            else {}
        )
        return decode_checkpoint(row, fetch, records, results=results)

    def history(
        self,
        thread_id: str,
        ns: str = "",
        *,
        before: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Checkpoint]:
        with self._lock:
            space = self._ns(thread_id, ns)
            if space is None:
                return iter(())
            rows = list(reversed(space.rows))
            if before is not None:
                cut = space.by_id.get(before)
                rows = [r for r in rows if cut is not None and r.seq < cut.seq]
            if limit is not None:
                rows = rows[:limit]
            decoded = [self._decode(space, row) for row in rows]
        return iter(decoded)

    def _write(
        self,
        thread_id: str,
        ns: str,
        checkpoints: Sequence[EncodedCheckpoint],
        records: Sequence[tuple[str, str, str]],
    ) -> None:
        with self._lock:
            spaces = self._threads.setdefault(thread_id, {})
            space = spaces.setdefault(ns, _Namespace())
            taken = [cp.seq for cp in checkpoints if cp.seq in space.by_seq]
            if taken or len({cp.seq for cp in checkpoints}) != len(checkpoints):
                raise ThreadBusyError(
                    f"Thread {thread_id!r} moved on while this run was writing (checkpoint "
                    f"position {taken or [cp.seq for cp in checkpoints]} is taken): another "
                    "run is writing to it. Reload the thread and try again."
                )
            for cp in checkpoints:
                space.rows.append(cp)
                space.by_id[cp.id] = cp
                space.by_seq[cp.seq] = cp
                for channel, version, text in cp.blobs:
                    space.blobs.setdefault((channel, version), text)
            for checkpoint_id, task_id, text in records:
                space.records.setdefault(checkpoint_id, {})[task_id] = text

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)

    def namespaces(self, thread_id: str) -> list[str]:
        with self._lock:
            return sorted(self._threads.get(thread_id, {}))

    def stored_bytes(self, thread_id: str) -> int:
        """Bytes of encoded checkpoints, blobs and records of a thread (for tests)."""
        with self._lock:
            total = 0
            for space in self._threads.get(thread_id, {}).values():
                total += sum(
                    len(r.document) + len(r.metadata) + len(r.writes or "") for r in space.rows
                )
                total += sum(len(t) for t in space.blobs.values())
                total += sum(len(t) for recs in space.records.values() for t in recs.values())
            return total


def _step_child(space: _Namespace, row: EncodedCheckpoint) -> EncodedCheckpoint | None:
    """The checkpoint that running `row`'s tasks produced, if their step completed: the
    `loop` checkpoint at the next position whose parent is `row` (see `task_writes`; the
    rule is `postgres_sql.STEP_CHILD`'s)."""
    child = space.by_seq.get(row.seq + 1)
    if child is None or child.parent_id != row.id or child.source != "loop":
        return None
    return child


__all__ = ["MemoryCheckpointer"]
