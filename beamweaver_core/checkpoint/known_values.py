"""Channel values this process already decoded, reused when a load proves them current.

A long chat's head rebuilds its message list from every delta since the last snapshot, so
a load that decodes it again at every turn costs time in proportion to the thread's length.
`PostgresCheckpointer` instead remembers, per `(database, thread, namespace)`, the values
of the last head it read or wrote (`KnownHead`), and its next load sends what it knows
along: the same statement that reads the head from the database checks that the
remembered checkpoint (the *anchor*) still exists and fetches only the blobs written after
the remembered versions. Nothing is trusted without that check, so another process
continuing the thread, a deleted or pruned thread, or a rolled-back write all fall back to
reading what the database holds.

Why this is sound: a blob `(channel, version)` is written once (insert-if-absent, never
updated) by the checkpoint whose `seq` is `version`, and the versions a checkpoint refers
to stay stored while it exists (pruning keeps them). So while the anchor exists, the values
it was decoded (or encoded) from are exactly the ones the database would give again.

What is remembered is decoded from the stored JSON text itself (on a write: the blobs just
written), never the objects a node returned, so a remembered value equals what a fresh
process reads. Values are handed out as shallow copies (`handout`): a node that appends to
its state in place does not change what is remembered. The items inside are shared, as
they already are between the nodes of one run (nodes must return updates, not mutate
the state they were given; messages are frozen).

Hand-written rather than `functools.lru_cache`: entries are replaced as threads move on,
bounded by their encoded size, and dropped per thread.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beamweaver_core.checkpoint import serde
from beamweaver_core.checkpoint.encoding import EncodedCheckpoint

DEFAULT_MAX_BYTES = 32 * 2**20
"""Encoded bytes of values kept per process (the decoded objects take a few times more)."""

Key = tuple[str, str, str]
"""`(database alias, thread id, namespace)`."""


@dataclass(frozen=True, slots=True)
class KnownHead:
    """The values of checkpoint `anchor`, for the channels in `versions` (`{channel:
    version}`); `sizes[channel]` is the encoded length they were decoded from."""

    anchor: str
    versions: Mapping[str, int]
    values: Mapping[str, Any]
    sizes: Mapping[str, int]

    @property
    def size(self) -> int:
        return sum(self.sizes.values())

    def as_known(self) -> dict[str, tuple[int, Any]]:
        """`{channel: (version, value)}`, as `encoding.rebuild_values` takes it."""
        return {k: (v, self.values[k]) for k, v in self.versions.items()}


def handout(value: Any) -> Any:
    """A copy of a remembered value's outer list or dict, for the engine to own."""
    kind = type(value)
    if kind is list:
        return list(value)
    if kind is dict:
        return dict(value)
    return value


class KnownValues:
    """The remembered heads of one process, least recently used dropped first once their
    encoded size passes `max_bytes`. Thread-safe."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, KnownHead] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Key) -> KnownHead | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Key, entry: KnownHead | None) -> None:
        """Remember `entry` for `key` (`None`: forget it)."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            if entry is None or not entry.versions or entry.size > self.max_bytes:
                return
            self._entries[key] = entry
            self._bytes += entry.size
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.size

    def forget_thread(self, using: str, thread_id: str) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == using and k[1] == thread_id]:
                self._bytes -= self._entries.pop(key).size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def written(self, key: Key, checkpoints: Sequence[EncodedCheckpoint]) -> None:
        """After a successful write of `checkpoints` (in order): remember the last one."""
        if not checkpoints:
            return
        entry = self.get(key)
        for cp in checkpoints:
            entry = child_entry(entry, cp)
        self.put(key, entry)


def child_entry(parent: KnownHead | None, cp: EncodedCheckpoint) -> KnownHead:
    """What is known of checkpoint `cp` once written: the channels its own blobs give in
    full, and those it shares with or appends to `parent` when `parent` is its parent."""
    document = json.loads(cp.document)
    versions = {k: int(v) for k, v in document.get("versions", {}).items()}
    base = parent if parent is not None and parent.anchor == cp.parent_id else None
    texts = {channel: text for channel, version, text in cp.blobs if version == cp.seq}
    values: dict[str, Any] = {}
    sizes: dict[str, int] = {}
    for key, version in versions.items():
        text = texts.get(key) if version == cp.seq else None
        if text is None:
            if base is not None and base.versions.get(key) == version:
                values[key], sizes[key] = base.values[key], base.sizes[key]
            continue
        blob = serde.loads(text)
        if "f" in blob:
            values[key], sizes[key] = blob["f"], len(text)
        elif base is not None and base.versions.get(key) == blob["b"]:
            previous = base.values[key]
            if type(previous) is list:
                values[key] = [*previous, *blob["a"]]
                sizes[key] = base.sizes[key] + len(text)
    return KnownHead(
        anchor=cp.id,
        versions={k: versions[k] for k in values},
        values=values,
        sizes=sizes,
    )


VALUES = KnownValues()
"""The process-wide remembered heads, shared by every `PostgresCheckpointer`."""


__all__ = ["DEFAULT_MAX_BYTES", "VALUES", "KnownHead", "KnownValues", "child_entry", "handout"]
