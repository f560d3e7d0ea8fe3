"""The SQL of `PostgresCheckpointer`: the one-statement write and the one-statement load.

A write is one `WITH ... INSERT` statement per super-step (the thread row if missing, the
checkpoints with the writes of the step that produced them, new blobs, upserted records,
as multi-row `VALUES`), its text cached per shape; a fenced write first locks the run row
`FOR SHARE` and inserts nothing unless the run still holds its token. A load reads the
checkpoint row with its records and every blob it needs in one statement (lateral
joins); read by id, also its step child's writes and the blobs they point into; the heads
of many threads, a row each, in one statement too. See `postgres.py` for why.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from beamweaver_core.checkpoint.encoding import EncodedCheckpoint

Fence = tuple[uuid.UUID | str, int]
"""`(run_id, fencing_token)` of the run that owns the thread."""

# Rows per INSERT: keeps a statement under the 65,535 parameters a server-side bound
# query may carry; a bigger step (a huge fan-out) is written in several statements.
CHUNK = 1000

FENCE = """fence AS (
    SELECT 1 FROM bw_run
    WHERE id = %s::uuid AND fencing_token = %s AND status = 'running'
    FOR SHARE
)"""
CHECKPOINT_COLUMNS = (
    "thread_id, ns, checkpoint_id, seq, step, parent_id, source, created_at, document, metadata,"
    " task_writes"
)
CHECKPOINT_ROW = "(%s, %s, %s, %s::int, %s::int, %s, %s, %s::timestamptz, %s, %s, %s)"
BLOB_ROW = "(%s, %s, %s, %s::int, %s)"
RECORD_ROW = "(%s, %s, %s, %s, %s)"


@functools.lru_cache(maxsize=256)
def write_sql(
    checkpoints: int, blobs: int, records: int, fenced: bool, first: bool, new_thread: bool
) -> str:
    """One statement writing that many rows (parameters: the run id and token if fenced,
    the thread id if first, then the rows).

    The first statement of a write also creates the thread row and, when fenced, locks
    the run row and inserts nothing unless the fence holds; it returns whether it held.
    """
    gated = fenced and first

    def insert(table: str, columns: str, row: str, count: int, conflict: str) -> str:
        values = f"VALUES {', '.join([row] * count)}"
        if gated:
            values = f"SELECT * FROM ({values}) AS v WHERE EXISTS (SELECT FROM fence)"
        return f"INSERT INTO {table} ({columns}) {values} {conflict}"

    parts = []
    if gated:
        parts.append(FENCE)
    if first and new_thread:
        thread = "SELECT %s WHERE EXISTS (SELECT FROM fence)" if gated else "VALUES (%s)"
        parts.append(
            f"new_thread AS (INSERT INTO bw_thread (id) {thread} ON CONFLICT (id) DO NOTHING)"
        )
    if checkpoints:
        sql = insert("bw_checkpoint", CHECKPOINT_COLUMNS, CHECKPOINT_ROW, checkpoints, "")
        parts.append(f"new_checkpoints AS ({sql})")
    if blobs:
        sql = insert(
            "bw_checkpoint_blob",
            "thread_id, ns, channel, version, blob",
            BLOB_ROW,
            blobs,
            "ON CONFLICT (thread_id, ns, channel, version) DO NOTHING",
        )
        parts.append(f"new_blobs AS ({sql})")
    if records:
        sql = insert(
            "bw_checkpoint_write",
            "thread_id, ns, checkpoint_id, task_id, record",
            RECORD_ROW,
            records,
            "ON CONFLICT (thread_id, ns, checkpoint_id, task_id) DO UPDATE SET record = EXCLUDED.record",
        )
        parts.append(f"new_records AS ({sql})")
    result = "EXISTS (SELECT FROM fence)" if gated else "true"
    return "WITH " + ",\n".join(parts) + f"\nSELECT {result}"


CHECKPOINT_FIELDS = """c.checkpoint_id, c.seq, c.step, c.parent_id, c.source, c.created_at, c.document,
       c.metadata, w.task_ids, w.records, s.seq AS child_seq, s.task_writes AS child_writes"""
RECORDS = """CROSS JOIN LATERAL (
    SELECT array_agg(task_id) AS task_ids, array_agg(record) AS records
    FROM bw_checkpoint_write
    WHERE thread_id = c.thread_id AND ns = c.ns AND checkpoint_id = c.checkpoint_id
) w"""
# The checkpoint that running c's tasks produced, holding their writes (`task_writes`): the
# `loop` child at the next position, one probe of the (thread, ns, seq) index per row. See
# `checkpoint.task_writes` for why the step's child always takes that position.
STEP_CHILD = """LEFT JOIN LATERAL (
    SELECT k.seq, k.task_writes FROM bw_checkpoint k
    WHERE k.thread_id = c.thread_id AND k.ns = c.ns AND k.seq = c.seq + 1
      AND k.parent_id = c.checkpoint_id AND k.source = 'loop'
) s ON true"""
# A head has no step child (the child would be newer than the newest checkpoint).
NO_STEP_CHILD = "CROSS JOIN (SELECT NULL::int AS seq, NULL::text AS task_writes) s"
SELECT_CHECKPOINTS = f"""
SELECT {CHECKPOINT_FIELDS}
FROM bw_checkpoint c
{RECORDS}
{STEP_CHILD}
WHERE c.thread_id = %(thread)s AND c.ns = %(ns)s {{where}}
ORDER BY c.seq DESC
LIMIT %(limit)s
"""


def _select_one(where: str, known: bool, child: bool, many: bool = False) -> str:
    """One checkpoint with its records and every blob it needs, in one statement (one
    round trip, one snapshot): the version range of each channel comes from the document
    itself. Each channel's blobs are read by their own index range (the `OFFSET 0` keeps
    the planner from joining every blob of the thread and filtering).

    `many`: instead, the head of each thread of %(threads)s that has one (a probe of the
    `(thread, ns, seq)` index, scanned backwards, per thread), each row ending with its
    thread's id: a row per thread, still one statement whatever their number.

    `known`: for a process that remembers the values of checkpoint %(anchor)s
    (`known_values`): also say whether that checkpoint still exists and, if it does, read
    only the blobs after the versions remembered (%(known)s: `{channel: version}`).

    `child`: also its step child's writes (`STEP_CHILD`) and the child's blobs those
    writes point into (at the child's version, above every version of the checkpoint's
    own, so they never mix with its values).
    """
    anchor = ""
    low = "r.low"
    known_column = ""
    if known:
        anchor = """CROSS JOIN LATERAL (
    SELECT EXISTS (
        SELECT FROM bw_checkpoint k
        WHERE k.thread_id = c.thread_id AND k.ns = c.ns AND k.checkpoint_id = %(anchor)s
    ) AS ok
) a"""
        low = "CASE WHEN r.known <= r.high THEN greatest(r.low, r.known + 1) ELSE r.low END"
        known_column = ",\n               CASE WHEN a.ok THEN (%(known)s::jsonb ->> v.channel)::int END AS known"
    held = ""
    if child:
        held = """
        UNION ALL
        SELECT held.channel, held.version, held.blob
        FROM (
            SELECT DISTINCT e.entry ->> 0 AS channel
            FROM jsonb_each(s.task_writes::jsonb) AS t(task, entries)
            CROSS JOIN LATERAL jsonb_array_elements(t.entries) AS e(entry)
            WHERE jsonb_array_length(e.entry) <> 2
        ) ref
        CROSS JOIN LATERAL (
            SELECT blob.channel, blob.version, blob.blob FROM bw_checkpoint_blob blob
            WHERE blob.thread_id = c.thread_id AND blob.ns = c.ns AND blob.channel = ref.channel
              AND blob.version = s.seq
            OFFSET 0
        ) held"""
    thread = "wanted.thread_id" if many else "%(thread)s"
    latest = f"""(
    SELECT * FROM bw_checkpoint
    WHERE thread_id = {thread} AND ns = %(ns)s {where}
    ORDER BY seq DESC
    LIMIT 1
) c"""
    if many:
        latest = f"unnest(%(threads)s::text[]) AS wanted(thread_id)\nCROSS JOIN LATERAL {latest}"
    extra = ", a.ok" if known else ", c.thread_id" if many else ""
    return f"""
