"""Running one task of a super-step: call the node, read what it returned, route.

A task ends `done` (writes and routes), `interrupted` (the interrupts it waits on and the
answers it consumed), `parent` (it addressed the parent graph) or `failed`. Nothing of a
task is visible to its siblings before the step's merge.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from beamweaver_core.checkpoint.serde import normalize_writes
from beamweaver_core.exceptions import GraphChangedError, InvalidUpdateError
from beamweaver_core.graph.interrupts import GraphInterrupt, ParentCommand, TaskScope, current_scope
from beamweaver_core.graph.nodes import Branch, NodeSpec
from beamweaver_core.graph.runtime import Runtime
from beamweaver_core.observability import tracing
from beamweaver_core.types import END, Command, Interrupt, Send

if TYPE_CHECKING:
    from beamweaver_core.checkpoint.types import TaskSpec
    from beamweaver_core.graph.loop import RunLoop

_MISSING: Any = object()


@dataclass(slots=True)
class TaskOutcome:
    task: TaskSpec
    status: str  # "done" | "interrupted" | "parent" | "failed"
    writes: tuple[tuple[str, Any], ...] = ()
    routes: tuple[str | Send, ...] = ()
    answers: tuple[Any, ...] = ()
    interrupts: tuple[Interrupt, ...] = ()
    error: BaseException | None = None
    questions: Mapping[int, Any] = field(default_factory=dict)


def _goto_targets(goto: Any) -> list[str | Send]:
    if goto is None:
        return []
    if isinstance(goto, str | Send):
        return [goto]
    return list(goto)


def read_update(
    node: str, result: Any, keys: frozenset[str] | None, stored: bool = False
) -> tuple[list[tuple[str, Any]], list[str | Send], Command | None]:
    """Split a node's return value into writes, goto routes, and a parent command.

    `stored`: the run keeps checkpoints, so the written values take the shape they read
    back in (tuples as lists)."""
    if result is None:
        return [], [], None
    if isinstance(result, Command):
        if result.graph == Command.PARENT:
            return [], [], result
        if result.graph is not None:
            raise InvalidUpdateError(
                f"Node {node!r} returned Command(graph={result.graph!r}); the only graph a node "
                "can address besides its own is Command.PARENT."
            )
        writes = _writes(node, result.update, keys, stored) if result.update is not None else []
        return writes, _goto_targets(result.goto), None
    if isinstance(result, Mapping):
        return _writes(node, result, keys, stored), [], None
    raise InvalidUpdateError(
        f"Node {node!r} returned {result!r} (a {type(result).__name__}); a node must return a "
        "dict of state updates, None, or a Command."
    )


def _writes(
    node: str, update: Any, keys: frozenset[str] | None, stored: bool = False
) -> list[tuple[str, Any]]:
    if not isinstance(update, Mapping):
        raise InvalidUpdateError(
            f"Node {node!r} produced the update {update!r}; an update must be a dict of state keys."
        )
    if keys is not None:
        unknown = [k for k in update if k not in keys]
        if unknown:
            raise InvalidUpdateError(
                f"Node {node!r} wrote key(s) {unknown} that the state schema does not declare "
                f"(declared: {sorted(keys)}). Add them to the schema or stop writing them."
            )
    # Under a checkpointer tuples become lists now, as every checkpointer reads them back:
    # the rest of this run sees what a resumed run would see. (Without one nothing is read
    # back, and the values stay as given at no cost.)
    return normalize_writes(update) if stored else list(update.items())


def apply_writes(
    values: dict[str, Any],
    writes: Sequence[tuple[str, Any]],
    reducers: Mapping[str, Callable[[Any, Any], Any]],
) -> None:
    """Apply one task's writes on `values` in place (for the task's own view)."""
    for key, value in writes:
        reducer = reducers.get(key)
        if reducer is None:
            values[key] = value
        else:
            current = values.get(key, _MISSING)
            values[key] = value if current is _MISSING else reducer(current, value)


def _subgraph_input(keys: frozenset[str] | None, arg: Any) -> Any:
    """What a subgraph added as a node receives: the parent's values (or the `Send`
    argument) for the keys its schema declares, as in LangGraph. The rest belongs to the
    parent and is not the subgraph's input."""
    if keys is None or not isinstance(arg, Mapping):
        return arg
    return {k: v for k, v in arg.items() if k in keys}


