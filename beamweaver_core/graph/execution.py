"""Executing a run: the task runner and the sync and async drivers of the loop.

`RunLoop` holds every decision; `drive` and `adrive` differ only in how they run a step's
tasks (worker threads or the event loop) and commit. A task runs its node, or drives a
nested loop when the node is a subgraph, so the runner and the drivers live together.
Nothing of a task is visible to its siblings before the step's merge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Any

from beamweaver_core.checkpoint.types import TaskSpec
from beamweaver_core.exceptions import GraphChangedError, InvalidUpdateError
from beamweaver_core.graph.definition import GraphDefinition, NodeSpec
from beamweaver_core.graph.interrupts import GraphInterrupt, ParentCommand, TaskScope, current_scope
from beamweaver_core.graph.loop import RunLoop
from beamweaver_core.graph.runtime import Runtime, StreamClosed
from beamweaver_core.graph.steps import Failure, Pause, StepLoop, TaskOutcome, task_error
from beamweaver_core.graph.threads import (
    in_thread,
    run_concurrently,
    run_coroutine_blocking,
)
from beamweaver_core.graph.updates import (
    apply_writes,
    goto_targets,
    node_writes,
    read_update,
    resolve_route,
)
from beamweaver_core.observability import tracing
from beamweaver_core.types import END, Command, Completed, RunResult, Send


def _subgraph_input(keys: frozenset[str] | None, arg: Any) -> Any:
    """What a subgraph added as a node receives: the parent's values (or the `Send`
    argument) for the keys its schema declares, as in LangGraph. The rest belongs to the
    parent and is not the subgraph's input."""
    if keys is None or not isinstance(arg, Mapping):
        return arg
    return {k: v for k, v in arg.items() if k in keys}


class TaskRunner:
    """Runs the tasks of one loop; shared by the sync and async drivers."""

    def __init__(self, loop: StepLoop) -> None:
        self.loop = loop
        self.graph = loop.graph
        self.stored = loop.checkpointer is not None

    def _prepare(self, task: TaskSpec, answers: Sequence[Any]) -> tuple[NodeSpec, TaskScope, Any]:
        """The node, scope and input of `task`, announced to the stream (`node.started`)."""
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
            carried=loop.carried,
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
        if loop.sink is not None:
            loop.sink.emit("node.started", {"task_id": task.id}, node=task.name, ns=loop.ns)
        return spec, scope, arg

    def _finish(
        self, task: TaskSpec, scope: TaskScope, result: Any, parent_command: Command | None = None
    ) -> TaskOutcome:
        graph = self.graph
        if parent_command is None:
            writes, routes, parent_command = read_update(task.name, result, graph.keys, self.stored)
        else:
            writes, routes = (
                node_writes(task.name, parent_command.update or {}, graph.keys, self.stored),
                goto_targets(parent_command.goto),
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
        try:
            if spec.subgraph is not None:
                result = self._subgraph_update(run_nested(spec.subgraph, arg, scope))
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
        try:
            if spec.subgraph is not None:
                result = self._subgraph_update(await arun_nested(spec.subgraph, arg, scope))
            elif spec.is_async:
                result = await spec.call(arg, scope.runtime)
            else:
                result = await in_thread(lambda: spec.call(arg, scope.runtime))
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
            assert outcome.error is not None
            data["error"] = task_error(outcome.error)
        elif outcome.status == "interrupted":
            data["interrupts"] = [i.id for i in outcome.interrupts]
        sink.emit("node.finished", data, node=outcome.task.name, ns=self.loop.ns)


def _stop_if_closed(loop: StepLoop) -> None:
    """Between steps (what ran is saved): stop a run whose stream was closed."""
    if loop.sink is not None and loop.sink.closed:
        raise StreamClosed


def drive(loop: StepLoop) -> RunResult:
    """Run the loop to its end or pause, running each step's tasks on worker threads."""
    runner = TaskRunner(loop)
    while True:
        _stop_if_closed(loop)
        step = loop.next_step()
        if isinstance(step, Completed):
            loop.commit()
            return step
        if isinstance(step, Pause):
            loop.commit()
            return loop.pause_result(step)
        if len(step) == 1:
            task, answers = step[0]
            outcomes = [runner.run_sync(task, answers)]
        else:
            outcomes = run_concurrently(
                [partial(runner.run_sync, t, a) for t, a in step], partial(_save_finished, loop)
            )
        terminal = loop.absorb(outcomes)
        loop.commit()
        if isinstance(terminal, Failure):
            raise terminal.error
        if isinstance(terminal, Pause):
            return loop.pause_result(terminal)


async def adrive(loop: StepLoop) -> RunResult:
    """`drive` on the event loop: async nodes run on it, sync ones in threads."""
    runner = TaskRunner(loop)
    while True:
        _stop_if_closed(loop)
        step = loop.next_step()
        if isinstance(step, Completed):
            await loop.acommit()
            return step
        if isinstance(step, Pause):
            await loop.acommit()
            return loop.pause_result(step)
        if len(step) == 1:
            task, answers = step[0]
            outcomes = [await runner.run_async(task, answers)]
        else:
            outcomes = await _gather_saving(loop, [runner.run_async(t, a) for t, a in step])
        terminal = loop.absorb(outcomes)
        await loop.acommit()
        if isinstance(terminal, Failure):
            raise terminal.error
        if isinstance(terminal, Pause):
            return loop.pause_result(terminal)


def _save_finished(loop: StepLoop, outcomes: list[TaskOutcome]) -> None:
    """Commit the tasks that finished while their siblings still run (a crash then does
    not run them again)."""
    if loop.save_finished(outcomes):
        loop.commit()


async def _gather_saving(
    loop: StepLoop, calls: list[Coroutine[Any, Any, TaskOutcome]]
) -> list[TaskOutcome]:
    """`asyncio.gather` of a step's tasks, committing those that finish while siblings
    still run (as `drive` does); a failed commit is raised once every task has finished."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    pending: set[asyncio.Future[TaskOutcome]] = set(tasks)
    error: BaseException | None = None
    try:
        while pending and error is None:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if pending and loop.save_finished([t.result() for t in tasks if t in done]):
                try:
                    await loop.acommit()
                except Exception as exc:
                    error = exc
        outcomes = list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
    if error is not None:
        raise error
    return outcomes


def blocking(loop: StepLoop) -> bool:
    """Whether the loop's checkpointer blocks (async callers then use it in a thread)."""
    return loop.checkpointer is not None and loop.checkpointer.blocking


def _nested_loop(graph: GraphDefinition, scope: TaskScope) -> RunLoop:
    run: StepLoop = scope.run
    return RunLoop(graph, run.config, run.context, run.sink, parent=scope)


def run_nested(graph: GraphDefinition, arg: Any, scope: TaskScope) -> dict[str, Any]:
    """Run `graph` as a subgraph inside the task of `scope`; a pause raises
    `GraphInterrupt`. Returns the subgraph's final values."""
    loop = _nested_loop(graph, scope)
    done = loop.start_nested(arg)
    result = done if done is not None else drive(loop)
    return dict(result.state)


async def arun_nested(graph: GraphDefinition, arg: Any, scope: TaskScope) -> dict[str, Any]:
    """`run_nested`, awaited."""
    loop = _nested_loop(graph, scope)
    if blocking(loop):
        done = await in_thread(partial(loop.start_nested, arg))
    else:
        done = loop.start_nested(arg)
    result = done if done is not None else await adrive(loop)
    return dict(result.state)


__all__ = ["TaskRunner", "adrive", "arun_nested", "blocking", "drive", "run_nested"]
