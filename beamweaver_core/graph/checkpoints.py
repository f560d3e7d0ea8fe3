"""Building the checkpoints a run commits: ids, channel versions, storage plans, forks.

`CheckpointStager` collects, in order, the checkpoints and pending task records one call
of the loop has made; the driver commits them together (`flush`). A checkpoint gives a
channel a new version only when its value changed, and an append-only list is planned to
be stored as the items it appended (`encoding.plan_storage`), so storage grows with the
work, not with the length of the history.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from beamweaver_core.checkpoint import serde
from beamweaver_core.checkpoint.encoding import plan_storage
from beamweaver_core.checkpoint.types import Checkpoint, NewCheckpoint, Source, TaskRecord, TaskSpec
from beamweaver_core.types import Send

_MISSING: Any = object()


def new_id() -> str:
    """A fresh checkpoint (or task) id: 32 hex characters."""
    return os.urandom(16).hex()


def task_id(checkpoint_id: str, ns: str, path: str) -> str:
    """The id of the task at `path` scheduled by a checkpoint: stable, so a pending
    interrupt of that task keeps its id across reloads."""
    return hashlib.blake2b(f"{checkpoint_id}|{ns}|{path}".encode(), digest_size=16).hexdigest()


def scheduled_tasks(
    checkpoint_id: str, ns: str, pulls: Sequence[str], sends: Sequence[Send]
) -> tuple[TaskSpec, ...]:
    """The tasks a checkpoint schedules: one per pulled node, one per `Send`."""
    built = [TaskSpec(id=task_id(checkpoint_id, ns, name), name=name) for name in pulls]
    built.extend(
        TaskSpec(
            id=task_id(checkpoint_id, ns, f"push:{i}"),
            name=s.node,
            push=i,
            arg=serde.normalize(s.arg),
        )
        for i, s in enumerate(sends)
    )
    return tuple(built)


class CheckpointStager:
    """The checkpoints and task records of one thread namespace waiting to be committed.

    `seq` is the sequence number of the thread's newest checkpoint: the next one takes
    `seq + 1` (the checkpointer refuses a second child of one head).
    """

    def __init__(self, thread_id: str | None, ns: str) -> None:
        self.thread_id = thread_id
        self.ns = ns
        self.seq = 0
        self.checkpoints: list[NewCheckpoint] = []
        self.records: list[tuple[str, str, TaskRecord]] = []
        self._lock = threading.Lock()

    def checkpoint(
        self,
        *,
        source: Source,
        parent: Checkpoint | None,
        values: dict[str, Any],
        old_values: Mapping[str, Any],
        changed_keys: set[str],
        barriers: dict[str, tuple[str, ...]],
        step: int,
        metadata: dict[str, Any],
        tasks: tuple[TaskSpec, ...] | None = None,
        pulls: Sequence[str] = (),
        sends: Sequence[Send] = (),
        writes: Mapping[str, tuple[tuple[str, Any], ...]] | None = None,
    ) -> Checkpoint:
        """Stage the checkpoint after a step (or an input, or an update) and return it.

        Its tasks are `tasks` as given (an update keeps the pending ones) or, when `None`,
        scheduled from `pulls` and `sends`. `writes`: a step's, by task id, kept with the
        checkpoint (`checkpoint.task_writes`)."""
        assert self.thread_id is not None
        checkpoint_id = new_id()
        if tasks is None:
            tasks = scheduled_tasks(checkpoint_id, self.ns, pulls, sends)
        self.seq += 1
        seq = self.seq
        versions = dict(parent.versions) if parent is not None else {}
        appended: dict[str, int | None] = {}
        for key in changed_keys:
            new_value = values.get(key)
            old_value = old_values.get(key, _MISSING)
            if new_value is old_value and key in versions:
                continue
            versions[key] = seq
            appended[key] = _appended_prefix(old_value, new_value)
        for key in list(versions):
            if key not in values:
                del versions[key]
        chains, deltas = plan_storage(
            parent.chains if parent is not None else {},
            parent.versions if parent is not None else {},
            values,
            appended,
            seq,
        )
        checkpoint = Checkpoint(
            id=checkpoint_id,
            thread_id=self.thread_id,
            ns=self.ns,
            seq=seq,
            step=step,
            parent_id=parent.id if parent is not None else None,
            source=source,
            created_at=datetime.now(UTC),
            values=values,
            versions=versions,
            tasks=tasks,
            barriers=barriers,
            metadata=metadata,
            chains=chains,
        )
        changed = frozenset(appended) if parent is not None else frozenset(values)
        with self._lock:
            self.checkpoints.append(
                NewCheckpoint(checkpoint, changed=changed, deltas=deltas, writes=writes or {})
            )
        return checkpoint

    def fork(self, base: Checkpoint, metadata: dict[str, Any]) -> Checkpoint:
        """Stage a copy of the older checkpoint `base` as the thread's new head (time
        travel): same values and tasks (and task ids), on a new branch."""
        fork = Checkpoint(
            id=new_id(),
            thread_id=base.thread_id,
            ns=base.ns,
            seq=self.seq + 1,
            step=base.step,
            parent_id=base.id,
            source="fork",
            created_at=datetime.now(UTC),
            values=dict(base.values),
            versions=dict(base.versions),
            tasks=base.tasks,
            barriers=dict(base.barriers),
            metadata=metadata,
            chains=dict(base.chains),
        )
        self.seq = fork.seq
        with self._lock:
            self.checkpoints.append(NewCheckpoint(fork, changed=frozenset(base.versions)))
        return fork

    def record(self, checkpoint_id: str, task: str, record: TaskRecord) -> None:
        """Stage a pending record of task `task` of the step after `checkpoint_id`."""
        with self._lock:
            self.records.append((checkpoint_id, task, record))

    def holds_checkpoints(self) -> bool:
        """Whether a checkpoint is staged and not committed yet."""
        with self._lock:
            return bool(self.checkpoints)

    def flush(self) -> tuple[list[NewCheckpoint], list[tuple[str, str, TaskRecord]]]:
        """Take what must be committed now (one transaction). Under a lock: a subgraph's
        commit may flush its parent's staging while the parent's thread records a task
        that finished (`StepLoop.commit`)."""
        with self._lock:
            staged, records = self.checkpoints, self.records
            self.checkpoints, self.records = [], []
        return staged, records


def _appended_prefix(old: Any, new: Any) -> int | None:
    """Length of `old` if the list `new` only appends to the list `old`, else None."""
    if type(old) is not list or type(new) is not list or len(new) < len(old):
        return None
    for a, b in zip(old, new, strict=False):
        if a is not b:
            return None
    return len(old)


__all__ = ["CheckpointStager", "new_id", "scheduled_tasks", "task_id"]