def resolve_route(branch: Branch, result: Any, nodes: Mapping[str, NodeSpec]) -> list[str | Send]:
    items = result if isinstance(result, list | tuple) else [result]
    routes: list[str | Send] = []
    for item in items:
        if isinstance(item, Send):
            if item.node not in nodes:
                raise InvalidUpdateError(
                    f"The router of {branch.source!r} sent to unknown node {item.node!r}; "
                    f"known nodes: {sorted(nodes)}."
                )
            routes.append(item)
            continue
        target = item
        if branch.path_map is not None:
            try:
                target = branch.path_map[item]
            except (KeyError, TypeError):
                raise InvalidUpdateError(
                    f"The router of {branch.source!r} returned {item!r}, which is not a key of its "
                    f"path_map {dict(branch.path_map)!r}."
                ) from None
        if target is None or target == END:
            continue
        if not isinstance(target, str) or target not in nodes:
            raise InvalidUpdateError(
                f"The router of {branch.source!r} returned {target!r}, which is not a node; "
                f"known nodes: {sorted(nodes)} (or END)."
            )
        routes.append(target)
    return routes


class TaskRunner:
    """Runs the tasks of one loop; shared by the sync and async drivers."""

    def __init__(self, loop: RunLoop) -> None:
        self.loop = loop
        self.graph = loop.graph
        self.stored = loop.checkpointer is not None

    def _prepare(self, task: TaskSpec, answers: Sequence[Any]) -> tuple[NodeSpec, TaskScope, Any]:
        loop = self.loop
        spec = self.graph.nodes.get(task.name)
        if spec is None:
            raise GraphChangedError(self.graph.name, [task.name], list(self.graph.nodes))
        task_ns = f"{loop.ns}|{task.name}:{task.id}" if loop.ns else f"{task.name}:{task.id}"
        runtime = None
        if spec.takes_runtime or spec.subgraph is not None:
            runtime = Runtime(
                config=loop.config,
                context=loop.context,
                thread_id=loop.thread_id,
                node=task.name,
                checkpoint_ns=task_ns,
                task_id=task.id,
                sink=loop.sink,
                graph_ns=loop.ns,
                state=MappingProxyType(loop.values),
            )
        scope = TaskScope(
            node=task.name,
            task_ns=task_ns,
            graph_ns=loop.ns,
            checkpointing=loop.checkpointer is not None,
            answers=list(answers),
            resume=loop.resume_map,
            runtime=runtime,
            run=loop,
        )
        record = loop.records.get(task.id)
        if record is not None and record.status == "interrupted":
            scope.asked = {i.id: i for i in record.interrupts}
            scope.questions = dict(record.questions)
        arg = task.arg if task.push is not None else loop.values
        if spec.subgraph is not None:
            arg = _subgraph_input(spec.subgraph.keys, arg)
        return spec, scope, arg

    def _finish(
        self, task: TaskSpec, scope: TaskScope, result: Any, parent_command: Command | None = None
    ) -> TaskOutcome:
        graph = self.graph
        if parent_command is None:
            writes, routes, parent_command = read_update(task.name, result, graph.keys, self.stored)
        else:
            writes, routes = (
                _writes(task.name, parent_command.update or {}, graph.keys, self.stored),
                _goto_targets(parent_command.goto),
            )
            parent_command = None
        if parent_command is not None:
            if self.loop.parent is None:
                raise InvalidUpdateError(
                    f"Node {task.name!r} returned Command(graph=Command.PARENT), but graph "
                    f"{graph.name!r} is not running as a subgraph: there is no parent graph."
                )
            return TaskOutcome(task, "parent", error=ParentCommand(parent_command))
        for route in routes:
            target = route.node if isinstance(route, Send) else route
            if target != END and target not in graph.nodes:
                raise InvalidUpdateError(
                    f"Node {task.name!r} returned Command(goto={target!r}), which is not a node; "
                    f"known nodes: {sorted(graph.nodes)}."
                )
        branches = graph.branches.get(task.name)
        if branches:
            view = dict(self.loop.values)
            apply_writes(view, writes, graph.reducers)
            for branch in branches:
                decided = branch.route(view, scope.runtime)
                routes.extend(resolve_route(branch, decided, graph.nodes))
        routes = [r for r in routes if r != END]
        return TaskOutcome(task, "done", tuple(writes), tuple(routes))

    def _subgraph_update(self, values: dict[str, Any]) -> dict[str, Any]:
        """A subgraph's final values become its node's update (keys the parent knows): its
        private keys stay in its own checkpoint namespace."""
        keys = self.graph.keys
        return values if keys is None else {k: v for k, v in values.items() if k in keys}

    def _fail(self, task: TaskSpec, scope: TaskScope, exc: BaseException) -> TaskOutcome:
        if isinstance(exc, GraphInterrupt):
            return TaskOutcome(
                task,
                "interrupted",
                answers=tuple(scope.answers),
                interrupts=exc.interrupts,
                questions=dict(scope.questions),
            )
        if isinstance(exc, ParentCommand):
            try:
                return self._finish(task, scope, None, exc.command)
            except Exception as inner:
                return TaskOutcome(task, "failed", error=inner)
        return TaskOutcome(task, "failed", error=exc)

    def _span(self, task: TaskSpec) -> Any:
        loop = self.loop
        return tracing.node_span(
            task.name, graph=self.graph.name, thread_id=loop.thread_id, ns=loop.ns
        )

    def run_sync(self, task: TaskSpec, answers: Sequence[Any]) -> TaskOutcome:
        with self._span(task) as span:
            outcome = self._run_sync(task, answers)
            if outcome.status == "failed":
                tracing.failed(span, outcome.error)
        return outcome

    async def run_async(self, task: TaskSpec, answers: Sequence[Any]) -> TaskOutcome:
        with self._span(task) as span:
            outcome = await self._run_async(task, answers)
            if outcome.status == "failed":
                tracing.failed(span, outcome.error)
        return outcome

    def _run_sync(self, task: TaskSpec, answers: Sequence[Any]) -> TaskOutcome:
        spec, scope, arg = self._prepare(task, answers)
        token = current_scope.set(scope)
        sink = self.loop.sink
        if sink is not None:
            sink.emit("node.started", {"task_id": task.id}, node=task.name, ns=self.loop.ns)
        try:
            if spec.subgraph is not None:
                result = self._subgraph_update(spec.subgraph._run_nested_sync(arg, scope))
            elif spec.is_async:
                result = run_coroutine_blocking(spec.call(arg, scope.runtime))
            else:
                result = spec.call(arg, scope.runtime)
            outcome = self._finish(task, scope, result)
        except (Exception, GraphInterrupt, ParentCommand) as exc:
            outcome = self._fail(task, scope, exc)
        finally:
            current_scope.reset(token)
        self._emit_finished(outcome)
        return outcome

    async def _run_async(self, task: TaskSpec, answers: Sequence[Any]) -> TaskOutcome:
        spec, scope, arg = self._prepare(task, answers)
        token = current_scope.set(scope)
        sink = self.loop.sink
        if sink is not None:
            sink.emit("node.started", {"task_id": task.id}, node=task.name, ns=self.loop.ns)
        try:
            if spec.subgraph is not None:
                result = self._subgraph_update(await spec.subgraph._run_nested_async(arg, scope))
            elif spec.is_async:
                result = await spec.call(arg, scope.runtime)
            else:
                result = await asyncio.to_thread(_cleaned(lambda: spec.call(arg, scope.runtime)))
            outcome = self._finish(task, scope, result)
        except (Exception, GraphInterrupt, ParentCommand) as exc:
            outcome = self._fail(task, scope, exc)
        finally:
            current_scope.reset(token)
        self._emit_finished(outcome)
        return outcome

    def _emit_finished(self, outcome: TaskOutcome) -> None:
        sink = self.loop.sink
        if sink is None:
            return
        data: dict[str, Any] = {"task_id": outcome.task.id, "status": outcome.status}
        if outcome.status == "done":
            data["update"] = dict(outcome.writes)
        elif outcome.status == "failed":
            data["error"] = repr(outcome.error)
        elif outcome.status == "interrupted":
            data["interrupts"] = [i.id for i in outcome.interrupts]
        sink.emit("node.finished", data, node=outcome.task.name, ns=self.loop.ns)


