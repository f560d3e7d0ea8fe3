"""`CompiledGraph`: run, pause, resume, stream, inspect and edit threads of a graph.

The public face of the engine: the call API over a `GraphDefinition` and a checkpointer.
The loop (`loop.py`, `steps.py`) holds every decision, `execution.py` drives it, and
`streaming.py` / `inspection.py` hold the streaming bridges and the state snapshots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from functools import partial
from typing import Any

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.exceptions import CheckpointerRequiredError, InvalidUpdateError
from beamweaver_core.graph import inspection, streaming
from beamweaver_core.graph.definition import GraphDefinition
from beamweaver_core.graph.execution import adrive, arun_nested, drive, run_nested
from beamweaver_core.graph.interrupts import TaskScope, current_scope
from beamweaver_core.graph.loop import RunLoop
from beamweaver_core.graph.resume import NO_VALUE
from beamweaver_core.graph.runtime import Envelope, EventSink
from beamweaver_core.graph.threads import in_thread
from beamweaver_core.types import Command, Completed, Interrupted, RunResult, Send, StateSnapshot

Config = dict[str, Any]


class CompiledGraph(GraphDefinition):
    """A checked, runnable graph. Build one with `Graph(...).compile()`."""

    checkpointer: Checkpointer | None = None
    """Where its threads are saved (`None`: no state between calls, no interrupts)."""

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
        loop = RunLoop(self, config, context, sink, self.checkpointer)
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
            loop.start(input, checkpoint_id)
        return loop

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
            return Completed(state=run_nested(self, input, scope))
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
            return Completed(state=await arun_nested(self, input, scope))
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
            result = drive(loop)
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
                await in_thread(partial(self._loop, input, config, context, sink))
                if self.checkpointer is not None and self.checkpointer.blocking
                else self._loop(input, config, context, sink)
            )
            result = await adrive(loop)
        except BaseException as exc:
            if sink is not None:
                sink.emit("run.failed", {"error": repr(exc), "exception": exc})
            raise
        return self._finish(result, sink)

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
        return streaming.iter_events(partial(self._run, input, config, context), self.name)

    def astream_events(
        self, input: Any, config: Config | None = None, context: Any = None
    ) -> AsyncIterator[Envelope]:
        """Async form of `iter_events`."""
        return streaming.astream_events(partial(self._arun, input, config, context))

    # -- state ------------------------------------------------------------------------

    def _require_checkpointer(self, config: Config | None) -> tuple[Checkpointer, str]:
        if self.checkpointer is None:
            raise CheckpointerRequiredError(
                f"Graph {self.name!r} has no checkpointer, so it keeps no state between calls. "
                "Compile it with a checkpointer to read or edit thread state."
            )
        configurable = (config or {}).get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if not thread_id:
            raise ValueError(
                "Pass config={'configurable': {'thread_id': '...'}} to address a thread."
            )
        ns = configurable.get("checkpoint_ns")
        if ns:
            raise ValueError(
                f"config['configurable']['checkpoint_ns'] is {ns!r}, a subgraph's namespace; "
                "thread state is read and written through the root graph: drop checkpoint_ns "
                "(a subgraph's own state is in get_state(config, subgraphs=True).tasks)."
            )
        return self.checkpointer, thread_id

    def get_state(self, config: Config, subgraphs: bool = False) -> StateSnapshot:
        """The thread's latest state (or the checkpoint `config` names)."""
        checkpointer, thread_id = self._require_checkpointer(config)
        return inspection.state(self, checkpointer, thread_id, config, subgraphs)

    def get_state_history(
        self, config: Config, limit: int | None = None, before: Config | str | None = None
    ) -> Iterator[StateSnapshot]:
        """Snapshots of the thread, newest first."""
        checkpointer, thread_id = self._require_checkpointer(config)
        if isinstance(before, Mapping):
            before = (before.get("configurable") or {}).get("checkpoint_id")
        return inspection.history(self, checkpointer, thread_id, config, limit, before)

    def update_state(
        self, config: Config, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> Config:
        """Write a new checkpoint as if `as_node` had returned `values` (see
        `RunLoop.update_state`). Returns the config of the new checkpoint."""
        checkpointer, thread_id = self._require_checkpointer(config)
        loop = RunLoop(self, dict(config), None, None, checkpointer)
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        new = loop.update_state(values, as_node, checkpoint_id)
        loop.commit()
        return {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": new.id}
        }


def latest_states(graphs: Mapping[str, CompiledGraph]) -> dict[str, StateSnapshot]:
    """Each thread's latest state, by thread id, as its graph (`graphs[thread_id]`) gives
    it with `get_state(config)`; the threads whose graphs save to one checkpointer are
    read in one `Checkpointer.load_heads` (`inspection.latest_states`), so a listing of
    many threads reads their state in a constant number of statements."""
    found: dict[str, tuple[GraphDefinition, Checkpointer]] = {}
    for thread_id, graph in graphs.items():
        checkpointer, _ = graph._require_checkpointer({"configurable": {"thread_id": thread_id}})
        found[thread_id] = (graph, checkpointer)
    return inspection.latest_states(found)


def _listener_sink(on_event: Callable[[Envelope], None] | None) -> EventSink | None:
    return None if on_event is None else EventSink(on_event, keep=False)


__all__ = ["CompiledGraph", "Config", "latest_states"]
