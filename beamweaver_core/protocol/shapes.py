"""The payloads of the protocol's stream modes, built from our events and snapshots:
checkpoints (`checkpoints`, `debug`), tasks (`tasks`, `debug`), message chunks
(`messages-tuple`, `messages`) and LangChain's `astream_events` v2 records (`events`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beamweaver_core.protocol import representations
from beamweaver_core.protocol.values import interrupt, state_values, wire
from beamweaver_core.types import StateSnapshot


def checkpoint_payload(snapshot: StateSnapshot) -> dict[str, Any]:
    """A `checkpoints` event: the checkpoint's config, values, metadata, next and tasks."""
    return {
        "config": snapshot.config,
        "parent_config": snapshot.parent_config,
        "values": state_values(snapshot.values),
        "metadata": wire(snapshot.metadata),
        "next": list(snapshot.next),
        "tasks": [
            {
                "id": t.id,
                "name": t.name,
                "interrupts": [interrupt(i) for i in representations.asked(t.interrupts)],
                "state": None,
            }
            for t in snapshot.tasks
        ],
    }


def debug(kind: str, step: int, at: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A `debug` event wrapping a checkpoint, task or task result."""
    if kind == "checkpoint":
        payload = {
            **payload,
            "checkpoint": representations.checkpoint(payload["config"]),
            "parent_checkpoint": representations.checkpoint(payload["parent_config"]),
        }
    return {"step": step, "timestamp": at, "type": kind, "payload": payload}


def task_start(task_id: str, node: str, values: Any) -> dict[str, Any]:
    return {"id": task_id, "name": node, "input": values, "triggers": [], "metadata": {}}


def task_result(
    task_id: str, node: str, data: Mapping[str, Any], update: Any, interrupts: list[dict[str, Any]]
) -> dict[str, Any]:
    """A finished task (`data`: its stored event; `update`: its writes on the wire)."""
    return {
        "id": task_id,
        "name": node,
        "error": data.get("error"),
        "result": update or {},
        "interrupts": interrupts,
    }


def message_metadata(
    meta: Mapping[str, Any], node: str | None, ns: str, step: int | None = None
) -> dict[str, Any]:
    """The metadata of a streamed message (`messages-tuple`, `messages/metadata`): the
    run's, the node that wrote it (`langgraph_node`, what chat UIs filter on), its
    subgraph's namespace, and its step when known."""
    found: dict[str, Any] = {**meta, "langgraph_node": node, "langgraph_checkpoint_ns": ns}
    if step is not None:
        found["langgraph_step"] = step
    return found


def chunk(message_id: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A model delta as LangChain's `AIMessageChunk`."""
    calls = []
    piece = data.get("tool_call_chunk")
    if isinstance(piece, Mapping):
        calls.append(
            {
                "name": piece.get("name"),
                "args": piece.get("args"),
                "id": piece.get("id"),
                "index": piece.get("index"),
                "type": "tool_call_chunk",
            }
        )
    return {
        "type": "AIMessageChunk",
        "id": message_id,
        "content": data.get("delta") or "",
        "name": None,
        "additional_kwargs": {},
        "response_metadata": {},
        "tool_calls": [],
        "invalid_tool_calls": [],
        "tool_call_chunks": calls,
        "usage_metadata": None,
    }


def event(
    kind: str, name: str, run_id: str, data: Any, metadata: Mapping[str, Any]
) -> dict[str, Any]:
    """An `events` record (LangChain's `astream_events` v2 shape)."""
    return {
        "event": kind,
        "name": name,
        "run_id": run_id,
        "tags": [],
        "metadata": dict(metadata),
        "data": data,
        "parent_ids": [],
    }


__all__ = [
    "checkpoint_payload",
    "chunk",
    "debug",
    "event",
    "message_metadata",
    "task_result",
    "task_start",
]