_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_pool = threading.local()


def _mark_pool_thread() -> None:
    _in_pool.active = True


def shared_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=32,
                    thread_name_prefix="beamweaver-task",
                    initializer=_mark_pool_thread,
                )
    return _pool


_thread_cleanups: list[Callable[[], None]] = []


def register_thread_cleanup(fn: Callable[[], None]) -> None:
    """Run `fn` on a worker thread after each task it ran (e.g. give back a pooled
    database connection the task's thread checked out)."""
    if fn not in _thread_cleanups:
        _thread_cleanups.append(fn)


def _cleaned(call: Callable[[], Any]) -> Callable[[], Any]:
    if not _thread_cleanups:
        return call

    def run() -> Any:
        try:
            return call()
        finally:
            for cleanup in _thread_cleanups:
                cleanup()

    return run


def run_concurrently(calls: Sequence[Callable[[], TaskOutcome]]) -> list[TaskOutcome]:
    """Run task calls on worker threads (each with a copy of the caller's context)."""
    if len(calls) == 1:
        return [calls[0]()]
    calls = [_cleaned(c) for c in calls]
    if getattr(_in_pool, "active", False):
        # A nested graph inside a pooled task: a private pool, so a full shared pool
        # can never wait on itself.
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls)) as private:
            futures = [private.submit(contextvars.copy_context().run, c) for c in calls]
            return [f.result() for f in futures]
    pool = shared_pool()
    futures = [pool.submit(contextvars.copy_context().run, c) for c in calls]
    return [f.result() for f in futures]


def run_coroutine_blocking(coro: Awaitable[Any]) -> Any:
    """Run an async node from synchronous code (on a fresh event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(coro))
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as one:
        return one.submit(context.run, asyncio.run, _await(coro)).result()


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


__all__ = [
    "TaskOutcome",
    "TaskRunner",
    "apply_writes",
    "read_update",
    "register_thread_cleanup",
    "run_concurrently",
]
