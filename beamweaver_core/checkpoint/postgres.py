"""`PostgresCheckpointer`: checkpoints in PostgreSQL, in the tables of `beamweaver_core.models`.

Same semantics as `MemoryCheckpointer`; what Postgres adds:

- One statement per super-step. `_write` sends a single `WITH ... INSERT` statement (the
  thread row if missing, the checkpoints with the writes of the step that produced them,
  new blobs, upserted records, as multi-row `VALUES`; its text is cached per shape).
  Outside a transaction it runs in autocommit mode, where one statement is one
  transaction: a durable step is one round trip and one commit, instead of `BEGIN`, the
  statement and `COMMIT`. Inside the caller's transaction it runs in a savepoint, so a
  refused write leaves that transaction usable.
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
  aggregated in (lateral joins, each channel's blobs by their own index range, the range
  coming from the stored document), so loading a head is one round trip and one
  read-only transaction, on one snapshot. `load_heads` reads the heads of many threads
  in one statement the same way, a row each. `history` reads a page of rows, then the
  blobs of the whole page at once. Read by id or in the history, a checkpoint comes with its
  `results` (its tasks' writes, stored with the checkpoint their step produced: see
  `task_writes`), read in the same statements.
- The head is always read from the database; its values are not decoded twice. A head
  cached in this process would go stale as soon as another process continues the thread
  (and the no-fork constraint would catch that only at the first write, after a node had
  already run on the stale state). What this process keeps instead are the decoded values
  of the last head it read or wrote (`known_values`): the next load names that checkpoint,
  and the same statement checks it still exists and fetches only the blobs written after
  it, so a long chat's turn costs the same at turn 1,000 as at turn 10.
- A run on a worker reads its head inside its claim's transaction (`fenced(head=...)`),
  so its first load costs no statement of its own.

The ORM connection is used synchronously (`blocking = True`: async callers run it in a
thread). Django gives each thread its own connection, checked out of the pool the settings
configure; as with any Django code, a thread that stops using the database should call
`django.db.connection.close()` to give its connection back.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from django.db import IntegrityError, connections, transaction

from beamweaver_core.checkpoint import known_values
from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.encoding import EncodedCheckpoint
from beamweaver_core.checkpoint.known_values import KnownHead
from beamweaver_core.checkpoint.postgres_rows import (
    FIELDS,
    Row,
    decode_fetched,
    decode_head,
    decode_rows,
    group_blobs,
    parse_row,
    version_ranges,
)
from beamweaver_core.checkpoint.postgres_sql import (
    BEFORE_ID,
    BEFORE_SEQ,
    DELETE_THREAD,
    LATEST,
    LOAD_BY_ID,
    LOAD_HEADS,
    LOAD_LATEST,
    LOAD_LATEST_KNOWN,
    SELECT_BLOBS,
    STORED_BYTES,
    Fence,
    write_statements,
)
from beamweaver_core.checkpoint.types import Checkpoint
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
class HeadRead:
    """The head of thread `thread_id`'s root namespace (`None`: it has none yet), read in
    the transaction that made the reader its only writer (a run's claim: see `fenced`)."""

    thread_id: str
    checkpoint: Checkpoint | None


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
        self._primed: HeadRead | None = None

    def __repr__(self) -> str:
        fence = "" if self.fence is None else f", fence=({self.fence[0]!s}, {self.fence[1]})"
        return f"PostgresCheckpointer(using={self.using!r}{fence})"

    def fenced(
        self,
        run_id: uuid.UUID | str,
        token: int,
        *,
        on_write: WriteHook | None = None,
        head: HeadRead | None = None,
    ) -> PostgresCheckpointer:
        """A copy whose every write first checks that run `run_id` still holds `token`.

        `head`: the thread's head as the claim that gave the run `token` read it, in the
        claim's own transaction. The first `load` of that head returns it without asking
        the database again (it cannot be stale: from the claim on, only this run's fenced
        writes can add a checkpoint to the thread), so a run on a worker commits once per
        step, reads included. Later loads read the database as usual.
        """
        fenced = type(self)(
            using=self.using, fence=(run_id, token), on_write=on_write or self.on_write
        )
        fenced._primed = head
        return fenced

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
        self._primed = None
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
        known_values.VALUES.written((self.using, thread_id, ns), checkpoints)

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
        # The claim's head answers only the first load, and only if nothing was written
        # or read by id before it (a fork reads its fork point by id, then writes).
        primed, self._primed = self._primed, None
        if checkpoint_id is not None:
            return self._load(LOAD_BY_ID, thread_id, ns, {"checkpoint_id": checkpoint_id})
        if primed is not None and ns == "" and primed.thread_id == thread_id:
            return primed.checkpoint
        known = known_values.VALUES.get((self.using, thread_id, ns))
        if known is None:
            return self._load(LOAD_LATEST, thread_id, ns, {})
        params = {"anchor": known.anchor, "known": json.dumps(known.versions)}
        try:
            return self._load(LOAD_LATEST_KNOWN, thread_id, ns, params, known)
        except LookupError:
            # The head does not continue what was remembered (a fork back in time): read
            # it in full.
            return self._load(LOAD_LATEST, thread_id, ns, {})

    def _load(
        self,
        sql: str,
        thread_id: str,
        ns: str,
        params: Mapping[str, Any],
        known: KnownHead | None = None,
    ) -> Checkpoint | None:
        """One statement, one row; the head's values are remembered, copies handed out."""
        with self._cursor() as cursor:
            cursor.execute(sql, {"thread": thread_id, "ns": ns, **params}, prepare=True)
            fetched = cursor.fetchone()
        key = (self.using, thread_id, ns)
        if fetched is None:
            known_values.VALUES.put(key, None)
            return None
        # After the row's fields and its three blob arrays: whether the anchor still exists.
        base = known if known is not None and fetched[FIELDS + 3] else None
        checkpoint, leaves = decode_fetched(fetched, thread_id, ns, base)
        if sql is not LOAD_BY_ID:
            known_values.VALUES.put(key, leaves)
        values = {k: known_values.handout(v) for k, v in checkpoint.values.items()}
        return dataclasses.replace(checkpoint, values=values)

    def load_heads(self, thread_ids: Collection[str]) -> dict[str, Checkpoint]:
        """Every head in one statement (`LOAD_HEADS`: a row per thread with its records
        and blobs, as `LOAD_LATEST` reads one), whatever the number of threads.

        It neither asks nor fills `known_values`: each head is decoded whole from what the
        statement read. A listing that showed a page of threads would otherwise push out
        of it the heads this process runs, whose next load it is there to shorten."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        with self._cursor() as cursor:
            cursor.execute(LOAD_HEADS, {"threads": wanted, "ns": ""}, prepare=True)
            fetched = cursor.fetchall()
        return {row[FIELDS + 3]: decode_head(row, row[FIELDS + 3], "") for row in fetched}

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

    def _rows(self, sql: str, params: Mapping[str, Any], thread_id: str, ns: str) -> list[Row]:
        with self._cursor() as cursor:
            cursor.execute(sql, params, prepare=True)
            fetched = cursor.fetchall()
        return [parse_row(values, thread_id, ns) for values in fetched]

    def _decode(self, rows: Sequence[Row], thread_id: str, ns: str) -> list[Checkpoint]:
        return decode_rows(rows, self._blobs(version_ranges(rows), thread_id, ns))

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
            return group_blobs(cursor.fetchall())

    # -- maintenance ----------------------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, blobs and records in every namespace.

        The `Thread` row and its runs stay: they belong to the runtime, not to storage.
        """
        with connections[self.using].cursor() as cursor:
            cursor.execute(DELETE_THREAD, {"thread": thread_id})
        known_values.VALUES.forget_thread(self.using, thread_id)

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


def _constraint_name(exc: IntegrityError) -> str | None:
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None)


__all__ = ["Fence", "HeadRead", "PostgresCheckpointer"]
