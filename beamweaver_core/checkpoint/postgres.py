"""`PostgresCheckpointer`: checkpoints in PostgreSQL, in the tables of `beamweaver_core.models`.

Same semantics as `MemoryCheckpointer`; what Postgres adds:

- One statement per super-step. `_write` sends a single `WITH ... INSERT` statement (the
  thread row if missing, the checkpoints, new blobs, upserted records, as multi-row
  `VALUES`; its text is cached per shape). Outside a transaction it runs in autocommit mode,
  where one statement is one transaction: a durable step is one round trip and one commit,
  instead of `BEGIN`, the statement and `COMMIT`. Inside the caller's transaction it runs
  in a savepoint, so a refused write leaves that transaction usable.
- No fork. `bw_checkpoint (thread, ns, seq)` is unique: two writers that continued from the
  same head both take `head.seq + 1`, one commit wins and the other gets `ThreadBusyError`
  with nothing written.
- Fencing. A checkpointer bound to a run (`fenced(run_id, token)`) first locks that run's
  row `FOR SHARE` if, and only if, it still has that token and is running. `FOR SHARE`
  conflicts with the `UPDATE` that re-claims the run and bumps its token: a re-claim waits
  for an in-flight write to commit (the new owner then loads a head that includes it), and
  a write that waits for a re-claim sees the bumped token once it commits and is refused
  with `StaleWriterError`. (`FOR KEY SHARE` would not conflict with that update, so a stale
  write could still commit after the take-over.)
- `load` is one statement: the checkpoint row with its records and every blob it needs
  aggregated in (lateral joins; each channel's version range comes from the stored
  document), so loading a head is one round trip and one read-only transaction, on one
  snapshot. `history` reads a page of rows, then the blobs of the whole page at once.
- No head cache. Every invoke and resume reads the head from the database: a head cached in
  this process goes stale as soon as another process continues the thread, and the no-fork
  constraint would catch that only at the first write, after a node had already run on
  the stale state (for a resume: after re-running an interrupt another process answered).

The ORM connection is used synchronously (`blocking = True`: async callers run it in a
thread). Django gives each thread its own connection, checked out of the pool the settings
configure; as with any Django code, a thread that stops using the database should call
`django.db.connection.close()` to give its connection back.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from django.db import IntegrityError, connections, transaction

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.encoding import (
    EncodedCheckpoint,
    chains_of,
    decode_checkpoint,
    decode_record,
)
from beamweaver_core.checkpoint.postgres_sql import (
    BEFORE_ID,
    BEFORE_SEQ,
    DELETE_THREAD,
    LATEST,
    LOAD_BY_ID,
    LOAD_LATEST,
    SELECT_BLOBS,
    STORED_BYTES,
    Fence,
    write_statements,
)
from beamweaver_core.checkpoint.types import Checkpoint, TaskRecord
from beamweaver_core.exceptions import StaleWriterError, ThreadBusyError

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

logger = logging.getLogger(__name__)

WriteHook = Callable[["CursorWrapper"], None]
"""Called with the cursor inside each write's transaction, after the rows are written, so
a caller can store its own rows (e.g. run events) atomically with the checkpoint."""

_SEQ_CONSTRAINT = "bw_checkpoint_one_per_seq"
_HISTORY_PAGE = 50


@dataclass(frozen=True, slots=True)
class _Row:
    """A checkpoint row as read, with its records decoded."""

    encoded: EncodedCheckpoint
    records: dict[str, TaskRecord]


class PostgresCheckpointer(Checkpointer):
    """Checkpointer on the Django database `using`.

    `fence` binds its writes to a run (see `fenced`); `on_write` is called inside every
    write's transaction (see `WriteHook`).
    """

    blocking = True

    def __init__(
        self, using: str = "default", fence: Fence | None = None, on_write: WriteHook | None = None
    ) -> None:
        self.using = using
        self.fence = fence
        self.on_write = on_write

    def __repr__(self) -> str:
        fence = "" if self.fence is None else f", fence=({self.fence[0]!s}, {self.fence[1]})"
        return f"PostgresCheckpointer(using={self.using!r}{fence})"

    def fenced(
        self, run_id: uuid.UUID | str, token: int, *, on_write: WriteHook | None = None
    ) -> PostgresCheckpointer:
        """A copy whose every write first checks that run `run_id` still holds `token`."""
        return PostgresCheckpointer(
            using=self.using, fence=(run_id, token), on_write=on_write or self.on_write
        )

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor on Django's connection (same transaction, same error types) that binds
        parameters on the server, so every statement is prepared once per connection and
        not parsed and planned again on each super-step. (Django's own cursors interpolate
        parameters into the SQL text on the client.)"""
        connection = connections[self.using]
        connection.ensure_connection()
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            yield cursor

    # -- writing ------------------------------------------------------------------------

    def _write(
        self,
        thread_id: str,
        ns: str,
        checkpoints: Sequence[EncodedCheckpoint],
        records: Sequence[tuple[str, str, str]],
    ) -> None:
        statements = write_statements(thread_id, ns, checkpoints, records, self.fence)
        connection = connections[self.using]
        try:
            if len(statements) == 1 and self.on_write is None and connection.get_autocommit():
                # One statement outside any transaction is a transaction of its own: one
                # round trip instead of BEGIN, the statement, and COMMIT.
                self._execute(thread_id, statements)
            else:
                with transaction.atomic(using=self.using):
                    self._execute(thread_id, statements)
        except IntegrityError as exc:
            if _constraint_name(exc) != _SEQ_CONSTRAINT:
                raise
            seqs = [cp.seq for cp in checkpoints]
            logger.info("Refused checkpoints %s of thread %r: position taken", seqs, thread_id)
            raise ThreadBusyError(
                f"Thread {thread_id!r} moved on while this run was writing (checkpoint "
                f"position {seqs} in namespace {ns!r} is taken): another run is writing to "
                "it. Reload the thread and try again."
            ) from exc

    def _execute(self, thread_id: str, statements: Sequence[tuple[str, list[Any]]]) -> None:
        with self._cursor() as cursor:
            for index, (sql, params) in enumerate(statements):
                cursor.execute(sql, params, prepare=True)
                held = cursor.fetchone()
                if index == 0 and (held is None or not held[0]):
                    raise self._stale(thread_id)
            if self.on_write is not None:
                self.on_write(cursor)

    def _stale(self, thread_id: str) -> StaleWriterError:
        assert self.fence is not None
        run_id, token = self.fence
        logger.warning(
            "Refused a stale write of run %s (token %s) to thread %r", run_id, token, thread_id
        )
        return StaleWriterError(
            f"Run {run_id!s} no longer owns thread {thread_id!r}: its fencing token {token} "
            "is stale or the run is no longer running, so another worker has taken it over. "
            "Nothing was written; stop this run and let the new owner continue the thread."
        )

    # -- reading ------------------------------------------------------------------------

    def load(
        self, thread_id: str, ns: str = "", checkpoint_id: str | None = None
    ) -> Checkpoint | None:
        params = {"thread": thread_id, "ns": ns, "checkpoint_id": checkpoint_id}
        with self._cursor() as cursor:
            cursor.execute(
                LOAD_LATEST if checkpoint_id is None else LOAD_BY_ID, params, prepare=True
            )
            fetched = cursor.fetchone()
        if fetched is None:
            return None
        row = _parse_row(fetched[:10], thread_id, ns)
        blobs = zip(fetched[10] or (), fetched[11] or (), fetched[12] or (), strict=True)
        return _decode_rows([row], _group_blobs(blobs))[0]

    def history(
        self,
        thread_id: str,
        ns: str = "",
        *,
        before: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Checkpoint]:
        """Checkpoints newest first, read and decoded a page at a time as you iterate."""
        remaining = limit
        sql = LATEST if before is None else BEFORE_ID
        params: dict[str, Any] = {"thread": thread_id, "ns": ns, "checkpoint_id": before}
        while remaining is None or remaining > 0:
            page = _HISTORY_PAGE if remaining is None else min(remaining, _HISTORY_PAGE)
            rows = self._rows(sql, {**params, "limit": page}, thread_id, ns)
            yield from self._decode(rows, thread_id, ns)
            if len(rows) < page:
                return
            if remaining is not None:
                remaining -= len(rows)
            sql, params["seq"] = BEFORE_SEQ, rows[-1].encoded.seq

    def _rows(self, sql: str, params: Mapping[str, Any], thread_id: str, ns: str) -> list[_Row]:
        with self._cursor() as cursor:
            cursor.execute(sql, params, prepare=True)
            fetched = cursor.fetchall()
        return [_parse_row(values, thread_id, ns) for values in fetched]

    def _decode(self, rows: Sequence[_Row], thread_id: str, ns: str) -> list[Checkpoint]:
        return _decode_rows(rows, self._blobs(_version_ranges(rows), thread_id, ns))

    def _blobs(
        self, ranges: Mapping[str, tuple[int, int]], thread_id: str, ns: str
    ) -> dict[str, dict[int, str]]:
        if not ranges:
            return {}
        params: dict[str, Any] = {
            "thread": thread_id,
            "ns": ns,
            "channels": list(ranges),
            "lows": [low for low, _ in ranges.values()],
            "highs": [high for _, high in ranges.values()],
        }
        with self._cursor() as cursor:
            cursor.execute(SELECT_BLOBS, params, prepare=True)
            return _group_blobs(cursor.fetchall())

    # -- maintenance ----------------------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, blobs and records in every namespace.

        The `Thread` row and its runs stay: they belong to the runtime, not to storage.
        """
        with connections[self.using].cursor() as cursor:
            cursor.execute(DELETE_THREAD, {"thread": thread_id})

    def namespaces(self, thread_id: str) -> list[str]:
        with connections[self.using].cursor() as cursor:
            cursor.execute(
                "SELECT DISTINCT ns FROM bw_checkpoint WHERE thread_id = %s ORDER BY ns",
                [thread_id],
            )
            return [ns for (ns,) in cursor.fetchall()]

    def stored_bytes(self, thread_id: str) -> int:
        """Bytes of the thread's rows in the checkpoint, blob and record tables.

        The sum of `pg_column_size(row)`: each row's tuple header and columns as stored
        (compressed where Postgres compressed them). Not counted: index entries, page and
        free-space overhead, dead row versions not yet vacuumed, and the `bw_thread` row.
        """
        with connections[self.using].cursor() as cursor:
            cursor.execute(STORED_BYTES, {"thread": thread_id})
            row = cursor.fetchone()
        return int(row[0]) if row is not None else 0


def _parse_row(values: Sequence[Any], thread_id: str, ns: str) -> _Row:
    cid, seq, step, parent_id, source, created_at, document, metadata, task_ids, texts = values
    # In field order: thread, ns, id, seq, step, parent, source, created, document, metadata.
    encoded = EncodedCheckpoint(
        thread_id, ns, cid, seq, step, parent_id, source, created_at, document, metadata, ()
    )
    records = {
        tid: decode_record(text) for tid, text in zip(task_ids or (), texts or (), strict=True)
    }
    return _Row(encoded, records)


def _decode_rows(rows: Sequence[_Row], blobs: Mapping[str, Mapping[int, str]]) -> list[Checkpoint]:
    def fetch(channel: str, low: int, high: int) -> Mapping[int, str]:
        found = blobs.get(channel, {})
        return {v: text for v, text in found.items() if low <= v <= high}

    return [decode_checkpoint(row.encoded, fetch, row.records) for row in rows]


def _group_blobs(fetched: Iterable[tuple[str, int, str]]) -> dict[str, dict[int, str]]:
    blobs: dict[str, dict[int, str]] = {}
    for channel, version, text in fetched:
        blobs.setdefault(channel, {})[version] = text
    return blobs


def _version_ranges(rows: Sequence[_Row]) -> dict[str, tuple[int, int]]:
    """Per channel, the version range that covers the blobs every row needs."""
    ranges: dict[str, tuple[int, int]] = {}
    for row in rows:
        document = json.loads(row.encoded.document)
        chains = chains_of(document)
        for channel, version in document.get("versions", {}).items():
            high = int(version)
            low = chains[channel][0] if channel in chains else high
            known = ranges.get(channel)
            if known is not None:
                low, high = min(known[0], low), max(known[1], high)
            ranges[channel] = (low, high)
    return ranges


def _constraint_name(exc: IntegrityError) -> str | None:
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None)


__all__ = ["Fence", "PostgresCheckpointer"]
