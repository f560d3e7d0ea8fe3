"""One run's stored events (`RunEvent`) and live hints as the protocol's stream events.

Each stored event becomes zero or more `(event name, data)` frames, always the same ones
for the same stream modes, so a stream resumed from an event id (`<seq>-<index>`) skips
exactly what the client saw. Values come from the run's checkpoints (`values`,
`checkpoints`, and whole messages for `messages` modes); updates, tasks, custom events and
`events` from the stored event data (as the runtime recorded it: redacted, long strings
shortened). Token-by-token model deltas are never stored: they come live from hints, and
carry no event id (a resumed stream gets the whole message with its step instead).

Runs in a worker thread (it reads Postgres); one `Translator` per stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connection

from beamweaver_core.agent.state import as_message
from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.graph.compiled import CompiledGraph
from beamweaver_core.models import Run, RunEvent
from beamweaver_core.protocol import representations, shapes
from beamweaver_core.protocol.assistants import assistant_id
from beamweaver_core.protocol.deltas import Deltas, Frame
from beamweaver_core.protocol.messages import to_wire
from beamweaver_core.protocol.values import interrupt, state_values
from beamweaver_core.runtime import options as run_options
from beamweaver_core.runtime import registry
from beamweaver_core.types import StateSnapshot

ENGINE_EVENTS = frozenset(
    {
        "run.started",
        "run.completed",
        "run.interrupted",
        "run.failed",
        "node.started",
        "node.finished",
        "state.updated",
        "model.delta",
        "tool.started",
        "tool.finished",
    }
)
"""Events of the engine and agent layer; any other name is a node's custom event."""

_FIRST = """
SELECT checkpoint_id, parent_id, source FROM bw_checkpoint
 WHERE thread_id = %s AND ns = '' AND (metadata::jsonb ->> 'run_id') = %s
 ORDER BY seq {order} LIMIT 1
"""
_AT_STEP = """
SELECT checkpoint_id FROM bw_checkpoint
 WHERE thread_id = %s AND ns = '' AND step = %s AND (metadata::jsonb ->> 'run_id') = %s
 ORDER BY seq DESC LIMIT 1
"""


