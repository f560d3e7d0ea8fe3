"""How checkpoints become rows: one JSON document per checkpoint plus channel blobs.

Small scalar values live inline in the checkpoint document. Every other channel value is a
blob keyed by `(channel, version)`, written only when the channel changes, so an unchanged
value is stored once. A list that only grew since the previous version (a message list with
an append reducer) is stored as a delta: `{"b": base_version, "a": [appended items]}`; a full
value is `{"f": value}`. A full snapshot is taken again once the appended part since the
last snapshot is `SNAPSHOT_GROWTH` (3) times as long as the snapshot itself (and at least
`SNAPSHOT_MIN` items): snapshots then add at most 4/3 of the list's bytes, storage stays
linear in the work and a read stays proportional to the list's length (one snapshot and
at most three times its length in deltas).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from beamweaver_core.checkpoint import serde, task_writes
from beamweaver_core.checkpoint.types import Checkpoint, NewCheckpoint, TaskRecord, TaskSpec
from beamweaver_core.types import Interrupt, Send

SNAPSHOT_MIN = 256
SNAPSHOT_GROWTH = 3
"""A new snapshot once the items appended since the last one are this many times the
snapshot (the list grew 4x): snapshots then cost at most 4/3 of the list's bytes."""
_INLINE_STR_MAX = 256


@dataclass(frozen=True, slots=True)
class EncodedCheckpoint:
    """A checkpoint ready to store: scalar columns, a JSON document, and its new blobs;
    `writes`: the stored writes of the step that produced it (`task_writes`), if any."""

    thread_id: str
    ns: str
    id: str
    seq: int
    step: int
    parent_id: str | None
    source: str
    created_at: datetime
    document: str
    metadata: str
    blobs: tuple[tuple[str, int, str], ...]
    writes: str | None = None


def _is_inline(value: Any) -> bool:
    kind = type(value)
    return (
        value is None
        or kind is bool
        or kind is int
        or kind is float
        or (kind is str and len(value) <= _INLINE_STR_MAX)
    )


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_task(task: TaskSpec) -> list[Any]:
    if task.push is None:
        return [task.id, task.name]
    return [task.id, task.name, task.push, serde.to_jsonable(task.arg, ("<send>", task.name))]


def decode_task(data: list[Any]) -> TaskSpec:
    if len(data) == 2:
        return TaskSpec(id=data[0], name=data[1])
    return TaskSpec(id=data[0], name=data[1], push=data[2], arg=serde.from_jsonable(data[3]))


