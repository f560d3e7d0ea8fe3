"""The super-step state machine of one thread namespace: where a run stands, and its steps.

`StepLoop` holds the position (values, the tasks scheduled by the current checkpoint, their
pending records, join barriers) and runs the steps from there: `next_step()` says what to
run or how the run ends, the driver (`execution.py`) runs the tasks, `absorb()` takes their
outcomes and merges a complete step in task order (never completion order) into the next
checkpoint (which keeps the tasks' writes, for the history: `checkpoint.task_writes`), and
`commit()` saves what was staged in one commit. A step whose tasks did not all finish
(some paused or failed) saves the finished tasks' results as pending records instead, so
they are not run again on resume. While some tasks of a step still run, the ones that
finished are saved at once (`save_finished`, one commit for all that finished meanwhile):
a crash mid-step does not run them again. How a call reaches its first step (fresh
input, a resume, a fork, `update_state`) is `loop.RunLoop`'s part.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from beamweaver_core.checkpoint.types import (
    BREAKPOINT_TASK,
    Checkpoint,
    Source,
    TaskRecord,
    TaskSpec,
)
from beamweaver_core.exceptions import GraphRecursionError, InvalidUpdateError
from beamweaver_core.graph.checkpoints import CheckpointStager
from beamweaver_core.graph.definition import GraphDefinition
from beamweaver_core.graph.interrupts import GraphInterrupt, ParentCommand, TaskScope
from beamweaver_core.graph.scheduling import (
    pending_breakpoint,
    routes_after,
    runnable,
    split_routes,
    unsaved_tasks,
)
from beamweaver_core.graph.threads import in_thread
from beamweaver_core.graph.updates import (
    apply_writes,
    conflict_message,
    finished_conflict,
    merge_step,
)
from beamweaver_core.types import Completed, Interrupt, Interrupted, Send

if TYPE_CHECKING:
    from beamweaver_core.checkpoint.base import Checkpointer
    from beamweaver_core.graph.runtime import EventSink

DEFAULT_RECURSION_LIMIT = 25

MAX_TASK_ERROR_CHARS = 4096
"""How much of a failed task's error is kept: the text comes from node, tool and model
code (an exception message may quote a whole model reply)."""


def task_error(exc: BaseException) -> str:
    """A task's error as it is stored and shown: `repr(exc)`, as LangGraph stores its
    ERROR write, cut to `MAX_TASK_ERROR_CHARS`."""
    try:
        text = repr(exc)
    except Exception:  # an exception whose own __repr__ fails is still recorded
        text = f"{type(exc).__name__}(<unprintable>)"
    if len(text) <= MAX_TASK_ERROR_CHARS:
        return text
    cut = len(text) - MAX_TASK_ERROR_CHARS
    return f"{text[:MAX_TASK_ERROR_CHARS]}… [{cut} more characters cut]"


@dataclass(slots=True)
class TaskOutcome:
    """How one task ended: `done` (its writes and routes), `interrupted` (the interrupts
    it waits on and the answers it consumed), `parent` (it addressed the parent graph:
    `error` is the `ParentCommand`) or `failed` (`error`)."""

    task: TaskSpec
    status: str  # "done" | "interrupted" | "parent" | "failed"
    writes: tuple[tuple[str, Any], ...] = ()
    routes: tuple[str | Send, ...] = ()
    answers: tuple[Any, ...] = ()
    interrupts: tuple[Interrupt, ...] = ()
    error: BaseException | None = None
    questions: Mapping[int, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Pause:
    interrupts: tuple[Interrupt, ...]


@dataclass(slots=True)
class Failure:
    error: BaseException


class StepLoop:
    """One run of a graph on `(thread_id, ns)`: the root run saves to `checkpointer`; a
    nested run (`parent` is the task running it) saves to its root's, under the task's
    namespace."""

    def __init__(
        self,
        graph: GraphDefinition,
        config: dict[str, Any],
        context: Any,
        sink: EventSink | None,
        checkpointer: Checkpointer | None = None,
        parent: TaskScope | None = None,
    ) -> None:
        self.graph = graph
        self.config = config
        self.context = context
        self.sink = sink
        self.parent = parent
        configurable = config.get("configurable") or {}
        if parent is not None and parent.run is not None:
            run: StepLoop = parent.run
            self.checkpointer: Checkpointer | None = run.checkpointer
            self.thread_id: str | None = run.thread_id
            self.ns = parent.child_ns(graph.name)
            self.resume_map: dict[str, Any] = parent.resume
            self.carried: list[tuple[Interrupt, Any]] = parent.carried
        else:
            self.checkpointer = checkpointer
            self.thread_id = configurable.get("thread_id")
            self.ns = ""
            self.resume_map = {}
            self.carried = []
            if self.checkpointer is not None and not self.thread_id:
                raise ValueError(
                    f"Graph {graph.name!r} has a checkpointer, so every call needs a thread: pass "
                    "config={'configurable': {'thread_id': '...'}}."
                )
        limit = config.get("recursion_limit", DEFAULT_RECURSION_LIMIT)
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(
                f"config['recursion_limit'] must be an int of at least 1, got {limit!r}"
            )
        self.recursion_limit = limit
        self.values: dict[str, Any] = {}
        self.tasks: tuple[TaskSpec, ...] = ()
        self.records: dict[str, TaskRecord] = {}
        self.barriers: dict[str, tuple[str, ...]] = {}
        self.step = -1
        self.current: Checkpoint | None = None
        self.staging = CheckpointStager(self.thread_id, self.ns)
        self._committing = threading.Lock()
        self.steps_run = 0
        self.breakpoint_passed = False
        self.saved: set[str] = set()
        """Tasks of the current step whose records `save_finished` already committed."""

    def _adopt(self, checkpoint: Checkpoint) -> None:
        self.current = checkpoint
        self.values = dict(checkpoint.values)
        self.tasks = checkpoint.tasks
        self.barriers = dict(checkpoint.barriers)
        self.step = checkpoint.step
        self.records = dict(checkpoint.records)
        passed = self.records.pop(BREAKPOINT_TASK, None)
        self.breakpoint_passed = passed is not None

    # -- the step ---------------------------------------------------------------------

    def pending_interrupts(self) -> tuple[Interrupt, ...]:
        """Interrupts the current step waits on (task order), then a pending breakpoint."""
        out: list[Interrupt] = []
        for task in self.tasks:
            record = self.records.get(task.id)
            if record is not None and record.status == "interrupted":
                out.extend(record.interrupts)
        bp = self._pending_breakpoint()
        if bp is not None:
            out.append(bp)
        return tuple(out)

    def _pending_breakpoint(self) -> Interrupt | None:
        if self.breakpoint_passed:
            return None
        return pending_breakpoint(self.graph, self.current, self.ns, self.tasks, self.records)

    def next_step(self) -> list[tuple[TaskSpec, tuple[Any, ...]]] | Completed | Pause:
        """The tasks to run now (with their consumed answers), or how the run ends."""
        bp = self._pending_breakpoint()
        if bp is not None:
            if bp.id in self.resume_map:
                self._pass_breakpoint()
            else:
                return Pause((bp,))
        if not self.tasks:
            return Completed(state=dict(self.values))
        to_run, waiting = runnable(self.tasks, self.records, self.resume_map)
        if not to_run:
            if waiting:
                return Pause(self.pending_interrupts())
            return []
        if self.steps_run >= self.recursion_limit:
            raise GraphRecursionError(
                f"Recursion limit of {self.recursion_limit} reached: the run took "
                f"{self.steps_run} super-steps and still has work scheduled "
                f"({', '.join(sorted({t.name for t, _ in to_run}))}). Check for an unintended "
                "cycle, or raise config['recursion_limit']."
            )
        return to_run

    def _pass_breakpoint(self) -> None:
        assert self.current is not None
        self.breakpoint_passed = True
        self.staging.record(self.current.id, BREAKPOINT_TASK, TaskRecord(status="passed"))

    def save_finished(self, outcomes: Sequence[TaskOutcome]) -> bool:
        """Stage the records of tasks that finished while siblings still run (with what
        else was staged, e.g. the input checkpoint they run after); `True` if there is
        something to commit now. Nothing is saved once the finished tasks conflict (the
        step could never merge)."""
        if self.checkpointer is None or self.current is None:
            return False
        fresh = {
            o.task.id: TaskRecord(status="done", writes=o.writes, routes=o.routes)
            for o in outcomes
            if o.status == "done" and o.task.id not in self.saved
        }
        if not fresh:
            return False
        done = {t: r for t, r in self.records.items() if r.status == "done"}
        if finished_conflict(self.tasks, {**done, **fresh}, self.graph.reducers) is not None:
            return False
        for tid, record in fresh.items():
            self.staging.record(self.current.id, tid, record)
        self.saved.update(fresh)
        return True

    def absorb(self, outcomes: Sequence[TaskOutcome]) -> Pause | Failure | None:
        """Take the outcomes of the tasks that ran; merge the step if it is complete."""
        failure: BaseException | None = None
        parent_command: ParentCommand | None = None
        fresh: list[tuple[str, TaskRecord]] = []
        for outcome in outcomes:
            task = outcome.task
            if outcome.status == "done":
                record = TaskRecord(status="done", writes=outcome.writes, routes=outcome.routes)
            elif outcome.status == "interrupted":
                record = TaskRecord(
                    status="interrupted",
                    answers=outcome.answers,
                    interrupts=outcome.interrupts,
                    questions=outcome.questions,
                )
            elif outcome.status == "parent":
                if parent_command is None:
                    assert isinstance(outcome.error, ParentCommand)
                    parent_command = outcome.error
                continue
            else:
                assert outcome.error is not None
                if failure is None:
                    failure = outcome.error
                record = _failed(self.records.get(task.id), outcome.error)
            self.records[task.id] = record
            fresh.append((task.id, record))
        if parent_command is not None:
            raise parent_command
        if failure is None and all(
            (r := self.records.get(t.id)) is not None and r.status == "done" for t in self.tasks
        ):
            conflict = self.finished_conflict()
            if conflict is None:
                self._merge()
                return None
            # It can never merge: keep every record and show none applied, so the outcome
            # does not depend on which writer's record `save_finished` committed first.
            failure = InvalidUpdateError(conflict_message(*conflict))
        if failure is None:
            self._check_finished_writes()
        # The step stays open: keep what finished or paused so it is not run again.
        if self.checkpointer is not None and self.current is not None:
            for tid, rec in fresh:
                if tid not in self.saved:
                    self.staging.record(self.current.id, tid, rec)
        if failure is not None:
            return Failure(failure)
        return Pause(self.pending_interrupts())

    def _check_finished_writes(self) -> None:
        """A paused step whose finished tasks already wrote one key without a reducer
        twice can never merge: fail now, as the merge would, instead of pausing and showing
        a state that will never exist. The pause is not saved (records `save_finished`
        committed before the second writer finished stay, as LangGraph keeps the writes
        of each task that finished)."""
        conflict = self.finished_conflict()
        if conflict is not None:
            waiting = [i.id for i in self.pending_interrupts()]
            raise InvalidUpdateError(
                conflict_message(*conflict)
                + f" The step paused (waiting on {waiting}) but could never complete, so "
                "it fails now, before anyone answers; its pause was not saved."
            )

    def _merge(self) -> None:
        graph = self.graph
        old_values = self.values
        values, written = merge_step(self.tasks, self.records, old_values, graph.reducers)
        barriers = dict(self.barriers)
        routes: list[str | Send] = []
        for task in self.tasks:
            chosen = self.records[task.id].routes
            routes.extend(routes_after(graph, task.name, values, chosen, barriers))
        ran = tuple(sorted({t.name for t in self.tasks}))
        self.values = values
        self.steps_run += 1
        step = self.step + 1
        self._commit_step(
            source="loop",
            parent=self.current,
            old_values=old_values,
            changed_keys=written,
            routes=routes,
            barriers=barriers,
            step=step,
            after=ran if graph.interrupt_after else (),
            writes=(
                {t.id: self.records[t.id].writes for t in self.tasks}
                if self.checkpointer is not None
                else None
            ),
        )
        if self.sink is not None:
            self.sink.emit("state.updated", {"step": step, "updated": sorted(written)}, ns=self.ns)

    def _commit_step(
        self,
        *,
        source: Source,
        parent: Checkpoint | None,
        old_values: dict[str, Any],
        changed_keys: set[str],
        routes: Sequence[str | Send],
        barriers: dict[str, tuple[str, ...]],
        step: int,
        after: tuple[str, ...],
        writes: Mapping[str, tuple[tuple[str, Any], ...]] | None = None,
    ) -> None:
        self.step = step
        self.barriers = barriers
        pulls, sends = split_routes(routes)
        if self.checkpointer is None:
            self.tasks = unsaved_tasks(pulls, sends)
            self.records = {}
            return
        new = self.staging.checkpoint(
            source=source,
            parent=parent,
            values=self.values,
            old_values=old_values,
            changed_keys=changed_keys,
            barriers=barriers,
            step=step,
            metadata=self._metadata(after=after),
            pulls=pulls,
            sends=sends,
            writes=writes,
        )
        self.current = new
        self.tasks = new.tasks
        self.records = {}
        self.saved = set()
        self.breakpoint_passed = False

    def _metadata(self, *, after: Sequence[str]) -> dict[str, Any]:
        metadata: dict[str, Any] = {}
        run_id = self.config.get("run_id")
        if run_id is not None:
            metadata["run_id"] = str(run_id)
        if after:
            metadata["_after"] = list(after)
        if (
            self.parent is not None
            and self.parent.run is not None
            and self.parent.run.current is not None
        ):
            metadata["parents"] = {self.parent.run.ns: self.parent.run.current.id}
        return metadata

    # -- ending -----------------------------------------------------------------------

    def commit(self) -> None:
        """Save what was staged (one transaction of the checkpointer), after the
        checkpoints the runs this one is nested in staged and did not save yet.

        A run's input checkpoint rides with its first step's commit; a subgraph in that
        step commits its own checkpoints before the step ends. Saved first, they named a
        parent checkpoint not stored yet, and on a worker carried the run's stored events,
        so a live stream read the run's start with no checkpoint of the run to show. So a
        nested run's commit first commits its parents' staged checkpoints: one commit more,
        only for a run whose first step holds a subgraph. Commits of one run are
        serialized (a parent's own commit may race a subgraph's on another thread)."""
        outer = self.parent.run if self.parent is not None else None
        if outer is not None and outer.staging.holds_checkpoints():
            outer.commit()
        with self._committing:
            staged, records = self.staging.flush()
            if self.checkpointer is not None and (staged or records):
                assert self.thread_id is not None
                self.checkpointer.commit(self.thread_id, self.ns, staged, records)

    async def acommit(self) -> None:
        """`commit`, awaited (on a thread for a blocking checkpointer)."""
        if self.checkpointer is not None and self.checkpointer.blocking:
            await in_thread(self.commit)
        else:
            self.commit()

    def finished_conflict(self) -> tuple[str, list[str]] | None:
        """A key without a reducer that finished tasks of the open step wrote twice (the
        step can never merge), with its writers."""
        return finished_conflict(self.tasks, self.records, self.graph.reducers)

    def interrupted_state(self) -> dict[str, Any]:
        """The values so far, including writes of tasks that finished in the paused step
        (none if they conflict: that step can never merge)."""
        values = dict(self.values)
        if self.finished_conflict() is not None:
            return values
        for task in self.tasks:
            record = self.records.get(task.id)
            if record is not None and record.status == "done":
                apply_writes(values, record.writes, self.graph.reducers)
        return values

    def pause_result(self, pause: Pause) -> Interrupted:
        if self.parent is not None:
            raise GraphInterrupt(pause.interrupts)
        return Interrupted(
            interrupt=pause.interrupts[0],
            interrupts=pause.interrupts,
            state=self.interrupted_state(),
        )


def _failed(previous: TaskRecord | None, error: BaseException) -> TaskRecord:
    """The record of a task whose attempt raised `error`. A task that waited on a question
    keeps waiting on it (the answer is discarded with the failed attempt, so it can be
    answered again); any other runs again when the thread continues."""
    if previous is not None and previous.status == "interrupted":
        return replace(previous, error=task_error(error))
    return TaskRecord(status="failed", error=task_error(error))


__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "MAX_TASK_ERROR_CHARS",
    "Failure",
    "Pause",
    "StepLoop",
    "TaskOutcome",
    "task_error",
]
