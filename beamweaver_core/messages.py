"""Chat messages and tool calls: frozen, JSON-serializable value objects.

The vocabulary the chat models (`llm`) and the agent layer (`agent`) share, so it sits
below both; checkpoints store these types in their typed envelope (`checkpoint.serde`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ToolStatus = Literal["success", "error"]
_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call proposed by a model: `id`, tool `name`, and JSON `args`."""

    id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        args = data.get("args") or {}
        if not isinstance(args, Mapping):
            raise TypeError(f"ToolCall args must be a JSON object, got {args!r}")
        return cls(id=str(data["id"]), name=str(data["name"]), args=dict(args))


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. Build them with `Message.user(...)` and friends.

    `metadata` is JSON data about the message that is never sent to a model (for example
    the tool calls a reviewer's edit replaced, see `agent.hitl`); empty by default.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    status: ToolStatus | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"Message role must be one of {_ROLES}, got {self.role!r}")
        if not isinstance(self.content, str):
            raise TypeError(
                f"Message content must be a str, got {type(self.content).__name__}; "
                "serialize structured content to JSON first"
            )
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.metadata, Mapping):
            raise TypeError(
                f"Message metadata must be a dict of JSON data, got {type(self.metadata).__name__}"
            )

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Iterable[ToolCall] = ()) -> Message:
        return cls(role="assistant", content=text, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(
        cls,
        content: Any,
        *,
        tool_call_id: str,
        name: str | None = None,
        status: ToolStatus = "success",
        metadata: Mapping[str, Any] | None = None,
    ) -> Message:
        """A tool result; non-str content is stored as its JSON text."""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)
        return cls(
            role="tool",
            content=content,
            tool_call_id=tool_call_id,
            name=name,
            status=status,
            metadata=dict(metadata or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.status is not None:
            data["status"] = self.status
        if self.metadata:
            data["metadata"] = dict(self.metadata)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            status=data.get("status"),
            metadata=dict(data.get("metadata") or {}),
        )


ORIGINAL_TOOL_CALLS_KEY = "original_tool_calls"
"""`Message.metadata` key of an assistant message whose tool calls a reviewer edited: the
calls as the model proposed them (a list of `{"id", "name", "args"}`)."""


@dataclass(frozen=True, slots=True)
class ToolCallEdits:
    """A `messages` update that replaces tool calls in place instead of appending.

    Each call replaces the call with the same id in the latest assistant message that has
    it; the replaced calls are kept in that message's metadata under
    `ORIGINAL_TOOL_CALLS_KEY` (the first version of a call, if it is edited twice).
    """

    calls: tuple[ToolCall, ...]

    def apply(self, messages: list[Message]) -> list[Message]:
        """`messages` with the calls replaced (`ValueError` for a call nobody proposed)."""
        out = list(messages)
        edits = {call.id: call for call in self.calls}
        for index in range(len(out) - 1, -1, -1):
            message = out[index]
            replaced = [c for c in message.tool_calls if c.id in edits]
            if message.role != "assistant" or not replaced:
                continue
            originals = list(message.metadata.get(ORIGINAL_TOOL_CALLS_KEY) or ())
            kept = {item.get("id") for item in originals if isinstance(item, Mapping)}
            originals.extend(c.to_dict() for c in replaced if c.id not in kept)
            calls = tuple(edits.pop(c.id) if c.id in edits else c for c in message.tool_calls)
            out[index] = dataclasses.replace(
                message,
                tool_calls=calls,
                metadata={**message.metadata, ORIGINAL_TOOL_CALLS_KEY: originals},
            )
            if not edits:
                return out
        raise ValueError(
            f"Cannot replace tool call(s) {sorted(edits)}: no assistant message in the "
            "conversation proposed them."
        )

    def to_dict(self) -> dict[str, Any]:
        return {"calls": [call.to_dict() for call in self.calls]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCallEdits:
        return cls(tuple(ToolCall.from_dict(c) for c in data["calls"]))


__all__ = ["ORIGINAL_TOOL_CALLS_KEY", "Message", "Role", "ToolCall", "ToolCallEdits", "ToolStatus"]
