"""The super-step loop of one invoke/resume on one thread namespace.

Each step runs the tasks scheduled by the current checkpoint, merges their writes in task
order (never completion order) once every task has finished, and saves the next checkpoint
in one commit. A step whose tasks did not all finish (some paused or failed) saves the
finished tasks' results as pending records instead, so they are not run again on resume.

The loop is a state machine shared by the sync and async drivers in `compiled.py`:
`next_step()` says what to do, the driver runs the tasks, `absorb()` takes the outcomes,
and `flush()` returns what to commit.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from beamweaver_core.checkpoint import serde
from beamweaver_core.checkpoint.encoding import plan_storage
from beamweaver_core.checkpoint.types import (
    BREAKPOINT_TASK,
    Checkpoint,
    NewCheckpoint,
    Source,
    TaskRecord,
    TaskSpec,
)
from beamweaver_core.exceptions import (
    AmbiguousResumeError,
    CheckpointNotFoundError,
    GraphChangedError,
    GraphRecursionError,
    InvalidUpdateError,
    MissingResumeValueError,
    NothingToResumeError,
    UnexpectedResumeValueError,
    UnknownInterruptError,
)
from beamweaver_core.graph.interrupts import GraphInterrupt, ParentCommand, TaskScope
from beamweaver_core.graph.tasks import TaskOutcome, apply_writes, resolve_route
from beamweaver_core.types import (
    END,
    NULL_RESUME,
    START,
    Completed,
    Interrupt,
    Interrupted,
    Send,
)

if TYPE_CHECKING:
    from beamweaver_core.checkpoint.base import Checkpointer
    from beamweaver_core.graph.compiled import CompiledGraph
    from beamweaver_core.graph.runtime import EventSink

NO_VALUE: Any = object()
"""`resume()` called without a value (continue past a breakpoint)."""

DEFAULT_RECURSION_LIMIT = 25
_MISSING: Any = object()


def new_id() -> str:
    return os.urandom(16).hex()


def task_id(checkpoint_id: str, ns: str, path: str) -> str:
    return hashlib.blake2b(f"{checkpoint_id}|{ns}|{path}".encode(), digest_size=16).hexdigest()


def breakpoint_id(checkpoint_id: str, timing: str) -> str:
    return hashlib.blake2b(
        f"{checkpoint_id}|breakpoint|{timing}".encode(), digest_size=16
    ).hexdigest()


def is_resume_map(value: Any) -> bool:
    """A dict is a resume map iff it is empty or every key looks like an interrupt id."""
    if type(value) is not dict:
        return False
    return all(isinstance(k, str) and len(k) == 32 and _is_hex(k) for k in value)


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


@dataclass(slots=True)
class Pause:
    interrupts: tuple[Interrupt, ...]


@dataclass(slots=True)
class Failure:
    error: BaseException


class RunLoop:
    """One run of a compiled graph on `(thread_id, ns)`."""

    def __init__(
        self,
        graph: CompiledGraph,
        config: dict[str, Any],
        context: Any,
        sink: EventSink | None,
        parent: TaskScope | None = None,
    ) -> None:
        self.graph = graph
        self.config = config
        self.context = context
        self.sink = sink
        self.parent = parent
        configurable = config.get("configurable") or {}
        if parent is not None and parent.run is not None:
            run: RunLoop = parent.run
            self.checkpointer: Checkpointer | None = run.checkpointer
            self.thread_id: str | None = run.thread_id
            self.ns = parent.child_ns(graph.name)
            self.resume_map: dict[str, Any] = parent.resume
        else:
            self.checkpointer = graph.checkpointer
            self.thread_id = configurable.get("thread_id")
            self.ns = ""
            self.resume_map = {}
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
        self.seq = 0
        self.current: Checkpoint | None = None
        self.staged: list[NewCheckpoint] = []
        self.staged_records: list[tuple[str, str, TaskRecord]] = []
        self.steps_run = 0
        self.breakpoint_passed = False

    # -- setting up -------------------------------------------------------------------

    def _load_head(self) -> Checkpoint | None:
        assert self.checkpointer is not None and self.thread_id is not None
        return self.checkpointer.load(self.thread_id, self.ns)

    def start_nested(self, arg: Any) -> Completed | None:
        """Set up a subgraph run: continue its saved run if there is one, else start it.

        Returns the saved result when this exact subgraph call already completed (the
        parent task is being re-run after a pause or a crash).
        """
        head = self._load_head() if self.checkpointer is not None else None
        if head is not None:
            self._adopt(head)
            self.seq = head.seq
            if not head.tasks and not self._pending_breakpoint():
                return Completed(state=dict(head.values))
            return None
        self.start(arg, head=None)
        return None

    def start(self, arg: Any, head: Checkpoint | Any | None = _MISSING) -> None:
        """Fresh input: discard any pending step and run from START with `arg` applied."""
        if arg is not None and not isinstance(arg, Mapping):
            raise InvalidUpdateError(
                f"Graph input must be a dict of state values (or a Command), got {arg!r}."
            )
        if head is _MISSING:
            head = self._load_head() if self.checkpointer is not None else None
            if head is not None:
                self.seq = head.seq
        values = dict(head.values) if head is not None else {}
        if not arg:
            writes = []
        elif self.checkpointer is not None:
            writes = serde.normalize_writes(arg)
        else:
            writes = list(arg.items())
        if self.graph.keys is not None:
            unknown = [k for k, _ in writes if k not in self.graph.keys]
            if unknown:
                raise InvalidUpdateError(
                    f"The input has key(s) {unknown} that the state schema does not declare "
                    f"(declared: {sorted(self.graph.keys)})."
                )
        old_values = dict(values)
        apply_writes(values, writes, self.graph.reducers)
        routes = self._routes_after(START, values, ())
        self.values = values
        self._commit_step(
            source="input",
            parent=head,
            old_values=old_values,
            changed_keys={k for k, _ in writes},
            routes=routes,
            barriers={},
            step=(head.step + 1) if head is not None else -1,
            after=(),
        )

    def _adopt(self, checkpoint: Checkpoint) -> None:
        self.current = checkpoint
        self.values = dict(checkpoint.values)
        self.tasks = checkpoint.tasks
        self.barriers = dict(checkpoint.barriers)
        self.step = checkpoint.step
        self.records = dict(checkpoint.records)
        passed = self.records.pop(BREAKPOINT_TASK, None)
        self.breakpoint_passed = passed is not None

    def continue_(
        self,
        resume: Any,
        *,
        update: Mapping[str, Any] | None = None,
        goto: Sequence[str | Send] = (),
        checkpoint_id: str | None = None,
    ) -> None:
        """Continue the thread's pending step, answering interrupts with `resume`.

        Every check happens before anything is written, so a refused resume leaves the
        thread exactly as it was.
        """
        if self.checkpointer is None:
            raise NothingToResumeError(
                f"Graph {self.graph.name!r} has no checkpointer, so there is nothing saved to "
                "resume. Compile it with a checkpointer to pause and resume runs."
            )
        head = self._load_head()
        base = head
        if checkpoint_id is not None and (head is None or head.id != checkpoint_id):
            assert self.thread_id is not None
            base = self.checkpointer.load(self.thread_id, self.ns, checkpoint_id)
            if base is None:
                raise CheckpointNotFoundError(
                    f"Thread {self.thread_id!r} has no checkpoint {checkpoint_id!r}; list the "
                    "thread's checkpoints with get_state_history(config)."
                )
        if base is None:
            raise NothingToResumeError(
                f"Thread {self.thread_id!r} has nothing to resume: it has no checkpoint yet. "
                "Start it with invoke(input, config)."
            )
        self._adopt(base)
        self.check_tasks_known()
        assert head is not None
        self.seq = head.seq
        pending = self.pending_interrupts()
        self.resume_map = self._resume_map(resume, pending)
        if base is not head:
            self._fork(base)
        if update is not None or goto:
            self._apply_command(update, goto)
        if not self.tasks and not pending and not self.staged:
            raise NothingToResumeError(
                f"Thread {self.thread_id!r} has nothing to resume: its run is complete and no "
                "interrupt or breakpoint is pending. Start a new run with invoke(input, config)."
            )

    def check_tasks_known(self) -> None:
        """Refuse a saved step whose tasks name nodes this graph does not have."""
        missing = sorted({t.name for t in self.tasks if t.name not in self.graph.nodes})
        if missing:
            raise GraphChangedError(self.graph.name, missing, list(self.graph.nodes))

    def _resume_map(self, resume: Any, pending: tuple[Interrupt, ...]) -> dict[str, Any]:
        dynamic = [i for i in pending if i.timing is None]
        stops = [i for i in pending if i.timing is not None]
        breakpoints = {i.id: None for i in stops}
        pending_ids = [i.id for i in pending]
        if resume is NO_VALUE:
            if dynamic:
                raise MissingResumeValueError(i.id for i in dynamic)
            return breakpoints
        if is_resume_map(resume):
            unknown = [k for k in resume if k not in pending_ids]
            if unknown or not resume:
                raise UnknownInterruptError(unknown, pending_ids)
            # A breakpoint asks no question: `None` (or null_resume()) continues past it,
            # any other value would be discarded, so it is refused like an unasked answer.
            valued = [
                i
                for i in stops
                if (given := resume.get(i.id)) is not None and given is not NULL_RESUME
            ]
            if valued:
                raise UnexpectedResumeValueError(valued, resume[valued[0].id])
            return self._stored_answers(resume)
        if len(dynamic) > 1:
            raise AmbiguousResumeError(i.id for i in dynamic)
        if len(dynamic) == 1:
            return self._stored_answers({dynamic[0].id: resume})
        if breakpoints:
            if resume is not NULL_RESUME:
                raise UnexpectedResumeValueError(stops, resume)
            return breakpoints
        raise NothingToResumeError(
            f"Thread {self.thread_id!r} has no pending interrupt or breakpoint to answer with "
            f"{resume!r}. Check get_state(config).interrupts before resuming."
        )

    @staticmethod
    def _stored_answers(answers: Mapping[str, Any]) -> dict[str, Any]:
        """The answers as a checkpointer reads them back (tuples as lists), so a node gets
        the same value whether it runs now or after a reload; an answer that cannot be
        stored is refused here, before any node runs. `NULL_RESUME` is kept as the marker
        of an explicit `None`."""
        return {
            iid: answer
            if answer is NULL_RESUME
            else serde.stored_form(answer, (f"<resume {iid}>",))
            for iid, answer in answers.items()
        }

    def _fork(self, base: Checkpoint) -> None:
        """Time travel: continue from an older checkpoint on a new branch.

        The fork keeps the old checkpoint's tasks (and their ids, so pending interrupt ids
        stay valid) and the answers interrupted tasks had consumed; finished tasks run again.
        """
        kept = {tid: rec for tid, rec in self.records.items() if rec.status == "interrupted"}
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
            metadata=self._metadata(after=base.metadata.get("_after", ())),
            chains=dict(base.chains),
        )
        self.seq = fork.seq
        self.staged.append(NewCheckpoint(fork, changed=frozenset(base.versions)))
        for tid, rec in kept.items():
            self.staged_records.append((fork.id, tid, rec))
        self.current = fork
        self.records = kept
        self.breakpoint_passed = False

    def _apply_command(
        self,
        update: Mapping[str, Any] | None,
        goto: Sequence[str | Send],
        *,
        keep_breakpoint: bool = False,
    ) -> None:
        """`Command(update=..., goto=...)` as input: a new checkpoint with the update applied
        and the extra targets scheduled; pending tasks keep their ids and records (so their
        pending interrupts keep their ids too). With `keep_breakpoint` (`update_state`
        without `as_node`) a pending breakpoint stays pending, or passed if it was."""
        assert self.current is not None
        base = self.current
        writes = serde.normalize_writes(update or {})
        old_values = dict(self.values)
        apply_writes(self.values, writes, self.graph.reducers)
        tasks = list(self.tasks)
        pulls = {t.name for t in tasks if t.push is None}
        for target in goto:
            name = target.node if isinstance(target, Send) else target
            if name == END:
                continue
            if name not in self.graph.nodes:
                raise InvalidUpdateError(
                    f"Command(goto={name!r}) names an unknown node; known: {sorted(self.graph.nodes)}"
                )
            if isinstance(target, Send):
                arg = serde.normalize(target.arg)
                tasks.append(TaskSpec(id=new_id(), name=name, push=len(tasks), arg=arg))
            elif name not in pulls:
                tasks.append(TaskSpec(id=new_id(), name=name))
                pulls.add(name)
        new = self._make_checkpoint(
            source="update",
            parent=base,
            old_values=old_values,
            changed_keys={k for k, _ in writes},
            tasks=tuple(tasks),
            barriers=dict(self.barriers),
            step=base.step + 1,
            after=tuple(base.metadata.get("_after", ())) if keep_breakpoint else (),
        )
        self.step = new.step
        for tid, rec in self.records.items():
            self.staged_records.append((new.id, tid, rec))
        self.current = new
        self.tasks = new.tasks
        if keep_breakpoint and self.breakpoint_passed:
            self._pass_breakpoint()

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
        cp = self.current
        if cp is None or self.breakpoint_passed:
            return None
        graph = self.graph
        if graph.interrupt_after:
            for node in cp.metadata.get("_after", ()):
                if node in graph.interrupt_after:
                    return Interrupt(
                        id=breakpoint_id(cp.id, "after"),
                        value=None,
                        node=node,
                        ns=self.ns,
                        timing="after",
                    )
        if graph.interrupt_before and not self.records:
            for task in self.tasks:
                if task.name in graph.interrupt_before:
                    return Interrupt(
                        id=breakpoint_id(cp.id, "before"),
                        value=None,
                        node=task.name,
                        ns=self.ns,
                        timing="before",
                    )
        return None

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
        to_run: list[tuple[TaskSpec, tuple[Any, ...]]] = []
        waiting = False
        for task in self.tasks:
            record = self.records.get(task.id)
            if record is None:
                to_run.append((task, ()))
            elif record.status == "interrupted":
                if any(i.id in self.resume_map for i in record.interrupts):
                    to_run.append((task, record.answers))
                else:
                    waiting = True
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
        self.staged_records.append((self.current.id, BREAKPOINT_TASK, TaskRecord(status="passed")))

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
                if failure is None:
                    failure = outcome.error
                continue
            self.records[task.id] = record
            fresh.append((task.id, record))
        if parent_command is not None:
            raise parent_command
        if failure is None and all(
            (r := self.records.get(t.id)) is not None and r.status == "done" for t in self.tasks
        ):
            self._merge()
            return None
        if failure is None:
            self._check_finished_writes()
        # The step stays open: keep what finished or paused so it is not run again.
        if self.checkpointer is not None and self.current is not None:
            cid = self.current.id
            self.staged_records.extend((cid, tid, rec) for tid, rec in fresh)
        if failure is not None:
            return Failure(failure)
        return Pause(self.pending_interrupts())

    def _check_finished_writes(self) -> None:
        """A paused step whose finished tasks already wrote one key without a reducer
        twice can never merge: fail now, as the merge would, instead of pausing and showing
        a state that will never exist. Nothing of the step is saved."""
        reducers = self.graph.reducers
        writers: dict[str, list[str]] = {}
        for task in self.tasks:
            record = self.records.get(task.id)
            if record is None or record.status != "done":
                continue
            for key, _ in record.writes:
                if key not in reducers:
                    writers.setdefault(key, []).append(task.name)
        for key, names in writers.items():
            if len(names) > 1:
                waiting = [i.id for i in self.pending_interrupts()]
                raise InvalidUpdateError(
                    _conflict_message(key, names)
                    + f" The step paused (waiting on {waiting}) but could never complete, so "
                    "it fails now, before anyone answers; nothing of it was saved."
                )

    def _merge(self) -> None:
        graph = self.graph
        reducers = graph.reducers
        collected: dict[str, list[Any]] = {}
        for task in self.tasks:
            for key, value in self.records[task.id].writes:
                bucket = collected.get(key)
                if bucket is None:
                    collected[key] = [value]
                else:
                    bucket.append(value)
        old_values = self.values
        values = dict(old_values)
        for key, updates in collected.items():
            reducer = reducers.get(key)
            if reducer is None:
                if len(updates) > 1:
                    writers = [
                        t.name
                        for t in self.tasks
                        if any(k == key for k, _ in self.records[t.id].writes)
                    ]
                    raise InvalidUpdateError(_conflict_message(key, writers))
                values[key] = updates[0]
            else:
                current = values.get(key, _MISSING)
                for update in updates:
                    current = update if current is _MISSING else reducer(current, update)
                values[key] = current
        barriers = dict(self.barriers)
        routes: list[str | Send] = []
        for task in self.tasks:
            routes.extend(
                self._routes_after(task.name, values, self.records[task.id].routes, barriers)
            )
        ran = tuple(sorted({t.name for t in self.tasks}))
        self.values = values
        self.steps_run += 1
        step = self.step + 1
        self._commit_step(
            source="loop",
            parent=self.current,
            old_values=old_values,
            changed_keys=set(collected),
            routes=routes,
            barriers=barriers,
            step=step,
            after=ran if graph.interrupt_after else (),
        )
        if self.sink is not None:
            self.sink.emit(
                "state.updated", {"step": step, "updated": sorted(collected)}, ns=self.ns
            )

    def _routes_after(
        self,
        node: str,
        values: dict[str, Any],
        chosen: Sequence[str | Send],
        barriers: dict[str, tuple[str, ...]] | None = None,
    ) -> list[str | Send]:
        """Successors of `node` once it finished: static edges, joins, then its choices."""
        graph = self.graph
        routes: list[str | Send] = list(graph.successors.get(node, ()))
        if barriers is not None:
            for join in graph.joins_by_source.get(node, ()):
                arrived = set(barriers.get(join.key, ())) | {node}
                if arrived >= join.sources:
                    barriers.pop(join.key, None)
                    routes.append(join.target)
                else:
                    barriers[join.key] = tuple(sorted(arrived))
        if node == START:
            for branch in graph.branches.get(START, ()):
                decided = branch.route(values, None)
                routes.extend(resolve_route(branch, decided, graph.nodes))
        routes.extend(chosen)
        return routes

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
    ) -> None:
        self.step = step
        self.barriers = barriers
        pulls: set[str] = set()
        sends: list[Send] = []
        for route in routes:
            if isinstance(route, Send):
                sends.append(route)
            elif route != END:
                pulls.add(route)
        if self.checkpointer is None:
            # Without a checkpointer ids only need to tell the step's tasks apart.
            tasks = [TaskSpec(id=name, name=name) for name in sorted(pulls)]
            tasks.extend(
                TaskSpec(id=f"push:{i}", name=s.node, push=i, arg=s.arg)
                for i, s in enumerate(sends)
            )
            self.tasks = tuple(tasks)
            self.records = {}
            return
        new = self._make_checkpoint(
            source=source,
            parent=parent,
            old_values=old_values,
            changed_keys=changed_keys,
            tasks=None,
            barriers=barriers,
            step=step,
            after=after,
            pulls=sorted(pulls),
            sends=sends,
        )
        self.current = new
        self.tasks = new.tasks
        self.records = {}
        self.breakpoint_passed = False

    def _make_checkpoint(
        self,
        *,
        source: Source,
        parent: Checkpoint | None,
        old_values: dict[str, Any],
        changed_keys: set[str],
        tasks: tuple[TaskSpec, ...] | None,
        barriers: dict[str, tuple[str, ...]],
        step: int,
        after: tuple[str, ...],
        pulls: Sequence[str] = (),
        sends: Sequence[Send] = (),
    ) -> Checkpoint:
        assert self.thread_id is not None
        checkpoint_id = new_id()
        if tasks is None:
            ns = self.ns
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
            tasks = tuple(built)
        self.seq += 1
        seq = self.seq
        values = self.values
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
            metadata=self._metadata(after=after),
            chains=chains,
        )
        changed = frozenset(appended) if parent is not None else frozenset(values)
        self.staged.append(NewCheckpoint(checkpoint, changed=changed, deltas=deltas))
        return checkpoint

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

    def flush(self) -> tuple[list[NewCheckpoint], list[tuple[str, str, TaskRecord]]]:
        """Take what must be committed now (one transaction)."""
        staged, records = self.staged, self.staged_records
        self.staged, self.staged_records = [], []
        return staged, records

    def interrupted_state(self) -> dict[str, Any]:
        """The values so far, including writes of tasks that finished in the paused step."""
        values = dict(self.values)
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


def _conflict_message(key: str, writers: Sequence[str]) -> str:
    return (
        f"At key {key!r}: nodes {list(writers)} wrote it in the same super-step, but it has "
        "no reducer, so only one value per step is allowed. Declare a reducer "
        f"(add_reducer({key!r}, fn) or Annotated[T, fn]) or write it from one node."
    )


def _appended_prefix(old: Any, new: Any) -> int | None:
    """Length of `old` if the list `new` only appends to the list `old`, else None."""
    if type(old) is not list or type(new) is not list or len(new) < len(old):
        return None
    for a, b in zip(old, new, strict=False):
        if a is not b:
            return None
    return len(old)


__all__ = ["NO_VALUE", "Failure", "Pause", "RunLoop", "is_resume_map"]
