"""Thread values on the wire: state as JSON, messages in LangChain's format.

Hand-written walk (no serializer library knows the engine's types): messages become
LangChain dicts (with their position in the `messages` list, for stable ids), tool calls
and interrupts their dicts, datetimes ISO text, other objects their dataclass fields or
text. The values are the thread's own data, shown as stored (not redacted): the protocol
is the channel of the application that runs the thread (`docs/protocol.md`).
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from beamweaver_core.messages import Message, ToolCall
from beamweaver_core.protocol.messages import is_wire_message, to_wire
from beamweaver_core.types import Interrupt

MAX_DEPTH = 200


def wire(value: Any, depth: int = 0, *, messages: bool = False, first: int = 0) -> Any:
    """`value` as JSON data; `messages`: it is a `messages` list (dict items with a role
    are messages in our dict form), whose first item is the state's message `first` (a
    message's id may derive from its place)."""
    if depth > MAX_DEPTH:
        return "…"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Message):
        return to_wire(value)
    if isinstance(value, ToolCall):
        return value.to_dict()
    if isinstance(value, Interrupt):
        return interrupt(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            listed = k == "messages" and isinstance(v, list | tuple)
            out[str(k)] = wire(v, depth + 1, messages=listed, first=first if listed else 0)
        return out
    if isinstance(value, list | tuple):
        if messages:
            return [_message(item, first + i, depth) for i, item in enumerate(value)]
        return [wire(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return [wire(v, depth + 1) for v in sorted(value, key=repr)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return wire(dataclasses.asdict(value), depth + 1)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return wire(to_dict(), depth + 1)
    return str(value)


def _message(item: Any, position: int, depth: int) -> Any:
    if isinstance(item, Message):
        return to_wire(item, position)
    if isinstance(item, Mapping) and "role" in item and is_wire_message(item):
        try:
            return to_wire(Message.from_dict(item), position)
        except (KeyError, TypeError, ValueError):
            pass
    return wire(item, depth + 1)


def interrupt(value: Interrupt) -> dict[str, Any]:
    """An interrupt as the protocol shows it: `{"id", "value"}`."""
    return {"id": value.id, "value": wire(value.value)}


def state_values(values: Mapping[str, Any], *, first_message: int = 0) -> dict[str, Any]:
    """A snapshot's values on the wire, or a node's update (`first_message`: the place in
    the state's messages of the update's first one, so it has the id `values` gives it)."""
    out: dict[str, Any] = wire(dict(values), first=first_message)
    return out


__all__ = ["interrupt", "state_values", "wire"]