SELECT {CHECKPOINT_FIELDS}, b.channels, b.versions, b.blobs{extra}
FROM {latest}
{anchor}
{RECORDS}
{STEP_CHILD if child else NO_STEP_CHILD}
CROSS JOIN LATERAL (
    SELECT array_agg(blob.channel) AS channels, array_agg(blob.version) AS versions,
           array_agg(blob.blob) AS blobs
    FROM (
        SELECT own.channel, own.version, own.blob
        FROM (SELECT c.document::jsonb AS d) doc
        CROSS JOIN LATERAL jsonb_each_text(doc.d -> 'versions') AS v(channel, version)
        CROSS JOIN LATERAL (
            SELECT coalesce((doc.d -> 'chains' -> v.channel ->> 0)::int, v.version::int) AS low,
                   v.version::int AS high{known_column}
        ) r
        CROSS JOIN LATERAL (
            SELECT blob.channel, blob.version, blob.blob FROM bw_checkpoint_blob blob
            WHERE blob.thread_id = c.thread_id AND blob.ns = c.ns AND blob.channel = v.channel
              AND blob.version BETWEEN {low} AND r.high
            OFFSET 0
        ) own{held}
    ) blob
) b
"""


LOAD_LATEST = _select_one("", known=False, child=False)
LOAD_LATEST_KNOWN = _select_one("", known=True, child=False)
LOAD_HEADS = _select_one("", known=False, child=False, many=True)
LOAD_BY_ID = _select_one("AND checkpoint_id = %(checkpoint_id)s", known=False, child=True)
LATEST = SELECT_CHECKPOINTS.format(where="")
BEFORE_ID = SELECT_CHECKPOINTS.format(
    where="""AND c.seq < (
        SELECT seq FROM bw_checkpoint
        WHERE thread_id = %(thread)s AND ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s
    )"""
)
BEFORE_SEQ = SELECT_CHECKPOINTS.format(where="AND c.seq < %(seq)s")

# Each channel by its own index range (as in `_select_one`).
SELECT_BLOBS = """
SELECT b.channel, b.version, b.blob
FROM unnest(%(channels)s::text[], %(lows)s::int[], %(highs)s::int[]) AS wanted(channel, low, high)
CROSS JOIN LATERAL (
    SELECT blob.channel, blob.version, blob.blob FROM bw_checkpoint_blob blob
    WHERE blob.thread_id = %(thread)s AND blob.ns = %(ns)s AND blob.channel = wanted.channel
      AND blob.version BETWEEN wanted.low AND wanted.high
    OFFSET 0
) b
"""

DELETE_THREAD = """
WITH records AS (DELETE FROM bw_checkpoint_write WHERE thread_id = %(thread)s),
     blobs AS (DELETE FROM bw_checkpoint_blob WHERE thread_id = %(thread)s)
