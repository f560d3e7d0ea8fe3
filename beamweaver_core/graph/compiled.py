"""`CompiledGraph`: run, pause, resume, inspect and edit threads of a graph.

The engine is written once: `RunLoop` holds every decision, and the two small drivers
below (`_drive` and `_adrive`) differ only in how they run tasks and commit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from functools import partial
from typing import Any

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.serde import normalize_writes
from beamweaver_core.checkpoint.types import Checkpoint
from beamweaver_core.exceptions import CheckpointerRequiredError, InvalidUpdateError
from beamweaver_core.graph.interrupts import TaskScope, current_scope
from beamweaver_core.graph.loop import NO_VALUE, Failure, Pause, RunLoop
from beamweaver_core.graph.nodes import Branch, Join, NodeSpec
from beamweaver_core.graph.runtime import Envelope, EventSink
from beamweaver_core.graph.state import Reducer
from beamweaver_core.graph.tasks import TaskRunner, apply_writes, resolve_route, run_concurrently
from beamweaver_core.types import (
    END,
    START,
    Command,
    Completed,
    Interrupted,
    RunResult,
    Send,
    StateSnapshot,
    TaskInfo,
)

Config = dict[str, Any]


class CompiledGraph:
    """A checked, runnable graph. Build one with `Graph(...).compile()`."""

    def __init__(
        self,
        *,
        name: str,
        nodes: dict[str, NodeSpec],
        successors: dict[str, tuple[str, ...]],
        joins: tuple[Join, ...],
        branches: dict[str, tuple[Branch, ...]],
        reducers: dict[str, Reducer],
        keys: frozenset[str] | None,
        checkpointer: Checkpointer | None,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
    ) -> None:
        self.name = name
        self.nodes = nodes
        self.successors = {k: tuple(t for t in v if t != END) for k, v in successors.items()}
        self.joins = joins
        self.joins_by_source: dict[str, tuple[Join, ...]] = {}
        for join in joins:
            for source in join.sources:
                self.joins_by_source[source] = (*self.joins_by_source.get(source, ()), join)
        self.branches = branches
        self.reducers = reducers
        self.keys = keys
        self.checkpointer = checkpointer
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after

    def __repr__(self) -> str:
        return f"<CompiledGraph {self.name!r} nodes={list(self.nodes)}>"

    def with_checkpointer(self, checkpointer: Checkpointer | None) -> CompiledGraph:
        """The same graph saving to another checkpointer (e.g. one fenced to a run)."""
        clone = object.__new__(CompiledGraph)
        clone.__dict__.update(self.__dict__)
        clone.checkpointer = checkpointer
        return clone

    # -- running ----------------------------------------------------------------------

    def _loop(
        self, input: Any, config: Config | None, context: Any, sink: EventSink | None
    ) -> RunLoop:
        config = dict(config or {})
        loop = RunLoop(self, config, context, sink)
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        if isinstance(input, Command):
            if input.graph == Command.PARENT:
                raise InvalidUpdateError(
                    "Command(graph=Command.PARENT) was given as input, but there is no parent "
                    "graph: it can only be returned by a node of a subgraph."
                )
            goto = (
                []
                if input.goto is None
                else ([input.goto] if isinstance(input.goto, str | Send) else list(input.goto))
            )
            loop.continue_(
                NO_VALUE if input.resume is None else input.resume,
                update=input.update,
                goto=goto,
                checkpoint_id=checkpoint_id,
            )
        elif input is None:
            loop.continue_(NO_VALUE, checkpoint_id=checkpoint_id)
        else:
            loop.start(
                input,
                **({} if checkpoint_id is None else {"head": self._fork_base(loop, checkpoint_id)}),
            )
        return loop

    def _fork_base(self, loop: RunLoop, checkpoint_id: str) -> Checkpoint:
        from beamweaver_core.exceptions import CheckpointNotFoundError

        if loop.checkpointer is None or loop.thread_id is None:
            raise CheckpointerRequiredError(
                f"config['configurable']['checkpoint_id'] ({checkpoint_id!r}) forks from a saved "
                f"checkpoint, but graph {self.name!r} keeps none: compile it with a checkpointer "
                "and a thread_id in the config, or drop checkpoint_id."
            )
        head = loop.checkpointer.load(loop.thread_id)
        base = loop.checkpointer.load(loop.thread_id, "", checkpoint_id)
        if base is None or head is None:
            raise CheckpointNotFoundError(_no_checkpoint(loop.thread_id, checkpoint_id))
        loop.seq = head.seq
        return base

    def _nested_scope(self, config: Config | None) -> TaskScope | None:
        scope = current_scope.get()
        if scope is None or scope.run is None:
            return None
        if config and (config.get("configurable") or {}).get("thread_id"):
            return None
        return scope

    def invoke(
        self,
        input: Any,
        config: Config | None = None,
        context: Any = None,
        *,
        on_event: Callable[[Envelope], None] | None = None,
    ) -> RunResult:
        """Run the graph on `input` (a dict of state values, a `Command`, or `None` to
        continue). Returns `Completed` or `Interrupted`; node errors propagate as themselves
        after the last completed step is saved. `on_event` receives each `Envelope` as it
        happens (without collecting them)."""
        scope = self._nested_scope(config)
        if scope is not None:
            return Completed(state=self._run_nested_sync(input, scope))
        return self._run(input, config, context, _listener_sink(on_event))

    def resume(
        self,
        value: Any = None,
        config: Config | None = None,
        context: Any = None,
        *,
        on_event: Callable[[Envelope], None] | None = None,
    ) -> RunResult:
        """Answer the pending interrupt(s) and continue: a scalar for one pending interrupt,
        a dict `{interrupt_id: answer}` for several, `None` to continue past a breakpoint,
        `null_resume()` to answer `None`."""
        return self._run(Command(resume=value), config, context, _listener_sink(on_event))

    async def ainvoke(
        self,
        input: Any,
        config: Config | None = None,
        context: Any = None,
        *,
        on_event: Callable[[Envelope], None] | None = None,
    ) -> RunResult:
        scope = self._nested_scope(config)
        if scope is not None:
            return Completed(state=await self._run_nested_async(input, scope))
        return await self._arun(input, config, context, _listener_sink(on_event))

    async def aresume(
        self,
        value: Any = None,
        config: Config | None = None,
        context: Any = None,
        *,
        on_event: Callable[[Envelope], None] | None = None,
    ) -> RunResult:
        return await self._arun(Command(resume=value), config, context, _listener_sink(on_event))

    def _run(
        self, input: Any, config: Config | None, context: Any, sink: EventSink | None
    ) -> RunResult:
        if sink is not None:
            sink.emit("run.started", {"graph": self.name})
        try:
            loop = self._loop(input, config, context, sink)
            result = self._drive(loop)
        except BaseException as exc:
            if sink is not None:
                sink.emit("run.failed", {"error": repr(exc), "exception": exc})
            raise
        return self._finish(result, sink)

    async def _arun(
        self, input: Any, config: Config | None, context: Any, sink: EventSink | None
    ) -> RunResult:
        if sink is not None:
            sink.emit("run.started", {"graph": self.name})
        try:
            loop = (
                await asyncio.to_thread(self._loop, input, config, context, sink)
                if self._blocking
                else self._loop(input, config, context, sink)
            )
            result = await self._adrive(loop)
        except BaseException as exc:
            if sink is not None:
                sink.emit("run.failed", {"error": repr(exc), "exception": exc})
            raise
        return self._finish(result, sink)

    @property
    def _blocking(self) -> bool:
        return self.checkpointer is not None and self.checkpointer.blocking

    @staticmethod
    def _finish(result: RunResult, sink: EventSink | None) -> RunResult:
        if sink is None:
            return result
        if isinstance(result, Interrupted):
            sink.emit(
                "run.interrupted",
                {"interrupts": [i.to_dict() for i in result.interrupts], "result": result},
            )
        else:
            sink.emit("run.completed", {"result": result})
        if sink.events is None:
            return result
        return dataclasses.replace(result, events=list(sink.events))

    @staticmethod
    def _commit(loop: RunLoop) -> None:
        staged, records = loop.flush()
        if loop.checkpointer is not None and (staged or records):
            assert loop.thread_id is not None
            loop.checkpointer.commit(loop.thread_id, loop.ns, staged, records)

    @staticmethod
    async def _acommit(loop: RunLoop) -> None:
        staged, records = loop.flush()
        if loop.checkpointer is not None and (staged or records):
            assert loop.thread_id is not None
            await loop.checkpointer.acommit(loop.thread_id, loop.ns, staged, records)

    def _drive(self, loop: RunLoop) -> RunResult:
        runner = TaskRunner(loop)
        while True:
            step = loop.next_step()
            if isinstance(step, Completed):
                self._commit(loop)
                return step
            if isinstance(step, Pause):
                self._commit(loop)
                return loop.pause_result(step)
            if len(step) == 1:
                task, answers = step[0]
                outcomes = [runner.run_sync(task, answers)]
            else:
                outcomes = run_concurrently([partial(runner.run_sync, t, a) for t, a in step])
            terminal = loop.absorb(outcomes)
            self._commit(loop)
            if isinstance(terminal, Failure):
                raise terminal.error
            if isinstance(terminal, Pause):
                return loop.pause_result(terminal)

    async def _adrive(self, loop: RunLoop) -> RunResult:
        runner = TaskRunner(loop)
        while True:
            step = loop.next_step()
            if isinstance(step, Completed):
                await self._acommit(loop)
                return step
            if isinstance(step, Pause):
                await self._acommit(loop)
                return loop.pause_result(step)
            if len(step) == 1:
                task, answers = step[0]
                outcomes = [await runner.run_async(task, answers)]
            else:
                outcomes = list(await asyncio.gather(*(runner.run_async(t, a) for t, a in step)))
            terminal = loop.absorb(outcomes)
            await self._acommit(loop)
            if isinstance(terminal, Failure):
                raise terminal.error
            if isinstance(terminal, Pause):
                return loop.pause_result(terminal)

    def _nested_loop(self, scope: TaskScope) -> RunLoop:
        run: RunLoop = scope.run
        return RunLoop(self, run.config, run.context, run.sink, parent=scope)

    def _run_nested_sync(self, arg: Any, scope: TaskScope) -> dict[str, Any]:
        """Run as a subgraph inside the parent's task; a pause raises `GraphInterrupt`."""
        loop = self._nested_loop(scope)
        done = loop.start_nested(arg)
        result = done if done is not None else self._drive(loop)
        return dict(result.state)

    async def _run_nested_async(self, arg: Any, scope: TaskScope) -> dict[str, Any]:
        loop = self._nested_loop(scope)
        if self._blocking:
            done = await asyncio.to_thread(loop.start_nested, arg)
        else:
            done = loop.start_nested(arg)
        result = done if done is not None else await self._adrive(loop)
        return dict(result.state)

    # -- streaming --------------------------------------------------------------------

    def stream_events(
        self, input: Any, config: Config | None = None, context: Any = None
    ) -> RunResult:
        """Run like `invoke` and return the result with `.events`: every `Envelope` emitted
        up to the end or the pause."""
        return self._run(input, config, context, EventSink())

    def iter_events(
        self, input: Any, config: Config | None = None, context: Any = None
    ) -> Iterator[Envelope]:
        """Yield envelopes live as the run produces them. The last one is `run.completed`,
        `run.interrupted` or `run.failed`, whose `data["result"]` / `data["exception"]`
        carries the outcome."""
        inbox: queue.Queue[Envelope | None] = queue.Queue()
        sink = EventSink(inbox.put, keep=False)

        def work() -> None:
            try:
                self._run(input, config, context, sink)
            except BaseException:
                pass
            finally:
                inbox.put(None)

        worker = threading.Thread(target=work, name=f"beamweaver-stream-{self.name}", daemon=True)
        worker.start()
        while (envelope := inbox.get()) is not None:
            yield envelope
        worker.join()

    async def astream_events(
        self, input: Any, config: Config | None = None, context: Any = None
    ) -> AsyncIterator[Envelope]:
        """Async form of `iter_events`."""
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Envelope | None] = asyncio.Queue()

        def deliver(envelope: Envelope) -> None:
            loop.call_soon_threadsafe(inbox.put_nowait, envelope)

        sink = EventSink(deliver, keep=False)

        async def work() -> None:
            try:
                await self._arun(input, config, context, sink)
            except BaseException:
                pass
            finally:
                loop.call_soon_threadsafe(inbox.put_nowait, None)

        task = asyncio.ensure_future(work())
        try:
            while (envelope := await inbox.get()) is not None:
                yield envelope
        finally:
            await task

    # -- state ------------------------------------------------------------------------

    def _require_checkpointer(self, config: Config | None) -> tuple[Checkpointer, str]:
        if self.checkpointer is None:
            raise CheckpointerRequiredError(
                f"Graph {self.name!r} has no checkpointer, so it keeps no state between calls. "
                "Compile it with a checkpointer to read or edit thread state."
            )
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        if not thread_id:
            raise ValueError(
                "Pass config={'configurable': {'thread_id': '...'}} to address a thread."
            )
        return self.checkpointer, thread_id

    def get_state(self, config: Config, subgraphs: bool = False) -> StateSnapshot:
        """The thread's latest state (or the checkpoint `config` names)."""
        checkpointer, thread_id = self._require_checkpointer(config)
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        cp = checkpointer.load(thread_id, "", checkpoint_id)
        if cp is None:
            if checkpoint_id is not None:
                from beamweaver_core.exceptions import CheckpointNotFoundError

                raise CheckpointNotFoundError(_no_checkpoint(thread_id, checkpoint_id))
            return StateSnapshot(
                {},
                (),
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
                {},
                None,
                None,
                (),
                (),
            )
        return self._snapshot(cp, config, subgraphs)

    def _snapshot(
        self,
        cp: Checkpoint,
        config: Config,
        subgraphs: bool,
        checkpointer: Checkpointer | None = None,
    ) -> StateSnapshot:
        # A subgraph keeps its checkpoints in its root's checkpointer, at any depth.
        checkpointer = checkpointer or self.checkpointer
        loop = RunLoop(self, dict(config), None, None)
        loop.ns = cp.ns
        loop._adopt(cp)
        tasks: list[TaskInfo] = []
        next_names: list[str] = []
        for task in cp.tasks:
            record = loop.records.get(task.id)
            done = record is not None and record.status == "done"
            if not done:
                next_names.append(task.name)
            child_state: Any = None
            spec = self.nodes.get(task.name)
            if spec is not None and spec.subgraph is not None:
                task_ns = f"{cp.ns}|{task.name}:{task.id}" if cp.ns else f"{task.name}:{task.id}"
                child_ns = f"{task_ns}|{spec.subgraph.name}"
                child_config = {
                    "configurable": {"thread_id": cp.thread_id, "checkpoint_ns": child_ns}
                }
                if subgraphs and checkpointer is not None:
                    child_cp = checkpointer.load(cp.thread_id, child_ns)
                    child_state = (
                        spec.subgraph._snapshot(child_cp, child_config, True, checkpointer)
                        if child_cp
                        else None
                    )
                else:
                    child_state = child_config
            tasks.append(
                TaskInfo(
                    id=task.id,
                    name=task.name,
                    path=task.path,
                    interrupts=record.interrupts if record is not None else (),
                    state=child_state,
                    result=dict(record.writes) if done and record is not None else None,
                )
            )
        metadata = {k: v for k, v in cp.metadata.items() if not k.startswith("_")}
        metadata.update(source=cp.source, step=cp.step)
        metadata.setdefault("parents", {})
        base = {"thread_id": cp.thread_id, "checkpoint_ns": cp.ns}
        return StateSnapshot(
            values=loop.interrupted_state(),
            next=tuple(next_names),
            config={"configurable": {**base, "checkpoint_id": cp.id}},
            metadata=metadata,
            created_at=cp.created_at,
            parent_config={"configurable": {**base, "checkpoint_id": cp.parent_id}}
            if cp.parent_id
            else None,
            tasks=tuple(tasks),
            interrupts=loop.pending_interrupts(),
        )

    def get_state_history(
        self, config: Config, limit: int | None = None, before: Config | str | None = None
    ) -> Iterator[StateSnapshot]:
        """Snapshots of the thread, newest first."""
        checkpointer, thread_id = self._require_checkpointer(config)
        if isinstance(before, Mapping):
            before = (before.get("configurable") or {}).get("checkpoint_id")
        for cp in checkpointer.history(thread_id, "", before=before, limit=limit):
            yield self._snapshot(cp, config, False)

    def update_state(
        self, config: Config, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> Config:
        """Write a new checkpoint as if `as_node` had returned `values`.

        With `as_node=None` only the values change: the pending step stays as it was, its
        tasks keep their ids, so a pending interrupt keeps its id and stays answerable (the
        node runs again on the updated state when it is answered), finished siblings are
        not run again, and a pending breakpoint stays pending. With a node, its successors
        are scheduled; with `END`, nothing is. Returns the config of the new checkpoint.
        """
        checkpointer, thread_id = self._require_checkpointer(config)
        if as_node is not None and as_node not in (START, END) and as_node not in self.nodes:
            raise InvalidUpdateError(
                f"update_state(as_node={as_node!r}): node {as_node!r} does not exist; "
                f"known nodes: {sorted(self.nodes)}."
            )
        loop = RunLoop(self, dict(config), None, None)
        head = checkpointer.load(thread_id)
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        base = head if checkpoint_id is None else checkpointer.load(thread_id, "", checkpoint_id)
        if checkpoint_id is not None and base is None:
            from beamweaver_core.exceptions import CheckpointNotFoundError

            raise CheckpointNotFoundError(_no_checkpoint(thread_id, checkpoint_id))
        if base is not None:
            loop._adopt(base)
        loop.seq = head.seq if head is not None else 0
        writes = list((values or {}).items())
        if self.keys is not None:
            unknown = [k for k, _ in writes if k not in self.keys]
            if unknown:
                raise InvalidUpdateError(
                    f"update_state: key(s) {unknown} are not in the state schema "
                    f"(declared: {sorted(self.keys)}). Add them to the schema or leave them out."
                )
        if as_node is None and base is not None:
            assert head is not None
            if base.id != head.id:
                # An older checkpoint: as for a fork, only interrupted tasks keep their
                # records; finished ones run again on the new branch.
                loop.records = {t: r for t, r in loop.records.items() if r.status == "interrupted"}
                loop.breakpoint_passed = False
            loop._apply_command(values, (), keep_breakpoint=True)
        else:
            self._update_as(loop, base, as_node, values or {})
        self._commit(loop)
        assert loop.current is not None
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": loop.current.id,
            }
        }

    def _update_as(
        self,
        loop: RunLoop,
        base: Checkpoint | None,
        as_node: str | None,
        values: Mapping[str, Any],
    ) -> None:
        """`update_state` as `as_node` (or on a thread with no checkpoint yet): the values
        change and the node's successors (none for `END`) become the next step."""
        writes = normalize_writes(values)
        old_values = dict(loop.values)
        apply_writes(loop.values, writes, self.reducers)
        barriers = dict(loop.barriers)
        routes: list[str | Send] = []
        if as_node is not None and as_node != END:
            chosen: list[str | Send] = []
            if as_node != START:
                for branch in self.branches.get(as_node, ()):
                    decided = branch.route(loop.values, None)
                    chosen.extend(resolve_route(branch, decided, self.nodes))
            routes = loop._routes_after(as_node, loop.values, chosen, barriers)
        loop._commit_step(
            source="update",
            parent=base,
            old_values=old_values,
            changed_keys={k for k, _ in writes},
            routes=routes,
            barriers=barriers,
            step=(base.step + 1) if base is not None else -1,
            after=(),
        )


def _listener_sink(on_event: Callable[[Envelope], None] | None) -> EventSink | None:
    return None if on_event is None else EventSink(on_event, keep=False)


def _no_checkpoint(thread_id: str | None, checkpoint_id: str) -> str:
    return (
        f"Thread {thread_id!r} has no checkpoint {checkpoint_id!r}. List the thread's "
        "checkpoints with get_state_history(config) and use one of their "
        "config['configurable']['checkpoint_id'], or drop checkpoint_id to use the latest."
    )


__all__ = ["CompiledGraph", "Config"]
