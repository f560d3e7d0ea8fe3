"""AnthropicChatModel against recorded-shape Messages API responses, via the SDK transport."""

from __future__ import annotations

import json
import sys
from typing import Any

import anthropic
import httpx2
import pytest

from beamweaver_core.exceptions import (
    MalformedModelResponseError,
    ModelAuthenticationError,
    ModelProviderError,
    ModelRateLimitError,
)
from beamweaver_core.llm import AnthropicChatModel, ToolCallChunk, ToolSpec
from beamweaver_core.messages import Message, ToolCall

KEY = "sk-ant-api03-test-0123456789"
MODEL = "claude-haiku-4-5"
HELLO = [Message.user("hello")]
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
USAGE = {
    "input_tokens": 25,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 1,
    "service_tier": "standard",
}


def reply_body(content: Any, stop_reason: str = "end_turn") -> dict[str, Any]:
    """A Messages API response body, shaped like the real API's."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {**USAGE, "output_tokens": 17},
    }


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }


def event(name: str, data: dict[str, Any]) -> str:
    """One server-sent event of a Messages API stream."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


MESSAGE_START = event(
    "message_start",
    {
        "type": "message_start",
        "message": {**reply_body([]), "stop_reason": None, "usage": USAGE},
    },
)
PING = event("ping", {"type": "ping"})
MESSAGE_STOP = event("message_stop", {"type": "message_stop"})


def block_start(index: int, block: dict[str, Any]) -> str:
    return event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def delta(index: int, body: dict[str, Any]) -> str:
    return event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": body}
    )


def text_delta(index: int, text: str) -> str:
    return delta(index, {"type": "text_delta", "text": text})


def json_delta(index: int, partial: str) -> str:
    return delta(index, {"type": "input_json_delta", "partial_json": partial})


def block_stop(index: int) -> str:
    return event("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str) -> str:
    return event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 89},
        },
    )


TOOL_STREAM = "".join(
    [
        MESSAGE_START,
        block_start(0, {"type": "text", "text": ""}),
        PING,
        text_delta(0, "Let me "),
        text_delta(0, "check."),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}),
        json_delta(1, ""),
        json_delta(1, '{"city": "Pa'),
        json_delta(1, 'ris", "days": [1'),
        json_delta(1, ", 2]}"),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_02", "name": "list_files", "input": {}}),
        block_stop(2),
        message_delta("tool_use"),
        MESSAGE_STOP,
    ]
)
TOOL_STREAM_REPLY = Message.assistant(
    "Let me check.",
    tool_calls=[
        ToolCall("toolu_01", "get_weather", {"city": "Paris", "days": [1, 2]}),
        ToolCall("toolu_02", "list_files", {}),
    ],
)
TOOL_STREAM_DELTAS = [
    "Let me ",
    "check.",
    ToolCallChunk(0, id="toolu_01", name="get_weather"),
    ToolCallChunk(0, args='{"city": "Pa'),
    ToolCallChunk(0, args='ris", "days": [1'),
    ToolCallChunk(0, args=", 2]}"),
    ToolCallChunk(1, id="toolu_02", name="list_files"),
]


def sent_key(request: httpx2.Request) -> str:
    """The key a request carried: SDK versions send it as x-api-key or as a bearer token."""
    return request.headers.get("x-api-key") or request.headers["authorization"].removeprefix(
        "Bearer "
    )


def model_for(api: Any, **options: Any) -> AnthropicChatModel:
    options.setdefault("api_key", KEY)
    return AnthropicChatModel(
        MODEL, http_client=api.client(), async_http_client=api.async_client(), **options
    )


# -- request mapping --------------------------------------------------------------------


