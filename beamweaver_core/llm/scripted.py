"""An offline, deterministic chat model that replies from a script (demo and tests)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import TypeAlias

from beamweaver_core.exceptions import ScriptExhaustedError
from beamweaver_core.llm.base import ChatModel, StreamItem, ToolCallChunk, ToolSpec
from beamweaver_core.messages import Message

ScriptedResponse: TypeAlias = Message | Callable[[tuple[Message, ...]], Message]
"""A canned assistant `Message`, or a function of the conversation returning one."""

# A word with its trailing whitespace, or a run of leading whitespace: joined they
# reproduce the text exactly.
_WORD_CHUNK = re.compile(r"\S+\s*|\s+")


class ScriptedChatModel(ChatModel):
    """Replies with the next scripted entry on each call; never touches the network.

    An entry is an assistant `Message`, or a callable `fn(messages) -> Message` that
    computes the reply from the conversation. Every call records the messages it received
    on `.calls` and the tools offered on `.tools_offered` (both as tuples, one per call,
    including a call that ran past the end of the script). Safe to share across threads.

    Streamed (`stream`, which an agent uses when someone listens to its events), a reply
    comes in chunks like a provider's: its text in word-sized pieces, or `chunk_size`
    characters each, then each tool call's arguments as JSON text in pieces of the same
    size; `chunk_delay` seconds pass between chunks (so a page shows tokens arriving).
    The final message is the scripted one.
    """

    provider = "scripted"

    def __init__(
        self,
        responses: Iterable[ScriptedResponse],
        *,
        model_name: str = "scripted",
        chunk_size: int | None = None,
        chunk_delay: float = 0.0,
    ) -> None:
        self.responses: tuple[ScriptedResponse, ...] = tuple(responses)
        for position, entry in enumerate(self.responses):
            if not callable(entry):
                _check_reply(entry, f"scripted response #{position + 1}")
        if chunk_size is not None and (isinstance(chunk_size, bool) or not chunk_size >= 1):
            raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}.")
        if not chunk_delay >= 0:
            raise ValueError(f"chunk_delay must be >= 0 seconds, got {chunk_delay!r}.")
        self.chunk_size = chunk_size
        self.chunk_delay = float(chunk_delay)
        self.model_name = model_name
        self.calls: list[tuple[Message, ...]] = []
        self.tools_offered: list[tuple[ToolSpec, ...]] = []
        self._cursor = 0
        self._lock = threading.Lock()

    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        """Return the next scripted reply; raise `ScriptExhaustedError` past the end."""
        conversation = tuple(messages)
        with self._lock:
            self.calls.append(conversation)
            self.tools_offered.append(tuple(tools))
            position = self._cursor
            self._cursor += 1
        if position >= len(self.responses):
            raise ScriptExhaustedError(
                f"ScriptedChatModel has {len(self.responses)} scripted response(s) but was "
                f"called {position + 1} times. Add a response for call #{position + 1} to the "
                "script, or find out why the model was called again (see .calls)."
            )
        entry = self.responses[position]
        if callable(entry):
            # Run outside the lock: the function may be slow or call back into the model.
            return _check_reply(entry(conversation), f"scripted function #{position + 1}")
        return entry

    async def ainvoke(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Message:
        """Same as `invoke`: there is no I/O to wait for."""
        return self.invoke(messages, tools=tools)

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Iterator[StreamItem]:
        """Yield the reply in chunks (see the class), then the reply itself."""
        reply = self.invoke(messages, tools=tools)
        for position, chunk in enumerate(self._chunks(reply)):
            if position and self.chunk_delay:
                time.sleep(self.chunk_delay)
            yield chunk
        yield reply

    async def astream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamItem]:
        """Async `stream`."""
        reply = self.invoke(messages, tools=tools)
        for position, chunk in enumerate(self._chunks(reply)):
            if position and self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield chunk
        yield reply

    def _chunks(self, reply: Message) -> list[str | ToolCallChunk]:
        chunks: list[str | ToolCallChunk] = list(self._split(reply.content))
        for index, call in enumerate(reply.tool_calls):
            pieces = self._split(json.dumps(dict(call.args), ensure_ascii=False)) or [""]
            chunks.append(ToolCallChunk(index, id=call.id, name=call.name, args=pieces[0]))
            chunks.extend(ToolCallChunk(index, args=piece) for piece in pieces[1:])
        return chunks

    def _split(self, text: str) -> list[str]:
        if self.chunk_size is None:
            return word_chunks(text)
        size = self.chunk_size
        return [text[i : i + size] for i in range(0, len(text), size)]

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet."""
        with self._lock:
            return max(len(self.responses) - self._cursor, 0)


def word_chunks(text: str) -> list[str]:
    """Split `text` into word-sized pieces that join back to exactly `text`."""
    return _WORD_CHUNK.findall(text)


def _check_reply(reply: object, where: str) -> Message:
    if not isinstance(reply, Message) or reply.role != "assistant":
        raise TypeError(
            f"{where} must be an assistant Message (Message.assistant(...)) or a function "
            f"returning one, got {reply!r}"
        )
    return reply


__all__ = ["ScriptedChatModel", "ScriptedResponse"]
