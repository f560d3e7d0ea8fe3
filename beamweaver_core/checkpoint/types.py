"""Shapes the engine and every checkpointer exchange."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from beamweaver_core.types import Interrupt, Send

Source = Literal["input", "loop", "update", "fork"]

BREAKPOINT_TASK = "__breakpoint__"
"""Task id of the record that marks a static breakpoint of a checkpoint as passed."""


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A task scheduled for the step after a checkpoint.

    Pull tasks run `name` on the graph state; push tasks (from `Send`) run it on `arg`.
    """

    id: str
    name: str
    push: int | None = None
    arg: Any = None

    @property
    def path(self) -> tuple[Any, ...]:
        return ("push", self.push) if self.push is not None else ("pull", self.name)


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """What a task of a pending step left behind (a "pending write").

    `done`: its state writes and the routes it chose, applied when the whole step finishes.
    `interrupted`: the interrupts it is waiting on and the answers it already consumed;
    `questions[n]` is the value the question answered by `answers[n]` was asked with (so
    a node re-run on resume can read what it was answered about: `answered_interrupt()`).
    `failed`: the task raised; it runs again when the thread continues.
    `passed`: (breakpoint record only) the static breakpoint of the checkpoint was resumed.
    `error` is what the task's last attempt raised (`failed`, or `interrupted` when an
    attempt to answer its question failed: the question stays pending), as LangGraph's
    ERROR write of the task.
    """

    status: Literal["done", "interrupted", "failed", "passed"]
    writes: tuple[tuple[str, Any], ...] = ()
    routes: tuple[str | Send, ...] = ()
    answers: tuple[Any, ...] = ()
    interrupts: tuple[Interrupt, ...] = ()
    questions: Mapping[int, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The state of one thread namespace after a super-step, and the step to run next.

    `versions[key]` is the `seq` of the checkpoint that last changed `key`; `chains[key]`
    (only for list channels stored as appended deltas) is `(snapshot_version,
    snapshot_length)`. `records` are the pending writes of the step after this checkpoint.
    `results` are what each of its tasks wrote once that step completed, by task id: read
    from the checkpoint the step produced (see `checkpoint.task_writes`), so empty while
    the step is open. They are no pending writes: a fork from here runs the tasks again.
    """

    id: str
    thread_id: str
    ns: str
    seq: int
    step: int
    parent_id: str | None
    source: Source
    created_at: datetime
    values: dict[str, Any]
    versions: dict[str, int]
    tasks: tuple[TaskSpec, ...]
    barriers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    chains: dict[str, tuple[int, int]] = field(default_factory=dict)
    records: Mapping[str, TaskRecord] = field(default_factory=dict)
    results: Mapping[str, tuple[tuple[str, Any], ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewCheckpoint:
    """A checkpoint to write, with what changed since its parent.

    `changed` names the channels whose value changed (only those get new blobs);
    `deltas[key] = (base_version, prefix_length)` marks list channels stored as the items
    appended to version `base_version` (see `encoding.plan_storage`). `writes` (a `loop`
    checkpoint's) are the writes of the parent's tasks whose step produced it, by task id,
    stored with it (`checkpoint.task_writes`).
    """

    checkpoint: Checkpoint
    changed: frozenset[str]
    deltas: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    writes: Mapping[str, tuple[tuple[str, Any], ...]] = field(default_factory=dict)


__all__ = ["BREAKPOINT_TASK", "Checkpoint", "NewCheckpoint", "Source", "TaskRecord", "TaskSpec"]
