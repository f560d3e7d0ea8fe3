"""How one call (invoke, resume, `Command`, fork, `update_state`, a nested subgraph call)
reaches the first step of its thread namespace: `RunLoop`.

Every check of a resume or an update happens before anything is written, so a refused
call leaves the thread exactly as it was. From there the steps run as `steps.StepLoop`
runs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from beamweaver_core.checkpoint import serde
from beamweaver_core.checkpoint.types import Checkpoint, Source, TaskSpec
from beamweaver_core.exceptions import (
    CheckpointerRequiredError,
    CheckpointNotFoundError,
    GraphChangedError,
    InvalidUpdateError,
    NothingToResumeError,
)
from beamweaver_core.graph.checkpoints import new_id
from beamweaver_core.graph.definition import GraphDefinition
from beamweaver_core.graph.resume import NO_VALUE, resume_map
from beamweaver_core.graph.scheduling import chosen_routes, routes_after
from beamweaver_core.graph.steps import StepLoop
from beamweaver_core.graph.updates import apply_writes
from beamweaver_core.types import END, START, Completed, Send


class RunLoop(StepLoop):
    """One call of a graph on `(thread_id, ns)`, set up by one of `start`, `continue_`,
    `start_nested` or `update_state`, then stepped by a driver (`execution.py`)."""

    @classmethod
    def reading(
        cls, graph: GraphDefinition, checkpoint: Checkpoint, config: dict[str, Any]
    ) -> RunLoop:
        """A loop positioned at a saved checkpoint, to read its state and pending
        interrupts (it runs and saves nothing)."""
        loop = cls(graph, config, None, None)
        loop.ns = loop.staging.ns = checkpoint.ns
        loop._adopt(checkpoint)
        return loop

    # -- setting up -------------------------------------------------------------------

    def _load(self, checkpoint_id: str | None = None) -> Checkpoint | None:
        assert self.checkpointer is not None and self.thread_id is not None
        return self.checkpointer.load(self.thread_id, self.ns, checkpoint_id)

    def _load_base(self, checkpoint_id: str | None) -> tuple[Checkpoint | None, Checkpoint | None]:
        """The thread's head and the checkpoint to continue from (`checkpoint_id`, or
        the head); the next checkpoint follows the head."""
        head = self._load()
        base = head
        if checkpoint_id is not None and (head is None or head.id != checkpoint_id):
            base = self._load(checkpoint_id)
            if base is None:
                raise CheckpointNotFoundError(no_checkpoint(self.thread_id, checkpoint_id))
        self.staging.seq = head.seq if head is not None else 0
        return head, base

    def start_nested(self, arg: Any) -> Completed | None:
        """Set up a subgraph run: continue its saved run if there is one, else start it.

        Returns the saved result when this exact subgraph call already completed (the
        parent task is being re-run after a pause or a crash).

        A saved run belongs to the parent checkpoint it ran under. When the parent task
        runs from another one that kept the task (its state edited by `update_state`, a
        fork, a `Command` update or goto with the resume), the subgraph runs again from
        its start on the parent's state now, as a plain node would. An answer given to
        the old run's one pending question goes to the first question the new run asks
        (`answered_interrupt()` shows the old question); with several pending, the new
        run asks again.
        """
        head = self._load() if self.checkpointer is not None else None
        if head is not None:
            self._adopt(head)
            self.staging.seq = head.seq
            if self._same_parent_checkpoint(head):
                if not head.tasks and not self._pending_breakpoint():
                    return Completed(state=dict(head.values))
                return None
            self._carry_answer()
            self.records, self.breakpoint_passed = {}, False
        self._start(arg, head=head, fresh=True)
        return None

    def _carry_answer(self) -> None:
        """Keep the answer to the one question of this subgraph call that the parent task
        waited on (at any depth below it), for the run started again."""
        assert self.parent is not None
        ns = self.ns
        asked = [
            i
            for i in self.parent.asked.values()
            if i.timing is None and (i.ns == ns or i.ns.startswith(f"{ns}|"))
        ]
        if len(asked) == 1 and asked[0].id in self.resume_map:
            self.carried = [(asked[0], self.resume_map[asked[0].id])]

    def _same_parent_checkpoint(self, head: Checkpoint) -> bool:
        """Whether the subgraph's saved run `head` ran under the parent's current checkpoint
        (runs saved before this was recorded count as the same)."""
        run = self.parent.run if self.parent is not None else None
        if run is None or run.current is None:
            return True
        saved = (head.metadata.get("parents") or {}).get(run.ns)
        return saved is None or saved == run.current.id

    def start(self, arg: Any, checkpoint_id: str | None = None) -> None:
        """Fresh input: discard any pending step and run from START with `arg` applied
        (on the thread's head, or on checkpoint `checkpoint_id`: a fork)."""
        if checkpoint_id is not None and (self.checkpointer is None or self.thread_id is None):
            raise CheckpointerRequiredError(
                f"config['configurable']['checkpoint_id'] ({checkpoint_id!r}) forks from a saved "
                f"checkpoint, but graph {self.graph.name!r} keeps none: compile it with a "
                "checkpointer and a thread_id in the config, or drop checkpoint_id."
            )
        head = None
        if self.checkpointer is not None:
            head, base = self._load_base(checkpoint_id)
            if checkpoint_id is not None and (base is None or head is None):
                raise CheckpointNotFoundError(no_checkpoint(self.thread_id, checkpoint_id))
            head = base
        self._start(arg, head)

    def _start(self, arg: Any, head: Checkpoint | None, *, fresh: bool = False) -> None:
        """Run from START with `arg` applied, after `head`: on its values, or on none
        (`fresh`, a subgraph run started again)."""
        if arg is not None and not isinstance(arg, Mapping):
            raise InvalidUpdateError(
                f"Graph input must be a dict of state values (or a Command), got {arg!r}."
            )
        self.values = dict(head.values) if head is not None and not fresh else {}
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
        self._commit_writes(START, writes, source="input", parent=head, barriers={})

    def _commit_writes(
        self,
        node: str | None,
        writes: Sequence[tuple[str, Any]],
        *,
        source: Source,
        parent: Checkpoint | None,
        barriers: dict[str, tuple[str, ...]],
    ) -> None:
        """Apply `writes` as if `node` had returned them and stage the checkpoint that
        schedules its successors (none when `node` is `None`)."""
        old_values = dict(self.values)
        apply_writes(self.values, writes, self.graph.reducers)
        routes: list[str | Send] = []
        if node is not None:
            chosen = chosen_routes(self.graph, node, self.values) if node != START else []
            routes = routes_after(self.graph, node, self.values, chosen, barriers)
        self._commit_step(
            source=source,
            parent=parent,
            old_values=old_values,
            changed_keys={k for k, _ in writes},
            routes=routes,
            barriers=barriers,
            step=(parent.step + 1) if parent is not None else -1,
            after=(),
        )

    def continue_(
        self,
        resume: Any,
        *,
        update: Mapping[str, Any] | None = None,
        goto: Sequence[str | Send] = (),
        checkpoint_id: str | None = None,
    ) -> None:
        """Continue the thread's pending step, answering interrupts with `resume`.

        With `update` or `goto` (a `Command` given as input) and no `resume`, the questions
        the step waits on stay unanswered and keep waiting (their nodes are not run again),
        while a static breakpoint is continued past, as `invoke(None)` continues it.

        Every check happens before anything is written, so a refused resume leaves the
        thread exactly as it was.
        """
        if self.checkpointer is None:
            raise NothingToResumeError(
                f"Graph {self.graph.name!r} has no checkpointer, so there is nothing saved to "
                "resume. Compile it with a checkpointer to pause and resume runs."
            )
        head, base = self._load_base(checkpoint_id)
        if base is None:
            raise NothingToResumeError(
                f"Thread {self.thread_id!r} has nothing to resume: it has no checkpoint yet. "
                "Start it with invoke(input, config)."
            )
        self._adopt(base)
        self.check_tasks_known()
        pending = self.pending_interrupts()
        answerable = pending
        if resume is NO_VALUE and (update is not None or goto):
            answerable = tuple(i for i in pending if i.timing is not None)
        self.resume_map = resume_map(resume, answerable, self.thread_id)
        if base is not head:
            self._fork(base)
        if update is not None or goto:
            self._apply_command(update, goto)
        if not self.tasks and not pending and not self.staging.checkpoints:
            raise NothingToResumeError(
                f"Thread {self.thread_id!r} has nothing to resume: its run is complete and no "
                "interrupt or breakpoint is pending. Start a new run with invoke(input, config)."
            )

    def update_state(
        self, values: Mapping[str, Any] | None, as_node: str | None, checkpoint_id: str | None
    ) -> Checkpoint:
        """Stage a new checkpoint as if `as_node` had returned `values` (on the head, or
        on checkpoint `checkpoint_id`) and return it.

        With `as_node=None` only the values change: the pending step stays as it was, its
        tasks keep their ids, so a pending interrupt keeps its id and stays answerable (the
        node runs again on the updated state when it is answered), finished siblings are
        not run again, and a pending breakpoint stays pending. With a node, its successors
        are scheduled; with `END`, nothing is (clearing the head's step with no values keeps
        what its finished tasks wrote). On a thread with no checkpoint, a write without
        `as_node` is the thread's input: what follows START is scheduled.
        """
        graph = self.graph
        if as_node is not None and as_node not in (START, END) and as_node not in graph.nodes:
            raise InvalidUpdateError(
                f"update_state(as_node={as_node!r}): node {as_node!r} does not exist; "
                f"known nodes: {sorted(graph.nodes)}."
            )
        head, base = self._load_base(checkpoint_id)
        if base is not None:
            self._adopt(base)
        if graph.keys is not None:
            unknown = [k for k in values or {} if k not in graph.keys]
            if unknown:
                raise InvalidUpdateError(
                    f"update_state: key(s) {unknown} are not in the state schema "
                    f"(declared: {sorted(graph.keys)}). Add them to the schema or leave them out."
                )
        if as_node is None and base is not None:
            assert head is not None
            if base.id != head.id:
                # An older checkpoint: as for a fork, only interrupted tasks keep their
                # records; finished ones run again on the new branch.
                self.records = {t: r for t, r in self.records.items() if r.status == "interrupted"}
                self.breakpoint_passed = False
            self._apply_command(values, (), keep_breakpoint=True)
        else:
            # The first write of an empty thread is its input (as on LangGraph's server).
            node = START if as_node is None else None if as_node == END else as_node
            writes = serde.normalize_writes(values or {})
            if as_node == END and not values and base is not None and base is head:
                # Clearing the step keeps what its finished tasks wrote, as LangGraph's
                # `update_state(config, None, as_node=END)` does.
                writes = self._finished_writes()
            self._commit_writes(
                node, writes, source="update", parent=base, barriers=dict(self.barriers)
            )
        assert self.current is not None
        return self.current

    def _finished_writes(self) -> list[tuple[str, Any]]:
        """The writes of the current step's tasks that finished, in task order."""
        out: list[tuple[str, Any]] = []
        for task in self.tasks:
            record = self.records.get(task.id)
            if record is not None and record.status == "done":
                out.extend(record.writes)
        return out

    def check_tasks_known(self) -> None:
        """Refuse a saved step whose tasks name nodes this graph does not have."""
        missing = sorted({t.name for t in self.tasks if t.name not in self.graph.nodes})
        if missing:
            raise GraphChangedError(self.graph.name, missing, list(self.graph.nodes))

    def _fork(self, base: Checkpoint) -> None:
        """Time travel: continue from an older checkpoint on a new branch.

        The fork keeps the old checkpoint's tasks (and their ids, so pending interrupt ids
        stay valid) and the answers interrupted tasks had consumed; finished tasks run again.
        """
        self.records = {t: r for t, r in self.records.items() if r.status == "interrupted"}
        fork = self.staging.fork(base, self._metadata(after=base.metadata.get("_after", ())))
        self._carry_records(fork)
        self.current = fork
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
        # A breakpoint this call continues past stays passed on the new checkpoint (whose
        # breakpoint would otherwise be a new one, with a new id nobody answered).
        stop = self._pending_breakpoint()
        passing = stop is not None and stop.id in self.resume_map
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
        after = tuple(base.metadata.get("_after", ())) if keep_breakpoint else ()
        new = self.staging.checkpoint(
            source="update",
            parent=base,
            values=self.values,
            old_values=old_values,
            changed_keys={k for k, _ in writes},
            tasks=tuple(tasks),
            barriers=dict(self.barriers),
            step=base.step + 1,
            metadata=self._metadata(after=after),
        )
        self.step = new.step
        self._carry_records(new)
        self.current = new
        self.tasks = new.tasks
        if passing or (keep_breakpoint and self.breakpoint_passed):
            self._pass_breakpoint()

    def _carry_records(self, new: Checkpoint) -> None:
        """Stage the step's records again on `new`, which continues the same step: what
        finished or waits carries over; what a failed attempt raised stays with the
        checkpoint it failed at (the task runs again from `new`)."""
        self.records = {
            tid: replace(rec, error=None)
            for tid, rec in self.records.items()
            if rec.status != "failed"
        }
        for tid, rec in self.records.items():
            self.staging.record(new.id, tid, rec)


def no_checkpoint(thread_id: str | None, checkpoint_id: str) -> str:
    """The message for a `checkpoint_id` the thread does not have."""
    return (
        f"Thread {thread_id!r} has no checkpoint {checkpoint_id!r}. List the thread's "
        "checkpoints with get_state_history(config) and use one of their "
        "config['configurable']['checkpoint_id'], or drop checkpoint_id to use the latest."
    )


__all__ = ["RunLoop", "no_checkpoint"]
