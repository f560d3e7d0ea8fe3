"""The checkpointer contract, shared by `MemoryCheckpointer` and `PostgresCheckpointer`.

A checkpointer stores, per `(thread_id, ns)`, a chain of checkpoints (each numbered by
`seq`, unique within the namespace, so two writers racing from one head cannot both
succeed) and, per checkpoint, the pending writes of the step after it (`TaskRecord`s, one
per task, replaced on every write).

`commit` is the only write: the checkpoints and records of one super-step, written in one
transaction. It validates and encodes everything first, so an unstorable value raises
`TypeError` (with its state path) before anything is written.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Sequence

from beamweaver_core.checkpoint.encoding import (
    EncodedCheckpoint,
    encode_checkpoint,
    encode_record,
)
from beamweaver_core.checkpoint.types import Checkpoint, NewCheckpoint, TaskRecord


class Checkpointer(ABC):
    """Stores checkpoints and pending writes of graph threads."""

    #: Whether `commit` does blocking I/O (async callers then run it in a thread).
    blocking: bool = True

    # Methods that child classes must implement.

    @abstractmethod
    def load(
        self, thread_id: str, ns: str = "", checkpoint_id: str | None = None
    ) -> Checkpoint | None:
        """The latest checkpoint of the namespace (or the one with `checkpoint_id`),
        with its pending records; `None` if there is none."""

    @abstractmethod
    def history(
        self,
        thread_id: str,
        ns: str = "",
        *,
        before: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Checkpoint]:
        """Checkpoints of the namespace, newest first (`before`: older than that id)."""

    @abstractmethod
    def _write(
        self,
        thread_id: str,
        ns: str,
        checkpoints: Sequence[EncodedCheckpoint],
        records: Sequence[tuple[str, str, str]],
    ) -> None:
        """Write encoded checkpoints and `(checkpoint_id, task_id, record)` rows atomically.

        Must raise `ThreadBusyError` if a checkpoint's `seq` is already taken in its
        namespace, writing nothing.
        """

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and record of the thread (all namespaces)."""

    @abstractmethod
    def namespaces(self, thread_id: str) -> list[str]:
        """Every namespace of the thread that holds checkpoints."""

    @abstractmethod
    def stored_bytes(self, thread_id: str) -> int:
        """Bytes the thread's checkpoints, blobs and records take in storage."""

    # Provided methods.

    def load_heads(self, thread_ids: Collection[str]) -> dict[str, Checkpoint]:
        """The latest checkpoint of each thread's root namespace, with its pending records,
        by thread id (a thread with none is left out), as `load(thread_id)` gives it.

        Here one `load` per thread; a backend overrides it to read them all at once (for
        a listing of many threads)."""
        heads = {thread_id: self.load(thread_id) for thread_id in dict.fromkeys(thread_ids)}
        return {thread_id: head for thread_id, head in heads.items() if head is not None}

    def commit(
        self,
        thread_id: str,
        ns: str,
        checkpoints: Sequence[NewCheckpoint] = (),
        records: Sequence[tuple[str, str, TaskRecord]] = (),
    ) -> None:
        """Write the checkpoints and records of one super-step in one transaction."""
        encoded = [encode_checkpoint(new) for new in checkpoints]
        encoded_records = [(cid, tid, encode_record(rec)) for cid, tid, rec in records]
        if encoded or encoded_records:
            self._write(thread_id, ns, encoded, encoded_records)


__all__ = ["Checkpointer"]