def plan_storage(
    parent_chains: Mapping[str, tuple[int, int]],
    parent_versions: Mapping[str, int],
    values: Mapping[str, Any],
    appended: Mapping[str, int | None],
    seq: int,
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """Decide how the changed channels of checkpoint `seq` are stored.

    `appended[key]` is the length of the parent's list when the new list only appends to
    it, else `None`. Returns the new `chains` and the `deltas` to write.
    """
    chains = dict(parent_chains)
    deltas: dict[str, tuple[int, int]] = {}
    for key, prefix in appended.items():
        value = values.get(key)
        if not isinstance(value, list):
            chains.pop(key, None)
            continue
        parent_chain = parent_chains.get(key)
        if prefix is not None and parent_chain is not None and key in parent_versions:
            _, snap_len = parent_chain
            if len(value) - snap_len < max(SNAPSHOT_MIN, SNAPSHOT_GROWTH * snap_len):
                deltas[key] = (parent_versions[key], prefix)
                continue
        chains[key] = (seq, len(value))
    return chains, deltas


def encode_checkpoint(new: NewCheckpoint) -> EncodedCheckpoint:
    """Encode `new`; raises `TypeError` naming the state path of an unstorable value."""
    cp = new.checkpoint
    inline: dict[str, Any] = {}
    blobs: list[tuple[str, int, str]] = []
    versions: dict[str, int] = {}
    held: dict[str, task_writes.Held] = {}
    for key, value in cp.values.items():
        if _is_inline(value):
            inline[key] = serde.to_jsonable(value, (key,))
            continue
        versions[key] = cp.versions[key]
        if key not in new.changed:
            continue
        delta = new.deltas.get(key)
        if delta is not None:
            base_version, prefix = delta
            items = value[prefix:]
            appended = [serde.to_jsonable(item, (key, prefix + i)) for i, item in enumerate(items)]
            blobs.append((key, cp.seq, _dump({"b": base_version, "a": appended})))
            held[key] = task_writes.Held(False, None, items)
        else:
            blobs.append((key, cp.seq, _dump({"f": serde.to_jsonable(value, (key,))})))
            held[key] = task_writes.Held(True, value, value if type(value) is list else None)
    # Empty parts are left out (readers default them): a few bytes on every checkpoint row.
    parts = {
        "inline": inline,
        "versions": versions,
        "chains": {k: list(v) for k, v in cp.chains.items() if k in versions},
        "tasks": [encode_task(t) for t in cp.tasks],
        "barriers": {k: list(v) for k, v in cp.barriers.items()},
    }
    document = {k: v for k, v in parts.items() if v}
    return EncodedCheckpoint(
        thread_id=cp.thread_id,
        ns=cp.ns,
        id=cp.id,
        seq=cp.seq,
        step=cp.step,
        parent_id=cp.parent_id,
        source=cp.source,
        created_at=cp.created_at,
        document=_dump(document),
        metadata=_dump(serde.to_jsonable(cp.metadata, ("<metadata>",))),
        blobs=tuple(blobs),
        writes=task_writes.encode(new.writes, held) if new.writes else None,
    )


def chains_of(document: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    return {k: (int(v[0]), int(v[1])) for k, v in document.get("chains", {}).items()}


BlobFetcher = Callable[[str, int, int], Mapping[int, str]]
"""`fetch(channel, from_version, to_version)` → `{version: blob text}` in that range."""


Known = Mapping[str, tuple[int, Any]]
"""Channel values decoded before: `{channel: (version, value)}` (see `known_values`)."""


def rebuild_values(
    document: Mapping[str, Any], fetch: BlobFetcher, known: Known | None = None
) -> dict[str, Any]:
    """Rebuild a checkpoint's values from its document and blobs.

    A channel whose version is in `known` is taken from there; one that only appended to a
    known version is rebuilt from it and the deltas after it (`fetch` need only have those).
    """
    values: dict[str, Any] = {
        k: serde.from_jsonable(v) for k, v in document.get("inline", {}).items()
    }
    chains = document.get("chains", {})
    for key, version in document.get("versions", {}).items():
        base = known.get(key) if known else None
        if base is not None and base[0] == version:
            values[key] = base[1]
            continue
        chain = chains.get(key)
        low = int(chain[0]) if chain else version
        blobs = fetch(key, low, version)
        values[key] = _rebuild_channel(key, version, blobs, base)
    return values


def _rebuild_channel(
    key: str, version: int, blobs: Mapping[int, str], base: tuple[int, Any] | None = None
) -> Any:
    parts: list[list[Any]] = []
    current = version
    while True:
        if base is not None and current == base[0] and type(base[1]) is list:
            value = base[1]
        else:
            text = blobs.get(current)
            if text is None:
                raise LookupError(f"Checkpoint storage is missing blob {key!r} version {current}")
            blob = serde.loads(text)
            if "f" not in blob:
                parts.append(blob["a"])
                current = blob["b"]
                continue
            value = blob["f"]
            if not parts:
                return value
        out = list(value)
        for appended in reversed(parts):
            out.extend(appended)
        return out


def encode_record(record: TaskRecord) -> str:
    data: dict[str, Any] = {"s": record.status}
    if record.writes:
        data["w"] = [[k, v] for k, v in record.writes]
    if record.routes:
        data["r"] = list(record.routes)
    if record.answers:
        data["a"] = list(record.answers)
    if record.interrupts:
        data["i"] = list(record.interrupts)
    if record.questions:
        data["q"] = [[index, value] for index, value in sorted(record.questions.items())]
    if record.error is not None:
        data["e"] = record.error
    return serde.dumps(data, ("<pending write>",))


def decode_record(text: str) -> TaskRecord:
    data = serde.loads(text)
    routes: Iterable[Any] = data.get("r", ())
    return TaskRecord(
        status=data["s"],
        writes=tuple((k, v) for k, v in data.get("w", ())),
        routes=tuple(r if isinstance(r, str | Send) else str(r) for r in routes),
        answers=tuple(data.get("a", ())),
        interrupts=tuple(i for i in data.get("i", ()) if isinstance(i, Interrupt)),
        questions={int(index): value for index, value in data.get("q", ())},
        error=data.get("e"),
    )


def decode_checkpoint(
    row: EncodedCheckpoint,
    fetch: BlobFetcher,
    records: Mapping[str, TaskRecord],
    known: Known | None = None,
    results: task_writes.Results | None = None,
) -> Checkpoint:
    document = json.loads(row.document)
    values = rebuild_values(document, fetch, known)
    versions = {k: int(v) for k, v in document.get("versions", {}).items()}
    for key in document.get("inline", {}):
        versions.setdefault(key, 0)
    return Checkpoint(
        id=row.id,
        thread_id=row.thread_id,
        ns=row.ns,
        seq=row.seq,
        step=row.step,
        parent_id=row.parent_id,
        source=row.source,  # type: ignore[arg-type]
        created_at=row.created_at,
        values=values,
        versions=versions,
        tasks=tuple(decode_task(t) for t in document.get("tasks", ())),
        barriers={k: tuple(v) for k, v in document.get("barriers", {}).items()},
        metadata=serde.loads(row.metadata),
        chains=chains_of(document),
        records=records,
        results=results or {},
    )
