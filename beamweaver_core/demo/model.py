"""The demo's chat model: a real provider when a key is configured, offline rules otherwise.

The backend is chosen from the environment at each call (never at import):
`BEAMWEAVER_DEMO_MODEL` (`"provider:model"`, or `"scripted"` to force the offline rules),
else `openai:gpt-4o-mini` when `OPENAI_API_KEY` is set, else an Anthropic model when
`ANTHROPIC_API_KEY` is set, else a `ScriptedChatModel` replying with `plan_reply`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence

from beamweaver_core.demo.planner import plan_reply
from beamweaver_core.llm import ScriptedChatModel, init_chat_model
from beamweaver_core.llm.base import ChatModel, StreamItem, ToolSpec
from beamweaver_core.messages import Message

OPENAI_DEFAULT = "openai:gpt-4o-mini"
ANTHROPIC_DEFAULT = "anthropic:claude-haiku-4-5"
OFFLINE = "scripted"
STREAM_DELAY = 0.02
"""Seconds between the offline model's streamed chunks, so the thread page shows tokens
arriving."""


def demo_model_spec(environ: Mapping[str, str] = os.environ) -> str:
    """Which model the demo uses: a `"provider:model"` string, or `"scripted"`."""
    explicit = environ.get("BEAMWEAVER_DEMO_MODEL", "").strip()
    if explicit:
        return explicit
    if environ.get("OPENAI_API_KEY"):
        return OPENAI_DEFAULT
    if environ.get("ANTHROPIC_API_KEY"):
        return ANTHROPIC_DEFAULT
    return OFFLINE


class DemoChatModel(ChatModel):
    """Delegates each call to the backend `demo_model_spec()` names; offline, to a
    scripted model replying with `planner` (default: the operations assistant's rules)."""

    provider = "demo"
    model_name = "ops-assistant"

    def __init__(self, planner: Callable[[Sequence[Message]], Message] = plan_reply) -> None:
        self.planner = planner
        self._providers: dict[str, ChatModel] = {}
        self._lock = threading.Lock()

    def backend(self) -> ChatModel:
        """The model for this call (a fresh offline script, or a cached provider model)."""
        spec = demo_model_spec()
        if spec.partition(":")[0] == OFFLINE:
            # A new one-entry script per call: the rules see the whole conversation, and
            # no call history piles up in a long-running server.
            return ScriptedChatModel(
                [self.planner], model_name="demo-rules", chunk_delay=STREAM_DELAY
            )
        with self._lock:
            model = self._providers.get(spec)
            if model is None:
                model = self._providers[spec] = init_chat_model(spec)
        return model

    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        """Delegate to `backend()`."""
        return self.backend().invoke(messages, tools=tools)

    async def ainvoke(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Message:
        """Delegate to `backend()`."""
        return await self.backend().ainvoke(messages, tools=tools)

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Iterator[StreamItem]:
        """Delegate to `backend()`."""
        return self.backend().stream(messages, tools=tools)

    async def astream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamItem]:
        """Delegate to `backend()`."""
        async for item in self.backend().astream(messages, tools=tools):
            yield item


__all__ = ["ANTHROPIC_DEFAULT", "OFFLINE", "OPENAI_DEFAULT", "DemoChatModel", "demo_model_spec"]
