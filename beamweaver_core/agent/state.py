"""The agent's state: a `messages` list that only grows, and questions asked of it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from beamweaver_core.messages import Message, ToolCall, ToolCallEdits

MESSAGES = "messages"


def as_message(value: Message | Mapping[str, Any] | str) -> Message:
    """A `Message` from a message, its dict form (`{"role", "content", ...}`), or a str
    (a user message): so JSON input from a command line or a form works as is."""
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.user(value)
    if isinstance(value, Mapping):
        return Message.from_dict(value)
    raise TypeError(f"{value!r} is not a message: pass a Message, a message dict or a str.")


def as_messages(value: Message | Iterable[Message | Mapping[str, Any] | str]) -> list[Message]:
    """A list of messages from one message or several (see `as_message`)."""
    if isinstance(value, Message | str | Mapping):
        return [as_message(value)]
    return [as_message(item) for item in value]


def append_messages(existing: Any, update: Any) -> list[Message]:
    """The reducer of `messages`: new messages are appended; a `ToolCallEdits` item
    replaces tool calls in the message that proposed them instead (a reviewer's edit).

    The engine stores a key's first value as given, so graph input may hold messages in
    their dict form; the first append turns them into `Message`s too.
    """
    messages = as_messages(existing)
    items = [update] if isinstance(update, Message | str | Mapping | ToolCallEdits) else update
    for item in items:
        if isinstance(item, ToolCallEdits):
            messages = item.apply(messages)
        else:
            messages.append(as_message(item))
    return messages


def with_messages(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """`state` with its messages as `Message`s (see `append_messages`)."""
    messages = state.get(MESSAGES)
    if messages is None or (
        isinstance(messages, list) and all(isinstance(m, Message) for m in messages)
    ):
        return state
    return {**state, MESSAGES: as_messages(messages)}


def last_assistant(messages: Sequence[Message]) -> Message | None:
    """The latest assistant message, if any."""
    for message in reversed(messages):
        if message.role == "assistant":
            return message
    return None


def pending_tool_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """The tool calls of the latest assistant message that have no tool result yet."""
    answered: set[str] = set()
    for message in reversed(messages):
        if message.role == "assistant":
            return [call for call in message.tool_calls if call.id not in answered]
        if message.role == "tool" and message.tool_call_id is not None:
            answered.add(message.tool_call_id)
    return []


__all__ = [
    "MESSAGES",
    "append_messages",
    "as_message",
    "as_messages",
    "last_assistant",
    "pending_tool_calls",
    "with_messages",
]