DELETE FROM bw_checkpoint WHERE thread_id = %(thread)s
"""

STORED_BYTES = """
SELECT (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM bw_checkpoint c WHERE c.thread_id = %(thread)s)
     + (SELECT coalesce(sum(pg_column_size(b.*)), 0) FROM bw_checkpoint_blob b WHERE b.thread_id = %(thread)s)
     + (SELECT coalesce(sum(pg_column_size(w.*)), 0) FROM bw_checkpoint_write w WHERE w.thread_id = %(thread)s)
"""


def write_statements(
    thread_id: str,
    ns: str,
    checkpoints: Sequence[EncodedCheckpoint],
    records: Sequence[tuple[str, str, str]],
    fence: Fence | None,
) -> list[tuple[str, list[Any]]]:
    """The statements of one write: one, unless it has more than `CHUNK` rows of a kind."""
    blobs: dict[tuple[str, int], str] = {}
    for cp in checkpoints:
        for channel, version, text in cp.blobs:
            blobs.setdefault((channel, version), text)
    # One upsert cannot touch a row twice; the last record of a task wins, as in memory.
    latest = {(cid, tid): text for cid, tid, text in records}
    checkpoint_rows = [
        (
            thread_id,
            ns,
            cp.id,
            cp.seq,
            cp.step,
            cp.parent_id,
            cp.source,
            cp.created_at,
            cp.document,
            cp.metadata,
            cp.writes,
        )
        for cp in checkpoints
    ]
    blob_rows = [
        (thread_id, ns, channel, version, text) for (channel, version), text in blobs.items()
    ]
    record_rows = [(thread_id, ns, cid, tid, text) for (cid, tid), text in latest.items()]
    # Only a thread's first checkpoint needs the thread row (later ones have a parent).
    new_thread = any(cp.parent_id is None for cp in checkpoints)
    statements = []
    for offset in range(0, max(len(checkpoint_rows), len(blob_rows), len(record_rows), 1), CHUNK):
        first = offset == 0
        parts = [
            rows[offset : offset + CHUNK] for rows in (checkpoint_rows, blob_rows, record_rows)
        ]
        params: list[Any] = []
        if first and fence is not None:
            params += [str(fence[0]), fence[1]]
        if first and new_thread:
            params.append(thread_id)
        for part in parts:
            params.extend(value for row in part for value in row)
        sql = write_sql(*(len(part) for part in parts), fence is not None, first, new_thread)
        statements.append((sql, params))
    return statements


__all__ = [
    "BEFORE_ID",
    "BEFORE_SEQ",
    "DELETE_THREAD",
    "LATEST",
    "LOAD_BY_ID",
    "LOAD_HEADS",
    "LOAD_LATEST",
    "LOAD_LATEST_KNOWN",
    "SELECT_BLOBS",
    "STORED_BYTES",
    "Fence",
    "write_statements",
]
