"""Rows as `PostgresCheckpointer` reads them: parsed, their blobs grouped, decoded, and
what a load leaves known (`known_values`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beamweaver_core.checkpoint import task_writes
from beamweaver_core.checkpoint.encoding import (
    EncodedCheckpoint,
    chains_of,
    decode_checkpoint,
    decode_record,
)
from beamweaver_core.checkpoint.known_values import KnownHead
from beamweaver_core.checkpoint.types import Checkpoint, TaskRecord

FIELDS = 12
"""Columns of `postgres_sql.CHECKPOINT_FIELDS` (what `parse_row` takes); a one-checkpoint
load's row then has its three blob arrays, and one more column (`LOAD_LATEST_KNOWN`:
whether the anchor exists; `LOAD_HEADS`: the thread's id)."""


@dataclass(frozen=True, slots=True)
class Row:
    """A checkpoint row as read, with its records decoded, and the writes its step child
    stored (`child_seq`: that child's position; see `task_writes`), references unresolved."""

    encoded: EncodedCheckpoint
    records: dict[str, TaskRecord]
    child_seq: int | None = None
    child_writes: dict[str, list[list[Any]]] | None = None


def parse_row(values: Sequence[Any], thread_id: str, ns: str) -> Row:
    (
        cid,
        seq,
        step,
        parent_id,
        source,
        created_at,
        document,
        metadata,
        task_ids,
        texts,
        child_seq,
        child_writes,
    ) = values
    # In field order: thread, ns, id, seq, step, parent, source, created, document, metadata.
    encoded = EncodedCheckpoint(
        thread_id, ns, cid, seq, step, parent_id, source, created_at, document, metadata, ()
    )
    records = {
        tid: decode_record(text) for tid, text in zip(task_ids or (), texts or (), strict=True)
    }
    writes = task_writes.decode(child_writes) if child_writes is not None else None
    return Row(encoded, records, child_seq, writes)


def decode_rows(
    rows: Sequence[Row],
    blobs: Mapping[str, Mapping[int, str]],
    known: Mapping[str, tuple[int, Any]] | None = None,
) -> list[Checkpoint]:
    def fetch(channel: str, low: int, high: int) -> Mapping[int, str]:
        found = blobs.get(channel, {})
        return {v: text for v, text in found.items() if low <= v <= high}

    def results(row: Row) -> task_writes.Results:
        seq = row.child_seq
        if row.child_writes is None or seq is None:
            return {}
        return task_writes.resolve(row.child_writes, lambda key: blobs.get(key, {}).get(seq))

    return [decode_checkpoint(row.encoded, fetch, row.records, known, results(row)) for row in rows]


def decode_fetched(
    fetched: Sequence[Any], thread_id: str, ns: str, known: KnownHead | None
) -> tuple[Checkpoint, KnownHead]:
    """The checkpoint of a row of `LOAD_LATEST` / `LOAD_BY_ID` / `LOAD_LATEST_KNOWN` (its
    values continuing `known` where the row says the anchor still exists), and what it
    leaves known. The checkpoint's values are the remembered objects themselves: hand
    out copies (`known_values.handout`)."""
    row, blobs = _parsed(fetched, thread_id, ns)
    checkpoint = decode_rows([row], blobs, known.as_known() if known is not None else None)[0]
    return checkpoint, known_head(checkpoint, row.encoded.document, blobs, known)


def decode_head(fetched: Sequence[Any], thread_id: str, ns: str) -> Checkpoint:
    """The checkpoint of a row of `LOAD_HEADS`, decoded whole (nothing remembered)."""
    row, blobs = _parsed(fetched, thread_id, ns)
    return decode_rows([row], blobs)[0]


def _parsed(
    fetched: Sequence[Any], thread_id: str, ns: str
) -> tuple[Row, dict[str, dict[int, str]]]:
    """A one-checkpoint row: its fields parsed, its three blob arrays grouped."""
    channels, versions, texts = fetched[FIELDS : FIELDS + 3]
    blobs = group_blobs(zip(channels or (), versions or (), texts or (), strict=True))
    return parse_row(fetched[:FIELDS], thread_id, ns), blobs


def known_head(
    checkpoint: Checkpoint,
    document: str,
    blobs: Mapping[str, Mapping[int, str]],
    base: KnownHead | None,
) -> KnownHead:
    """What a load leaves known: every blob-stored channel of `checkpoint`, sized by the
    text it was rebuilt from (plus the remembered part it continued)."""
    stored = json.loads(document).get("versions", {})
    sizes = {
        k: sum(len(t) for t in blobs.get(k, {}).values())
        + (base.sizes.get(k, 0) if base is not None else 0)
        for k in stored
    }
    return KnownHead(
        anchor=checkpoint.id,
        versions={k: int(v) for k, v in stored.items()},
        values={k: checkpoint.values[k] for k in stored},
        sizes=sizes,
    )


def group_blobs(fetched: Iterable[tuple[str, int, str]]) -> dict[str, dict[int, str]]:
    blobs: dict[str, dict[int, str]] = {}
    for channel, version, text in fetched:
        blobs.setdefault(channel, {})[version] = text
    return blobs


def version_ranges(rows: Sequence[Row]) -> dict[str, tuple[int, int]]:
    """Per channel, the version range that covers the blobs every row needs (its values,
    and the blobs of its step child that the child's writes point into)."""
    ranges: dict[str, tuple[int, int]] = {}

    def cover(channel: str, low: int, high: int) -> None:
        known = ranges.get(channel)
        if known is not None:
            low, high = min(known[0], low), max(known[1], high)
        ranges[channel] = (low, high)

    for row in rows:
        document = json.loads(row.encoded.document)
        chains = chains_of(document)
        for channel, version in document.get("versions", {}).items():
            high = int(version)
            cover(channel, chains[channel][0] if channel in chains else high, high)
        if row.child_writes is not None and row.child_seq is not None:
            for channel in task_writes.referenced(row.child_writes):
                cover(channel, row.child_seq, row.child_seq)
    return ranges


__all__ = [
    "FIELDS",
    "Row",
    "decode_fetched",
    "decode_head",
    "decode_rows",
    "group_blobs",
    "known_head",
    "parse_row",
    "version_ranges",
]
