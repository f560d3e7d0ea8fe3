"""OpenAI Chat Completions models, and any OpenAI-compatible server through `base_url`."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from beamweaver_core.exceptions import MalformedModelResponseError
from beamweaver_core.llm._sdk import SDKChatModel, logger, parse_tool_arguments, with_extra_body
from beamweaver_core.llm.base import ToolCallChunk, ToolSpec
from beamweaver_core.messages import Message, ToolCall

# Local servers (vLLM, Ollama, llama.cpp) ignore the key, but the SDK refuses to run without one.
_PLACEHOLDER_API_KEY = "not-needed"
_LABEL = "OpenAI"


class OpenAIChatModel(SDKChatModel):
    """A chat model on the OpenAI Chat Completions API (official `openai` SDK).

    `base_url` points it at any OpenAI-compatible server; a key is then optional. Transient
    failures (connection errors, timeouts, 408/409/429/5xx) are retried by the SDK with
    exponential backoff and jitter, up to `max_retries` times. Extra keyword options (e.g.
    `max_completion_tokens`, `reasoning_effort`, `extra_body`) are passed to every request.
    `http_client` / `async_http_client` replace the SDK's HTTP clients (proxies, tests).
    """

    provider = "openai"
    _sdk_module = "openai"
    _label = _LABEL
    _env_var = "OPENAI_API_KEY"
    _base_error = "OpenAIError"

    def _resolve_api_key(self) -> str:
        has_key = self._api_key or os.environ.get(self._env_var)
        if not has_key and (self.base_url or os.environ.get("OPENAI_BASE_URL")):
            logger.debug("no OpenAI key for %s; using a placeholder key", self.base_url)
            return _PLACEHOLDER_API_KEY
        return super()._resolve_api_key()

    def _build_client(
        self, sdk: ModuleType, api_key: str, *, asynchronous: bool, http_client: Any
    ) -> Any:
        client_class = sdk.AsyncOpenAI if asynchronous else sdk.OpenAI
        return client_class(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client,
        )

    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_name,
            "messages": [to_openai_message(m) for m in messages],
        }
        if tools:
            request["tools"] = [to_openai_tool(t) for t in tools]
        if self.temperature is not None:
            request["temperature"] = self.temperature
        request.update(self.extra)
        logger.debug(
            "OpenAI request: model=%s messages=%d tools=%d",
            self.model_name,
            len(messages),
            len(tools),
        )
        return request

    def _create(self, request: dict[str, Any], *, asynchronous: bool) -> Any:
        """Call `chat.completions.create` (a coroutine when `asynchronous`)."""
        create = self._client(asynchronous=asynchronous).chat.completions.create
        return create(**with_extra_body(create, request))

    def _parse(self, response: Any) -> Message:
        return from_openai_completion(response)

    def _new_reply(self) -> _StreamedReply:
        return _StreamedReply()


def to_openai_message(message: Message) -> dict[str, Any]:
    """Map one of our messages to a Chat Completions message."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            # The API wants null, not "", when the turn is only tool calls.
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(dict(call.args), ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def to_openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """Map a `ToolSpec` to a Chat Completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


def from_openai_completion(completion: Any) -> Message:
    """Read the assistant `Message` out of a `ChatCompletion`, checking its shape.

    The SDK does not validate response bodies, so every field is checked here.
    """
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedModelResponseError(
            f"OpenAI returned a completion without choices (choices={choices!r}). Retry the "
            "call; if it persists, check that base_url points at a Chat Completions server."
        )
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise MalformedModelResponseError(
            "OpenAI returned a choice without a message. Retry the call; if it persists, check "
            "that base_url points at a Chat Completions server."
        )
    content = getattr(message, "content", None)
    if content is None:
        # A refused request carries its explanation here instead of in `content`.
        content = getattr(message, "refusal", None) or ""
    if not isinstance(content, str):
        raise MalformedModelResponseError(
            f"OpenAI returned message content of unexpected type {type(content).__name__} "
            "(expected text). Retry the call, or use a server that returns text content."
        )
    raw_calls = getattr(message, "tool_calls", None) or []
    if not isinstance(raw_calls, list):
        raise MalformedModelResponseError(
            f"OpenAI returned tool_calls that are not a list: {raw_calls!r}. Retry the call."
        )
    hint = _truncation_hint(getattr(choice, "finish_reason", None))
    calls = tuple(_parse_tool_call(raw, hint=hint) for raw in raw_calls)
    return Message.assistant(content, tool_calls=calls)


def _parse_tool_call(raw: Any, *, hint: str) -> ToolCall:
    call_type = getattr(raw, "type", None)
    function = getattr(raw, "function", None)
    if call_type not in ("function", None) or function is None:
        raise MalformedModelResponseError(
            f"OpenAI returned a tool call of unexpected type {call_type!r} (only function "
            "tools are offered). Retry the call."
        )
    name = getattr(function, "name", None)
    if not isinstance(name, str) or not name:
        raise MalformedModelResponseError(
            f"OpenAI returned a tool call without a function name ({raw!r}). Retry the call."
        )
    args = parse_tool_arguments(
        getattr(function, "arguments", None), tool_name=name, provider=_LABEL, hint=hint
    )
    return ToolCall(id=_call_id(getattr(raw, "id", None)), name=name, args=args)


def _call_id(raw_id: Any) -> str:
    # Some compatible servers omit ids; tool results still need one to refer to.
    return raw_id if isinstance(raw_id, str) and raw_id else f"call_{uuid.uuid4().hex}"


def _truncation_hint(finish_reason: Any) -> str:
    if finish_reason == "length":
        return " with a higher output-token limit (the reply was cut off)"
    return ""


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _StreamedReply:
    """Assembles the final message from `ChatCompletionChunk`s.

    Tool calls arrive as fragments keyed by `index`: the first carries id and name, later
    ones append to the JSON arguments text. A refusal streams in `delta.refusal` and, as in
    a complete response, is the reply's text when there is no content.
    """

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    saw_choice: bool = False

    def add(self, chunk: Any) -> list[str | ToolCallChunk]:
        """Absorb one chunk; return its deltas (text, then tool-call pieces)."""
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise MalformedModelResponseError(
                f"OpenAI streamed a chunk without a choices list ({choices!r}). Retry the call."
            )
        if not choices:  # the usage-only chunk at the end of a stream
            return []
        self.saw_choice = True
        choice = choices[0]
        self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason
        delta = getattr(choice, "delta", None)
        if delta is None:
            return []
        deltas: list[str | ToolCallChunk] = []
        text = _delta_text(getattr(delta, "content", None))
        if text:
            self.text.append(text)
            deltas.append(text)
        refusal = _delta_text(getattr(delta, "refusal", None))
        if refusal:
            self.refusal.append(refusal)
            deltas.append(refusal)
        deltas.extend(self._add_call_fragment(f) for f in getattr(delta, "tool_calls", None) or ())
        return deltas

    def _add_call_fragment(self, fragment: Any) -> ToolCallChunk:
        index = getattr(fragment, "index", None)
        if not isinstance(index, int):
            raise MalformedModelResponseError(
                f"OpenAI streamed a tool-call fragment without an index ({fragment!r}). "
                "Retry the call."
            )
        call = self.calls.setdefault(index, _PartialCall())
        first_id = not call.id
        call.id = call.id or (getattr(fragment, "id", None) or "")
        function = getattr(fragment, "function", None)
        name = getattr(function, "name", None) if function is not None else None
        arguments = (getattr(function, "arguments", None) if function is not None else None) or ""
        first_name = not call.name
        call.name = call.name or (name or "")
        call.arguments += arguments
        return ToolCallChunk(
            index=index,
            id=call.id if first_id and call.id else None,
            name=call.name if first_name and call.name else None,
            args=arguments,
        )

    def message(self) -> Message:
        """The assembled assistant message; raises if the stream was not a chat reply."""
        if not self.saw_choice:
            raise MalformedModelResponseError(
                "OpenAI's stream ended without any choices. Retry the call; if it persists, "
                "check that base_url points at a Chat Completions server."
            )
        hint = _truncation_hint(self.finish_reason)
        calls = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            if not partial.name:
                raise MalformedModelResponseError(
                    f"OpenAI streamed tool call #{index} without a function name. Retry the call."
                )
            args = parse_tool_arguments(
                partial.arguments, tool_name=partial.name, provider=_LABEL, hint=hint
            )
            calls.append(ToolCall(id=_call_id(partial.id), name=partial.name, args=args))
        text = "".join(self.text) or "".join(self.refusal)
        return Message.assistant(text, tool_calls=calls)


def _delta_text(text: Any) -> str:
    if text is None:
        return ""
    if not isinstance(text, str):
        raise MalformedModelResponseError(
            f"OpenAI streamed content of unexpected type {type(text).__name__} "
            "(expected text). Retry the call."
        )
    return text


__all__ = ["OpenAIChatModel"]