def test_request_maps_messages_tools_and_options(fake_api: Any) -> None:
    api = fake_api(fake_api.json(reply_body([{"type": "text", "text": "Done."}])))
    conversation = [
        Message.system("You are terse."),
        Message.user("Weather in Paris and Oslo?"),
        Message.assistant(
            "Checking.",
            tool_calls=[
                ToolCall("toolu_1", "get_weather", {"city": "Paris"}),
                ToolCall("toolu_2", "get_weather", {"city": "Oslo"}),
            ],
        ),
        Message.tool({"temp_c": 21}, tool_call_id="toolu_1", name="get_weather"),
        Message.tool("city not found", tool_call_id="toolu_2", status="error"),
        Message.assistant(tool_calls=[ToolCall("toolu_3", "get_weather", {"city": "Bergen"})]),
        Message.tool("9C", tool_call_id="toolu_3"),
        Message.system("Answer in French."),
        Message.user("Merci."),
    ]
    model = model_for(api, max_tokens=1000, temperature=0.5, top_p=0.9)

    model.invoke(conversation, tools=[WEATHER])

    [request] = api.requests
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert sent_key(request) == KEY
    assert request.headers["anthropic-version"]
    assert api.bodies[0] == {
        "model": MODEL,
        "max_tokens": 1000,
        "system": "You are terse.\n\nAnswer in French.",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"temp_c": 21}'},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "city not found",
                        "is_error": True,
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_3",
                        "name": "get_weather",
                        "input": {"city": "Bergen"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "9C"}],
            },
            {"role": "user", "content": "Merci."},
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            }
        ],
        "temperature": 0.5,
        "top_p": 0.9,
    }


def test_request_without_system_tools_or_temperature_omits_them(fake_api: Any) -> None:
    api = fake_api(fake_api.json(reply_body([{"type": "text", "text": "hi"}])))
    model_for(api).invoke([Message.user("a"), Message.assistant(""), Message.user("b")])
    # The empty assistant turn is dropped: the API rejects empty content.
    assert api.bodies[0] == {
        "model": MODEL,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    }


# -- reply parsing ----------------------------------------------------------------------


def test_parses_text_and_tool_use_blocks(fake_api: Any) -> None:
    body = reply_body(
        [
            {"type": "thinking", "thinking": "The user wants weather.", "signature": "EqQB"},
            {"type": "text", "text": "I'll check "},
            {"type": "text", "text": "both."},
            {
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
            {"type": "tool_use", "id": "toolu_01B", "name": "list_files", "input": {}},
        ],
        stop_reason="tool_use",
    )
    api = fake_api(fake_api.json(body))
    assert model_for(api).invoke(HELLO, tools=[WEATHER]) == Message.assistant(
        "I'll check both.",
        tool_calls=[
            ToolCall("toolu_01A", "get_weather", {"city": "Paris"}),
            ToolCall("toolu_01B", "list_files", {}),
        ],
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "content is not a list of blocks"),
        ("Hello", "content is not a list of blocks"),
        ([{"text": "no type"}], "content block without a type"),
        ([{"type": "text", "text": 7}], "text is a int, not a string"),
        (
            [{"type": "tool_use", "id": "toolu_1", "name": "rm", "input": ["/tmp"]}],
            "'rm' that are a JSON list, not an object",
        ),
        ([{"type": "tool_use", "id": "toolu_1", "input": {}}], "without a name or id"),
    ],
)
def test_malformed_replies_raise(fake_api: Any, content: Any, expected: str) -> None:
    api = fake_api(fake_api.json(reply_body(content)))
    with pytest.raises(MalformedModelResponseError, match=expected):
        model_for(api).invoke(HELLO)


def test_a_body_that_is_not_json_is_malformed(fake_api: Any) -> None:
    api = fake_api(
        httpx2.Response(200, text="upstream hiccup", headers={"content-type": "application/json"})
    )
    with pytest.raises(MalformedModelResponseError, match="not a valid chat response"):
        model_for(api).invoke(HELLO)


# -- streaming --------------------------------------------------------------------------


def test_stream_yields_text_deltas_then_the_message(fake_api: Any) -> None:
    body = "".join(
        [
            MESSAGE_START,
            block_start(0, {"type": "text", "text": ""}),
            PING,
            text_delta(0, "Hello"),
            text_delta(0, ", world"),
            block_stop(0),
            message_delta("end_turn"),
            MESSAGE_STOP,
        ]
    )
    api = fake_api(fake_api.sse(body))
    items = list(model_for(api).stream(HELLO))
    assert items == ["Hello", ", world", Message.assistant("Hello, world")]
    assert api.bodies[0]["stream"] is True


