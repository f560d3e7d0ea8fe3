"""The chat-model contract every provider implements."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from beamweaver_core.messages import Message


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about a tool: name, description, JSON Schema of its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A piece of a tool call as a model streams it.

    `index` is the call's position among the reply's tool calls; `id` and `name` come with
    the call's first piece (None on later ones); `args` is the next fragment of the JSON
    text of its arguments. Joined in order, a call's fragments are its arguments' JSON.
    """

    index: int
    id: str | None = None
    name: str | None = None
    args: str = ""


StreamItem = str | ToolCallChunk | Message
"""What `ChatModel.stream` yields: text deltas, tool-call pieces, then the final message."""


class ChatModel(ABC):
    """A chat model: messages in, one assistant `Message` out (possibly with tool calls).

    Subclasses implement `invoke`; they may override `stream` to yield text deltas (str)
    and tool-call pieces (`ToolCallChunk`) as the provider produces them, then the final
    `Message`, which must equal what `invoke` returns for the same reply. Creating a model
    never touches the network.
    """

    provider: str = "unknown"
    model_name: str = ""

    @abstractmethod
    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        """Return the assistant's reply to `messages`."""

    async def ainvoke(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Message:
        return await asyncio.to_thread(self.invoke, messages, tools=tools)

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Iterator[StreamItem]:
        """Yield text deltas (str) and tool-call pieces (`ToolCallChunk`) as they arrive,
        then the final assistant `Message`."""
        yield self.invoke(messages, tools=tools)

    async def astream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamItem]:
        """Async `stream`."""
        yield await self.ainvoke(messages, tools=tools)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.provider}:{self.model_name}>"


__all__ = ["ChatModel", "StreamItem", "ToolCallChunk", "ToolSpec"]