class Translator:
    """The frames of one run for the requested stream modes."""

    def __init__(self, run: Run, modes: frozenset[str], subgraphs: bool) -> None:
        self.run = run
        self.run_id = str(run.id)
        self.modes = modes
        self.subgraphs = subgraphs
        self.graph: CompiledGraph = run_options.configured_graph(
            registry.compiled_graph(run.graph, PostgresCheckpointer()), run.options
        )
        self.values: dict[str, Any] | None = None
        self.messages = 0
        self.appended = 0
        """Messages the step's nodes finished so far added after the state's `messages`."""
        self.writers: dict[int, str] = {}
        """The node that added each message, by its place in the state's `messages`."""
        self.step = 0
        self.asked: dict[str, Any] | None = None
        self.meta = {
            "run_id": self.run_id,
            "thread_id": run.thread_id,
            "graph_id": run.graph,
            "assistant_id": assistant_id(run.graph),
        }
        self.deltas = Deltas(modes, subgraphs, self.meta, self._event)

    def prime(self, seq: int) -> None:
        """Take up the state the stream had before stored event `seq` (a resumed stream
        starts there): the values of the run's last step before it."""
        earlier = RunEvent.objects.filter(run_id=self.run.id, seq__lt=seq)
        last = earlier.filter(ns="", event="state.updated").order_by("-seq").first()
        step = (
            last.data.get("step") if last is not None and isinstance(last.data, Mapping) else None
        )
        checkpoint_id = self._at_step(step) if isinstance(step, int) else None
        if checkpoint_id is not None:
            self._remember(self._snapshot(checkpoint_id))
        elif earlier.filter(event="run.started").exists():
            self._started(earlier.filter(event="run.started").first(), {})  # type: ignore[arg-type]

    # -- stored events --------------------------------------------------------------

    def stored(self, row: RunEvent) -> list[Frame]:
        """The frames of one stored event."""
        data = row.data if isinstance(row.data, Mapping) else {}
        if row.ns:
            return self._nested(row, data)
        handler = {
            "run.started": self._started,
            "node.started": self._node_started,
            "node.finished": self._node_finished,
            "state.updated": self._state_updated,
            "run.interrupted": self._interrupted,
            "run.completed": self._completed,
            "run.failed": self._failed,
            "tool.started": self._tool,
            "tool.finished": self._tool,
        }.get(row.event)
        if handler is not None:
            return handler(row, data)
        if row.event in ENGINE_EVENTS:
            return []
        return self._custom(row, row.data, "")

    def _started(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        first = self._checkpoint_row("ASC")
        frames: list[Frame] = []
        snapshot: StateSnapshot | None
        if first is not None and first[2] == "input":
            snapshot = self._snapshot(first[0])
            frames.extend(self._checkpoint_frames(snapshot, row))
        elif first is not None:
            snapshot = self._snapshot(first[1]) if first[1] else None
        else:
            snapshot = self._snapshot(None)
        self._remember(snapshot)
        if "values" in self.modes:
            frames.insert(0, ("values", self.values or {}))
        if "events" in self.modes:
            frames.insert(
                0, ("events", self._event("on_chain_start", self.run.graph, {"input": self.values}))
            )
        return frames

    def _node_started(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        task = shapes.task_start(str(data.get("task_id", "")), row.node, self.values)
        frames: list[Frame] = []
        if "tasks" in self.modes:
            frames.append(("tasks", task))
        if "debug" in self.modes:
            frames.append(("debug", shapes.debug("task", self._step(), _at(row), task)))
        if "events" in self.modes:
            frames.append(
                ("events", self._event("on_chain_start", row.node, {"input": self.values}))
            )
        return frames

    def _node_finished(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        frames: list[Frame] = []
        done = data.get("status") == "done"
        shown = self.modes & {"updates", "tasks", "debug", "events"}
        update = self._update(data, self.messages + self.appended) if shown else None
        if isinstance(data.get("update"), Mapping):
            added = data["update"].get("messages")
            count = len(added) if isinstance(added, list) else 0
            start = self.messages + self.appended
            self.writers.update(dict.fromkeys(range(start, start + count), row.node))
            self.appended += count
        if done and "updates" in self.modes:
            frames.append(("updates", {row.node: update}))
        if self.modes & {"tasks", "debug"}:
            asked = [
                {"id": i, "value": self._interrupt_values().get(i)}
                for i in data.get("interrupts") or ()
            ]
            task_id = str(data.get("task_id", ""))
            result = shapes.task_result(task_id, row.node, data, update, asked)
            if "tasks" in self.modes:
                frames.append(("tasks", result))
            if "debug" in self.modes:
                frames.append(
                    ("debug", shapes.debug("task_result", self._step(), _at(row), result))
                )
        if done and "events" in self.modes:
            frames.append(("events", self._event("on_chain_end", row.node, {"output": update})))
        return frames

    def _state_updated(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        step = data.get("step")
        checkpoint_id = self._at_step(step) if isinstance(step, int) else None
        if checkpoint_id is None:
            return []
        snapshot = self._snapshot(checkpoint_id)
        before = self.messages
        self._remember(snapshot)
        frames: list[Frame] = []
        if "values" in self.modes:
            frames.append(("values", self.values))
        frames.extend(self._checkpoint_frames(snapshot, row))
        frames.extend(self._new_messages(snapshot, before, row))
        self.deltas.close()
        return frames

    def _interrupted(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        last = self._checkpoint_row("DESC")
        snapshot = self._snapshot(last[0] if last is not None else None)
        asked = [interrupt(i) for i in representations.asked(snapshot.interrupts)]
        frames: list[Frame] = []
        if asked and "updates" in self.modes:
            frames.append(("updates", {"__interrupt__": asked}))
        if asked and "values" in self.modes:
            frames.append(("values", {**state_values(snapshot.values), "__interrupt__": asked}))
        return frames + self._completed(row, data)

    def _completed(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        if "events" not in self.modes:
            return []
        return [("events", self._event("on_chain_end", self.run.graph, {"output": self.values}))]

    def _failed(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        run = Run.objects.filter(id=self.run.id).first()
        error = representations.error_of(run)
        return [("error", error)] if error is not None else []

    def _tool(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        if "events" not in self.modes:
            return []
        name = str(data.get("name") or row.node)
        if row.event == "tool.started":
            return [("events", self._event("on_tool_start", name, {"input": data.get("args")}))]
        return [("events", self._event("on_tool_end", name, {"output": data.get("content")}))]

    def _custom(self, row: RunEvent, data: Any, ns: str) -> list[Frame]:
        suffix = f"|{ns}" if ns else ""
        frames: list[Frame] = []
        if "custom" in self.modes:
            frames.append((f"custom{suffix}", data))
        if "events" in self.modes:
            frames.append((f"events{suffix}", self._event("on_custom_event", row.event, data)))
        return frames

    def _nested(self, row: RunEvent, data: Mapping[str, Any]) -> list[Frame]:
        """A subgraph's event: updates, tasks and custom events under `mode|ns`."""
        if not self.subgraphs:
            return []
        ns = representations.namespace(row.ns)
        if row.event not in ENGINE_EVENTS:
            return self._custom(row, row.data, ns)
        frames: list[Frame] = []
        task_id = str(data.get("task_id", ""))
        if row.event == "node.finished":
            update = self._update(data, 0)
            if data.get("status") == "done" and "updates" in self.modes:
                frames.append((f"updates|{ns}", {row.node: update}))
            if "tasks" in self.modes:
                result = shapes.task_result(task_id, row.node, data, update, [])
                frames.append((f"tasks|{ns}", result))
        elif row.event == "node.started" and "tasks" in self.modes:
            frames.append((f"tasks|{ns}", shapes.task_start(task_id, row.node, None)))
        return frames

    # -- live hints -----------------------------------------------------------------

    def live(self, record: Mapping[str, Any]) -> list[Frame]:
        """The frames of a live `run.event` push (model deltas: `protocol.deltas`)."""
        return self.deltas.frames(record)

    # -- helpers --------------------------------------------------------------------

    def _new_messages(self, snapshot: StateSnapshot, before: int, row: RunEvent) -> list[Frame]:
        wanted = self.modes & {"messages", "messages-tuple"}
        found = snapshot.values.get("messages")
        if not wanted or not isinstance(found, list):
            return []
        frames: list[Frame] = []
        for position in range(before, len(found)):
            message = found[position]
            wire = self._message(message, position)
            if wire is None or (wire["type"] == "ai" and self.deltas.sent_whole(wire["content"])):
                continue  # this stream got it token by token already (all of it)
            node = self.writers.get(position)
            meta = shapes.message_metadata(self.meta, node, "", self._step())
            if "messages-tuple" in wanted:
                frames.append(("messages", [wire, meta]))
            if "messages" in wanted:
                frames.append(("messages/metadata", {wire["id"]: {"metadata": meta}}))
                frames.append(("messages/complete", [wire]))
        return frames

    @staticmethod
    def _update(data: Mapping[str, Any], first_message: int) -> Any:
        """A node's stored update as `values` shows state: messages in LangChain's format,
        `first_message` the state's place of its first one (a subgraph's is not known)."""
        update = data.get("update")
        if not update:
            return None
        if isinstance(update, Mapping):
            return state_values(update, first_message=first_message)
        return update

    @staticmethod
    def _message(message: Any, position: int) -> dict[str, Any] | None:
        try:
            return to_wire(as_message(message), position)
        except (KeyError, TypeError, ValueError):
            return None

    def _checkpoint_frames(self, snapshot: StateSnapshot, row: RunEvent) -> list[Frame]:
        frames: list[Frame] = []
        if self.modes & {"checkpoints", "debug"}:
            payload = shapes.checkpoint_payload(snapshot)
            if "checkpoints" in self.modes:
                frames.append(("checkpoints", payload))
            if "debug" in self.modes:
                step = int(snapshot.metadata.get("step", 0))
                frames.append(("debug", shapes.debug("checkpoint", step, _at(row), payload)))
        return frames

    def _remember(self, snapshot: StateSnapshot | None) -> None:
        self.appended = 0
        if snapshot is None:
            self.values, self.messages = {}, 0
            return
        self.values = state_values(snapshot.values)
        found = snapshot.values.get("messages")
        self.messages = len(found) if isinstance(found, list) else 0
        self.step = int(snapshot.metadata.get("step", 0)) + 1

    def _step(self) -> int:
        return self.step

    def _interrupt_values(self) -> dict[str, Any]:
        if self.asked is None:
            last = self._checkpoint_row("DESC")
            snapshot = self._snapshot(last[0] if last is not None else None)
            self.asked = {i.id: interrupt(i)["value"] for i in snapshot.interrupts}
        return self.asked

    def _snapshot(self, checkpoint_id: str | None) -> StateSnapshot:
        config: dict[str, Any] = {"configurable": {"thread_id": self.run.thread_id}}
        if checkpoint_id is not None:
            config["configurable"]["checkpoint_id"] = checkpoint_id
        return self.graph.get_state(config)

    def _checkpoint_row(self, order: str) -> tuple[str, str | None, str] | None:
        with connection.cursor() as cursor:
            cursor.execute(_FIRST.format(order=order), [self.run.thread_id, self.run_id])
            row = cursor.fetchone()
        return (row[0], row[1], row[2]) if row is not None else None

    def _at_step(self, step: int) -> str | None:
        with connection.cursor() as cursor:
            cursor.execute(_AT_STEP, [self.run.thread_id, step, self.run_id])
            row = cursor.fetchone()
        return row[0] if row is not None else None

    def _event(self, kind: str, name: str, data: Any) -> dict[str, Any]:
        return shapes.event(kind, name, self.run_id, data, self.meta)


def _at(row: RunEvent) -> str:
    return row.created_at.isoformat()


__all__ = ["ENGINE_EVENTS", "Translator"]