def test_stream_assembles_tool_use_input_from_json_deltas(fake_api: Any) -> None:
    """Tool calls stream as pieces numbered by their position among the calls (not the
    content block index), and the pieces of a call join to its arguments."""
    api = fake_api(fake_api.sse(TOOL_STREAM))
    assert list(model_for(api).stream(HELLO, tools=[WEATHER])) == [
        *TOOL_STREAM_DELTAS,
        TOOL_STREAM_REPLY,
    ]


def test_stream_skips_thinking_blocks(fake_api: Any) -> None:
    body = "".join(
        [
            MESSAGE_START,
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "Let me think"}),
            delta(0, {"type": "signature_delta", "signature": "EqQB"}),
            block_stop(0),
            block_start(1, {"type": "text", "text": ""}),
            text_delta(1, "42"),
            block_stop(1),
            message_delta("end_turn"),
            MESSAGE_STOP,
        ]
    )
    api = fake_api(fake_api.sse(body))
    assert list(model_for(api).stream(HELLO)) == ["42", Message.assistant("42")]


def test_stream_with_cut_off_tool_input_is_malformed(fake_api: Any) -> None:
    body = "".join(
        [
            MESSAGE_START,
            block_start(0, {"type": "tool_use", "id": "toolu_01", "name": "write", "input": {}}),
            json_delta(0, '{"text": "lorem ip'),
            block_stop(0),
            message_delta("max_tokens"),
            MESSAGE_STOP,
        ]
    )
    api = fake_api(fake_api.sse(body))
    with pytest.raises(MalformedModelResponseError, match=r"'write'.*not valid JSON.*max_tokens"):
        list(model_for(api).stream(HELLO))


def test_stream_error_event_raises_provider_error(fake_api: Any) -> None:
    body = "".join(
        [
            MESSAGE_START,
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Hel"),
            event("error", error_body("overloaded_error", "Overloaded")),
        ]
    )
    api = fake_api(fake_api.sse(body))
    received: list[Any] = []
    with pytest.raises(ModelProviderError) as info:
        received.extend(model_for(api).stream(HELLO))
    assert received == ["Hel"]
    assert str(info.value) == (
        "Anthropic model 'claude-haiku-4-5': the provider failed in the middle of the reply "
        "(Overloaded). Retry the call."
    )


def test_a_stream_without_message_start_is_malformed(fake_api: Any) -> None:
    api = fake_api(fake_api.sse(MESSAGE_STOP))
    with pytest.raises(MalformedModelResponseError, match="without a message_start"):
        list(model_for(api).stream(HELLO))


def test_a_delta_for_an_unstarted_block_is_malformed(fake_api: Any) -> None:
    api = fake_api(fake_api.sse(MESSAGE_START + text_delta(3, "x") + MESSAGE_STOP))
    with pytest.raises(MalformedModelResponseError, match="never started"):
        list(model_for(api).stream(HELLO))


# -- async ------------------------------------------------------------------------------


async def test_ainvoke_uses_the_async_client(fake_api: Any) -> None:
    body = reply_body(
        [{"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Rome"}}]
    )
    api = fake_api(fake_api.json(body))
    model = AnthropicChatModel(MODEL, api_key=KEY, async_http_client=api.async_client())
    assert await model.ainvoke([Message.system("s"), *HELLO]) == Message.assistant(
        tool_calls=[ToolCall("toolu_9", "get_weather", {"city": "Rome"})]
    )
    assert api.bodies[0]["system"] == "s"


async def test_astream_yields_deltas_and_assembles_tool_calls(fake_api: Any) -> None:
    api = fake_api(fake_api.sse(TOOL_STREAM))
    items = [item async for item in model_for(api).astream(HELLO)]
    assert items == [*TOOL_STREAM_DELTAS, TOOL_STREAM_REPLY]


async def test_async_500_then_200_succeeds(fake_api: Any, retry_delays: list[float]) -> None:
    api = fake_api(
        fake_api.json(error_body("api_error", "Internal server error"), status=500),
        fake_api.json(reply_body([{"type": "text", "text": "ok"}])),
    )
    assert (await model_for(api).ainvoke(HELLO)).content == "ok"
    assert len(api.requests) == 2
    assert len(retry_delays) == 1


