"""Anthropic Messages API models (official `anthropic` SDK)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from beamweaver_core.exceptions import MalformedModelResponseError
from beamweaver_core.llm._sdk import (
    SDKChatModel,
    logger,
    parse_tool_arguments,
    require_json_object,
    with_extra_body,
)
from beamweaver_core.llm.base import ToolCallChunk, ToolSpec
from beamweaver_core.messages import Message, ToolCall

_LABEL = "Anthropic"


class AnthropicChatModel(SDKChatModel):
    """A chat model on the Anthropic Messages API (official `anthropic` SDK).

    Transient failures (connection errors, timeouts, 408/409/429/5xx) are retried by the
    SDK with exponential backoff and jitter, up to `max_retries` times. Extra keyword
    options (e.g. `top_p`, `thinking`, `metadata`) are passed to every request.
    `http_client` / `async_http_client` replace the SDK's HTTP clients (proxies, tests).
    """

    provider = "anthropic"
    _sdk_module = "anthropic"
    _label = _LABEL
    _env_var = "ANTHROPIC_API_KEY"
    _base_error = "AnthropicError"

    def __init__(self, model: str, *, max_tokens: int = 4096, **options: Any) -> None:
        """`max_tokens` (the API requires it) and the options of `SDKChatModel`."""
        super().__init__(model, **options)
        self.max_tokens = max_tokens

    def _build_client(
        self, sdk: ModuleType, api_key: str, *, asynchronous: bool, http_client: Any
    ) -> Any:
        client_class = sdk.AsyncAnthropic if asynchronous else sdk.Anthropic
        return client_class(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client,
        )

    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system, turns = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": self.max_tokens,
            "messages": turns,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [to_anthropic_tool(t) for t in tools]
        if self.temperature is not None:
            request["temperature"] = self.temperature
        request.update(self.extra)
        logger.debug(
            "Anthropic request: model=%s messages=%d tools=%d",
            self.model_name,
            len(messages),
            len(tools),
        )
        return request

    def _create(self, request: dict[str, Any], *, asynchronous: bool) -> Any:
        """Call `messages.create` (a coroutine when `asynchronous`)."""
        create = self._client(asynchronous=asynchronous).messages.create
        return create(**with_extra_body(create, request))

    def _parse(self, response: Any) -> Message:
        return from_anthropic_message(response)

    def _new_reply(self) -> _StreamedReply:
        return _StreamedReply()


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Split our conversation into the Messages API's `system` text and `messages` list.

    Tool results become `tool_result` blocks in a user turn; consecutive results share one
    user turn, because the API wants all results for an assistant turn right after it.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    previous_was_tool = False
    for message in messages:
        if message.role == "system":
            system.append(message.content)
        elif message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
            if message.status == "error":
                block["is_error"] = True
            if previous_was_tool:
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.args)}
                for call in message.tool_calls
            )
            if not blocks:
                # The API rejects empty assistant turns, and an empty turn says nothing.
                logger.debug("dropping an empty assistant message from the Anthropic request")
                continue
            turns.append({"role": "assistant", "content": blocks})
        else:
            turns.append({"role": "user", "content": message.content})
        previous_was_tool = message.role == "tool"
    return "\n\n".join(system), turns


def to_anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    """Map a `ToolSpec` to a Messages API tool definition."""
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": dict(spec.parameters),
    }


def from_anthropic_message(reply: Any) -> Message:
    """Read the assistant `Message` out of a Messages API response, checking its shape.

    Text blocks are concatenated, `tool_use` blocks become tool calls, and other block
    types (thinking, server tools) carry nothing for the agent and are skipped.
    """
    content = getattr(reply, "content", None)
    if not isinstance(content, list):
        raise MalformedModelResponseError(
            f"Anthropic returned a message whose content is not a list of blocks "
            f"({content!r}). Retry the call; if it persists, check that base_url points at "
            "a Messages API server."
        )
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        block_type = getattr(block, "type", None)
        if block_type == "text":
            text.append(_block_text(getattr(block, "text", None)))
        elif block_type == "tool_use":
            name, call_id = _tool_use_identity(block)
            args = require_json_object(
                getattr(block, "input", None), tool_name=name, provider=_LABEL
            )
            calls.append(ToolCall(id=call_id, name=name, args=args))
        elif not isinstance(block_type, str):
            raise MalformedModelResponseError(
                f"Anthropic returned a content block without a type ({block!r}). Retry the call."
            )
        else:
            logger.debug("skipping Anthropic content block of type %r", block_type)
    return Message.assistant("".join(text), tool_calls=calls)


def _block_text(text: Any) -> str:
    if not isinstance(text, str):
        raise MalformedModelResponseError(
            f"Anthropic returned a text block whose text is a {type(text).__name__}, not a "
            "string. Retry the call."
        )
    return text


def _tool_use_identity(block: Any) -> tuple[str, str]:
    name, call_id = getattr(block, "name", None), getattr(block, "id", None)
    if not (isinstance(name, str) and name and isinstance(call_id, str) and call_id):
        raise MalformedModelResponseError(
            f"Anthropic returned a tool_use block without a name or id ({block!r}). Retry the call."
        )
    return name, call_id


@dataclass
class _Block:
    kind: str
    text: str = ""
    tool_id: str = ""
    tool_name: str = ""
    input_json: str = ""
    call_index: int = -1


@dataclass
class _StreamedReply:
    """Assembles the final message from the raw Messages API stream events.

    The tool input is assembled from its `input_json_delta` fragments and decoded strictly
    at the end, so a cut-off or garbled input is reported rather than half-parsed.
    """

    blocks: dict[int, _Block] = field(default_factory=dict)
    started: bool = False
    stop_reason: str | None = None
    calls: int = 0

    def add(self, event: Any) -> list[str | ToolCallChunk]:
        """Absorb one event; return its deltas (a text delta or a tool-call piece)."""
        kind = getattr(event, "type", None)
        delta: str | ToolCallChunk = ""
        if kind == "message_start":
            self.started = True
        elif kind == "content_block_start":
            delta = self._start_block(event)
        elif kind == "content_block_delta":
            delta = self._add_delta(event)
        elif kind == "message_delta":
            message_delta = getattr(event, "delta", None)
            self.stop_reason = getattr(message_delta, "stop_reason", None) or self.stop_reason
        return [delta] if delta else []

    def _start_block(self, event: Any) -> str | ToolCallChunk:
        index = getattr(event, "index", None)
        if not isinstance(index, int):
            raise MalformedModelResponseError(
                f"Anthropic streamed a content block without an index ({event!r}). Retry the call."
            )
        block = getattr(event, "content_block", None)
        block_type = getattr(block, "type", None)
        if block_type == "tool_use":
            name, call_id = _tool_use_identity(block)
            # Pieces are numbered by the call's position among the reply's tool calls.
            self.blocks[index] = _Block(
                "tool_use", tool_id=call_id, tool_name=name, call_index=self.calls
            )
            self.calls += 1
            return ToolCallChunk(index=self.blocks[index].call_index, id=call_id, name=name)
        if block_type == "text":
            text = _block_text(getattr(block, "text", None))
            self.blocks[index] = _Block("text", text=text)
            return text
        self.blocks[index] = _Block(str(block_type))
        return ""

    def _add_delta(self, event: Any) -> str | ToolCallChunk:
        index = getattr(event, "index", None)
        block = self.blocks.get(index) if isinstance(index, int) else None
        if block is None:
            raise MalformedModelResponseError(
                "Anthropic streamed a delta for a content block it never started. Retry the call."
            )
        delta = getattr(event, "delta", None)
        delta_type = getattr(delta, "type", None)
        if delta_type == "text_delta" and block.kind == "text":
            text = _block_text(getattr(delta, "text", None))
            block.text += text
            return text
        if delta_type == "input_json_delta" and block.kind == "tool_use":
            fragment = getattr(delta, "partial_json", None)
            fragment = fragment if isinstance(fragment, str) else ""
            block.input_json += fragment
            return ToolCallChunk(index=block.call_index, args=fragment) if fragment else ""
        return ""

    def message(self) -> Message:
        """The assembled assistant message; raises if the stream was not a chat reply."""
        if not self.started:
            raise MalformedModelResponseError(
                "Anthropic's stream ended without a message_start event. Retry the call; if "
                "it persists, check that base_url points at a Messages API server."
            )
        hint = (
            " with a higher max_tokens (the reply was cut off)"
            if self.stop_reason == "max_tokens"
            else ""
        )
        text: list[str] = []
        calls: list[ToolCall] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.kind == "text":
                text.append(block.text)
            elif block.kind == "tool_use":
                args = parse_tool_arguments(
                    block.input_json, tool_name=block.tool_name, provider=_LABEL, hint=hint
                )
                calls.append(ToolCall(id=block.tool_id, name=block.tool_name, args=args))
        return Message.assistant("".join(text), tool_calls=calls)


__all__ = ["AnthropicChatModel"]
