"""Chat messages in LangChain's wire format, both ways.

Out: a `Message` becomes `{"type": "human" | "ai" | "tool" | "system", "id", "content",
"name", "tool_calls": [{"id", "name", "args", "type": "tool_call"}], "tool_call_id",
"status", ...}`, as chat UIs built on the SDKs render `values.messages`. Our messages keep
no id of their own; a client's id is kept in the message's metadata (`"id"`), and a
message without one gets an id derived from its place in the conversation and its
content, stable across reads.

In: `{"type": "human", "content": ..., "id": ...}`, `{"role": "user", ...}` (and `ai` /
`assistant`, `tool`, `system` / `developer`), with content as a string or a list of text
blocks, become the dict form `beamweaver_core.agent.state.as_message` reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from beamweaver_core.messages import Message, ToolCall

WIRE_TYPES = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}
ID_KEY = "id"
"""`Message.metadata` key holding a client's message id."""
EXTRA_KEY = "beamweaver"
"""`additional_kwargs` key carrying the rest of a message's metadata on the wire."""


def message_id(message: Message, position: int | None) -> str:
    """The message's client id, or one derived from its place and content."""
    given = message.metadata.get(ID_KEY)
    if isinstance(given, str) and given:
        return given
    basis = json.dumps(
        [
            position,
            message.role,
            message.content,
            [c.id for c in message.tool_calls],
            message.tool_call_id,
        ],
        ensure_ascii=False,
    )
    return (
        "msg-" + hashlib.blake2b(basis.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    )


def to_wire(message: Message, position: int | None = None) -> dict[str, Any]:
    """`message` as a LangChain message dict."""
    extra = {k: v for k, v in message.metadata.items() if k != ID_KEY}
    data: dict[str, Any] = {
        "type": WIRE_TYPES[message.role],
        "id": message_id(message, position),
        "content": message.content,
        "name": message.name,
        "additional_kwargs": {EXTRA_KEY: extra} if extra else {},
        "response_metadata": {},
    }
    if message.role == "assistant":
        data["tool_calls"] = [
            {**call.to_dict(), "type": "tool_call"} for call in message.tool_calls
        ]
        data["invalid_tool_calls"] = []
        data["usage_metadata"] = None
    if message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
        data["status"] = message.status or "success"
        data["artifact"] = None
    return data


def is_wire_message(value: Any) -> bool:
    """Whether `value` looks like a message dict (LangChain's or ours)."""
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type", value.get("role"))
    return isinstance(kind, str) and kind in ROLES


def from_wire(data: Mapping[str, Any]) -> dict[str, Any]:
    """A message dict from a client as our message dict; `ValueError` saying what is
    wrong with it."""
    kind = data.get("type", data.get("role"))
    role = ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        raise ValueError(
            f"A message needs a 'type' (human, ai, tool, system) or a 'role' (user, assistant, "
            f"tool, system), got {kind!r:.60}."
        )
    message: dict[str, Any] = {"role": role, "content": _text(data.get("content", ""))}
    calls = [_tool_call(call) for call in data.get("tool_calls") or ()]
    if calls:
        if role != "assistant":
            raise ValueError("Only an ai (assistant) message can carry tool_calls.")
        message["tool_calls"] = calls
    for key in ("tool_call_id", "name"):
        if data.get(key) is not None:
            if not isinstance(data[key], str):
                raise ValueError(f"A message's {key!r} must be a string.")
            message[key] = data[key]
    if role == "tool":
        if "tool_call_id" not in message:
            raise ValueError("A tool message needs the 'tool_call_id' of the call it answers.")
        status = data.get("status") or "success"
        if status not in ("success", "error"):
            raise ValueError(
                f"A tool message's status must be success or error, got {status!r:.40}."
            )
        message["status"] = status
    metadata: dict[str, Any] = {}
    if isinstance(data.get("metadata"), Mapping):  # our own dict form
        metadata.update(data["metadata"])
    kwargs = data.get("additional_kwargs")
    extra = kwargs.get(EXTRA_KEY) if isinstance(kwargs, Mapping) else None
    if isinstance(extra, Mapping):
        metadata.update(extra)
    if data.get("id") is not None:
        if not isinstance(data["id"], str) or not data["id"] or len(data["id"]) > 200:
            raise ValueError("A message's 'id' must be a string of 1 to 200 characters.")
        metadata[ID_KEY] = data["id"]
    if metadata:
        message["metadata"] = metadata
    Message.from_dict(message)  # refuses what the engine would refuse later
    return message


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
            else:
                kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
                raise ValueError(
                    f"Message content blocks of type {kind!r:.40} are not supported: send "
                    "text (a string, or blocks of type 'text')."
                )
        return "".join(parts)
    raise ValueError("A message's content must be a string or a list of text blocks.")


def _tool_call(call: Any) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise ValueError("A tool call must be an object with 'id', 'name' and 'args'.")
    function = call.get("function")
    if isinstance(function, Mapping):  # the OpenAI shape: {"id", "function": {name, arguments}}
        try:
            args = json.loads(function.get("arguments") or "{}")
        except (TypeError, ValueError):
            raise ValueError("A tool call's function.arguments must be JSON text.") from None
        call = {"id": call.get("id"), "name": function.get("name"), "args": args}
    if not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
        raise ValueError("A tool call needs a string 'id' and 'name'.")
    args = call.get("args")
    args = {} if args is None else args
    if not isinstance(args, Mapping):
        raise ValueError("A tool call's 'args' must be an object.")
    return ToolCall(id=call["id"], name=call["name"], args=dict(args)).to_dict()


def _meant_as_message(value: Any) -> bool:
    return isinstance(value, Mapping) and ("type" in value or "role" in value)


def input_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Graph input or a state update from a client: the messages under `messages` (one
    or a list; an object with a `type` or `role` is taken for a message, and refused if it
    is not a valid one) in our dict form; everything else as given."""
    out = dict(values)
    given = out.get("messages")
    if isinstance(given, Mapping) and _meant_as_message(given):
        out["messages"] = [from_wire(given)]
    elif isinstance(given, list):
        out["messages"] = [from_wire(m) if _meant_as_message(m) else m for m in given]
    return out


__all__ = ["from_wire", "input_values", "is_wire_message", "message_id", "to_wire"]