# -- retries and errors -----------------------------------------------------------------


def test_a_500_then_a_200_succeeds_after_one_backoff(
    fake_api: Any, retry_delays: list[float]
) -> None:
    api = fake_api(
        fake_api.json(error_body("api_error", "Internal server error"), status=500),
        fake_api.json(reply_body([{"type": "text", "text": "ok"}])),
    )
    assert model_for(api).invoke(HELLO).content == "ok"
    assert len(api.requests) == 2
    assert len(retry_delays) == 1
    assert 0.375 <= retry_delays[0] <= 0.5


def test_overloaded_529_is_retried(fake_api: Any) -> None:
    api = fake_api(
        fake_api.json(error_body("overloaded_error", "Overloaded"), status=529),
        fake_api.json(reply_body([{"type": "text", "text": "ok"}])),
    )
    assert model_for(api).invoke(HELLO).content == "ok"
    assert len(api.requests) == 2


def test_persistent_429_raises_rate_limit_after_exponential_backoff(
    fake_api: Any, retry_delays: list[float]
) -> None:
    limited = error_body(
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute.",
    )
    api = fake_api(*[fake_api.json(limited, status=429) for _ in range(3)])
    with pytest.raises(ModelRateLimitError) as info:
        model_for(api, max_retries=2).invoke(HELLO)
    assert len(api.requests) == 3
    assert len(retry_delays) == 2
    assert retry_delays[1] > retry_delays[0]
    assert "still rate-limited after 2 retries" in str(info.value)
    assert "50 requests per minute" in str(info.value)
    assert isinstance(info.value.__cause__, anthropic.RateLimitError)


def test_401_raises_authentication_error_without_leaking_the_key(fake_api: Any) -> None:
    api = fake_api(
        fake_api.json(error_body("authentication_error", f"invalid x-api-key {KEY}"), status=401)
    )
    with pytest.raises(ModelAuthenticationError) as info:
        model_for(api).invoke(HELLO)
    assert len(api.requests) == 1
    message = str(info.value)
    assert "HTTP 401" in message
    assert "export ANTHROPIC_API_KEY=" in message
    assert KEY not in message
    assert isinstance(info.value.__cause__, anthropic.AuthenticationError)


def test_404_raises_provider_error(fake_api: Any) -> None:
    api = fake_api(fake_api.json(error_body("not_found_error", "model: claude-nope"), status=404))
    with pytest.raises(ModelProviderError, match=r"HTTP 404.*claude-nope.*Check the model name"):
        model_for(api).invoke(HELLO)


# -- keys, SDK, construction ------------------------------------------------------------


def test_creating_a_model_needs_no_key_and_no_network(fake_api: Any) -> None:
    api = fake_api()
    model = AnthropicChatModel(MODEL, http_client=api.client())
    assert (model.provider, model.model_name, model.max_tokens) == ("anthropic", MODEL, 4096)
    assert api.requests == []


def test_a_missing_key_fails_the_first_call_naming_the_env_var(fake_api: Any) -> None:
    api = fake_api()
    model = AnthropicChatModel(MODEL, http_client=api.client())
    with pytest.raises(ModelAuthenticationError, match=r"export ANTHROPIC_API_KEY=\.\.\."):
        model.invoke(HELLO)
    assert api.requests == []


def test_the_key_is_read_from_the_environment(
    fake_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    api = fake_api(fake_api.json(reply_body([{"type": "text", "text": "ok"}])))
    AnthropicChatModel(MODEL, http_client=api.client()).invoke(HELLO)
    assert sent_key(api.requests[0]) == "sk-ant-from-env"


def test_base_url_points_at_another_server(fake_api: Any) -> None:
    api = fake_api(fake_api.json(reply_body([{"type": "text", "text": "ok"}])))
    model_for(api, base_url="http://proxy.internal:4000").invoke(HELLO)
    assert str(api.requests[0].url) == "http://proxy.internal:4000/v1/messages"


def test_a_missing_sdk_fails_the_first_call_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    model = AnthropicChatModel(MODEL, api_key=KEY)
    with pytest.raises(ModelProviderError, match=r"pip install 'beamweaver\[anthropic\]'"):
        model.invoke(HELLO)
