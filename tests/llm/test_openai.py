"""OpenAIChatModel against recorded-shape Chat Completions responses, via the SDK transport."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import httpx2
import openai
import pytest

from beamweaver_core.exceptions import (
    MalformedModelResponseError,
    ModelAuthenticationError,
    ModelProviderError,
    ModelRateLimitError,
)
from beamweaver_core.llm import OpenAIChatModel, ToolCallChunk, ToolSpec
from beamweaver_core.messages import Message, ToolCall

KEY = "sk-test-0123456789abcdef"
HELLO = [Message.user("hello")]
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    """A Chat Completions response body, shaped like the real API's."""
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, "annotations": [], **message},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error_body(message: str, error_type: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


SERVER_ERROR = error_body(
    "The server had an error while processing your request. Sorry about that!",
    "server_error",
    None,
)
RATE_LIMITED = error_body(
    "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): "
    "Limit 500, Used 500, Requested 1. Please try again in 120ms.",
    "requests",
    "rate_limit_exceeded",
)


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    """One `data:` line of a Chat Completions stream."""
    body = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(body)}\n\n"


def stream_body(*chunks: str) -> str:
    return "".join(chunks) + "data: [DONE]\n\n"


def model_for(api: Any, **options: Any) -> OpenAIChatModel:
    options.setdefault("api_key", KEY)
    return OpenAIChatModel(
        "gpt-4o", http_client=api.client(), async_http_client=api.async_client(), **options
    )


# -- request mapping --------------------------------------------------------------------


def test_request_maps_messages_tools_and_options(fake_api: Any) -> None:
    api = fake_api(fake_api.json(completion({"content": "Done."})))
    conversation = [
        Message.system("You are terse."),
        Message.user("Weather in Paris and Oslo?"),
        Message.assistant(
            "Checking.",
            tool_calls=[
                ToolCall("call_1", "get_weather", {"city": "Paris"}),
                ToolCall("call_2", "get_weather", {"city": "Oslo"}),
            ],
        ),
        Message.tool({"temp_c": 21}, tool_call_id="call_1", name="get_weather"),
        Message.tool("city not found", tool_call_id="call_2", status="error"),
        Message.assistant(tool_calls=[ToolCall("call_3", "get_weather", {"city": "Bergen"})]),
        Message.tool("9C", tool_call_id="call_3"),
    ]
    model = model_for(api, temperature=0.2, max_completion_tokens=50)

    model.invoke(conversation, tools=[WEATHER])

    [request] = api.requests
    assert request.method == "POST"
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert api.bodies[0] == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    tool_call("call_1", "get_weather", '{"city": "Paris"}'),
                    tool_call("call_2", "get_weather", '{"city": "Oslo"}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
            {"role": "tool", "tool_call_id": "call_2", "content": "city not found"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [tool_call("call_3", "get_weather", '{"city": "Bergen"}')],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": "9C"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
        "temperature": 0.2,
        "max_completion_tokens": 50,
    }


def test_request_without_tools_or_temperature_omits_them(fake_api: Any) -> None:
    api = fake_api(fake_api.json(completion({"content": "hi"})))
    model_for(api).invoke(HELLO)
    assert api.bodies[0] == {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}


def test_options_the_sdk_does_not_know_still_reach_the_server(fake_api: Any) -> None:
    # vLLM sampling options are not Chat Completions parameters; the SDK would refuse them.
    api = fake_api(fake_api.json(completion({"content": "hi"})))
    model_for(api, top_k=20, repetition_penalty=1.1, extra_body={"min_p": 0.05}).invoke(HELLO)
    body = api.bodies[0]
    assert (body["top_k"], body["repetition_penalty"], body["min_p"]) == (20, 1.1, 0.05)


# -- reply parsing ----------------------------------------------------------------------


def test_parses_a_text_reply(fake_api: Any) -> None:
    api = fake_api(fake_api.json(completion({"content": "Hello! How can I help?"})))
    assert model_for(api).invoke(HELLO) == Message.assistant("Hello! How can I help?")


def test_parses_tool_calls_with_json_arguments(fake_api: Any) -> None:
    reply = completion(
        {
            "content": None,
            "tool_calls": [
                tool_call("call_abc", "get_weather", '{"city": "Paris", "units": ["c"]}'),
                tool_call("call_def", "list_files", "{}"),
            ],
        },
        finish_reason="tool_calls",
    )
    api = fake_api(fake_api.json(reply))
    assert model_for(api).invoke(HELLO, tools=[WEATHER]) == Message.assistant(
        "",
        tool_calls=[
            ToolCall("call_abc", "get_weather", {"city": "Paris", "units": ["c"]}),
            ToolCall("call_def", "list_files", {}),
        ],
    )


def test_empty_arguments_text_means_no_arguments(fake_api: Any) -> None:
    # llama.cpp and some vLLM versions send "" for tools without parameters.
    reply = completion({"content": None, "tool_calls": [tool_call("c1", "ping", "")]})
    api = fake_api(fake_api.json(reply))
    assert model_for(api).invoke(HELLO).tool_calls == (ToolCall("c1", "ping", {}),)


def test_a_tool_call_without_an_id_gets_one(fake_api: Any) -> None:
    reply = completion(
        {
            "content": None,
            "tool_calls": [{"type": "function", "function": {"name": "ping", "arguments": "{}"}}],
        }
    )
    api = fake_api(fake_api.json(reply))
    [call] = model_for(api).invoke(HELLO).tool_calls
    assert call.name == "ping"
    assert call.id.startswith("call_") and len(call.id) > len("call_")


def test_a_refusal_becomes_the_reply_text(fake_api: Any) -> None:
    reply = completion({"content": None, "refusal": "I can't help with that."})
    api = fake_api(fake_api.json(reply))
    assert model_for(api).invoke(HELLO).content == "I can't help with that."


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({**completion({"content": "x"}), "choices": []}, "without choices"),
        ({"id": "chatcmpl-1", "object": "chat.completion"}, "without choices"),
        (
            {**completion({"content": "x"}), "choices": [{"index": 0, "finish_reason": "stop"}]},
            "choice without a message",
        ),
        (completion({"content": [{"type": "text", "text": "hi"}]}), "unexpected type list"),
        (
            completion({"content": None, "tool_calls": [tool_call("c1", "rm", '{"path": "/tm')]}),
            "not valid JSON",
        ),
        (
            completion({"content": None, "tool_calls": [tool_call("c1", "rm", '["/tmp"]')]}),
            "JSON list, not an object",
        ),
        (
            completion({"content": None, "tool_calls": [tool_call("c1", "", "{}")]}),
            "without a function name",
        ),
        (
            completion(
                {"content": None, "tool_calls": [{"id": "c1", "type": "custom", "custom": {}}]}
            ),
            "unexpected type 'custom'",
        ),
    ],
)
def test_malformed_replies_raise(fake_api: Any, body: dict[str, Any], expected: str) -> None:
    api = fake_api(fake_api.json(body))
    with pytest.raises(MalformedModelResponseError, match=expected):
        model_for(api).invoke(HELLO)


def test_a_body_that_is_not_json_is_malformed(fake_api: Any) -> None:
    api = fake_api(
        httpx2.Response(
            200, text="<html>gateway</html>", headers={"content-type": "application/json"}
        )
    )
    with pytest.raises(MalformedModelResponseError, match="not a valid chat response") as info:
        model_for(api).invoke(HELLO)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


def test_bad_arguments_of_a_cut_off_reply_suggest_a_higher_limit(fake_api: Any) -> None:
    reply = completion(
        {"content": None, "tool_calls": [tool_call("c1", "write", '{"text": "lorem ip')]},
        finish_reason="length",
    )
    api = fake_api(fake_api.json(reply))
    with pytest.raises(MalformedModelResponseError, match="higher output-token limit"):
        model_for(api).invoke(HELLO)


# -- streaming --------------------------------------------------------------------------

TEXT_STREAM = stream_body(
    chunk({"role": "assistant", "content": "", "refusal": None}),
    chunk({"content": "Hel"}),
    chunk({"content": "lo, "}),
    chunk({"content": "world"}),
    chunk({}, finish_reason="stop"),
)

TOOL_STREAM = stream_body(
    chunk({"role": "assistant", "content": None, "refusal": None}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_P",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Par'}}]}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_O",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city"'},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'is"}'}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "Oslo"}'}}]}),
    chunk({}, finish_reason="tool_calls"),
)

TOOL_STREAM_REPLY = Message.assistant(
    "",
    tool_calls=[
        ToolCall("call_P", "get_weather", {"city": "Paris"}),
        ToolCall("call_O", "get_weather", {"city": "Oslo"}),
    ],
)
TOOL_STREAM_DELTAS = [
    ToolCallChunk(0, id="call_P", name="get_weather"),
    ToolCallChunk(0, args='{"ci'),
    ToolCallChunk(0, args='ty": "Par'),
    ToolCallChunk(1, id="call_O", name="get_weather", args='{"city"'),
    ToolCallChunk(0, args='is"}'),
    ToolCallChunk(1, args=': "Oslo"}'),
]


def test_stream_yields_text_deltas_then_the_message(fake_api: Any) -> None:
    api = fake_api(fake_api.sse(TEXT_STREAM))
    items = list(model_for(api).stream(HELLO))
    assert items == ["Hel", "lo, ", "world", Message.assistant("Hello, world")]
    assert api.bodies[0]["stream"] is True


def test_stream_assembles_tool_calls_split_across_chunks(fake_api: Any) -> None:
    """Each fragment of a tool call is streamed as a piece (id and name on its first one),
    and the final message assembles the calls."""
    api = fake_api(fake_api.sse(TOOL_STREAM))
    assert list(model_for(api).stream(HELLO, tools=[WEATHER])) == [
        *TOOL_STREAM_DELTAS,
        TOOL_STREAM_REPLY,
    ]
    assert api.bodies[0]["tools"][0]["function"]["name"] == "get_weather"


def test_stream_skips_the_usage_chunk(fake_api: Any) -> None:
    usage = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }
    body = chunk({"content": "Hi"}) + f"data: {json.dumps(usage)}\n\n" + "data: [DONE]\n\n"
    api = fake_api(fake_api.sse(body))
    assert list(model_for(api).stream(HELLO)) == ["Hi", Message.assistant("Hi")]


def test_stream_with_invalid_tool_arguments_is_malformed(fake_api: Any) -> None:
    body = stream_body(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "rm", "arguments": '{"path": '},
                    }
                ]
            }
        ),
        chunk({}, finish_reason="length"),
    )
    api = fake_api(fake_api.sse(body))
    with pytest.raises(MalformedModelResponseError, match=r"'rm'.*not valid JSON.*cut off"):
        list(model_for(api).stream(HELLO))


def test_an_error_in_the_middle_of_a_stream_raises_provider_error(fake_api: Any) -> None:
    body = chunk({"content": "Hel"}) + f"data: {json.dumps(SERVER_ERROR)}\n\n"
    api = fake_api(fake_api.sse(body))
    received: list[Any] = []
    with pytest.raises(ModelProviderError) as info:
        received.extend(model_for(api).stream(HELLO))
    assert received == ["Hel"]
    assert str(info.value) == (
        "OpenAI model 'gpt-4o': the provider reported an error (The server had an error "
        "while processing your request. Sorry about that!). Retry the call."
    )


def test_a_stream_without_choices_is_malformed(fake_api: Any) -> None:
    api = fake_api(fake_api.sse("data: [DONE]\n\n"))
    with pytest.raises(MalformedModelResponseError, match="stream ended without any choices"):
        list(model_for(api).stream(HELLO))


# -- async ------------------------------------------------------------------------------


async def test_ainvoke_uses_the_async_client(fake_api: Any) -> None:
    reply = completion(
        {"content": None, "tool_calls": [tool_call("c1", "get_weather", '{"city": "Rome"}')]}
    )
    api = fake_api(fake_api.json(reply))
    model = OpenAIChatModel("gpt-4o", api_key=KEY, async_http_client=api.async_client())
    assert await model.ainvoke(HELLO, tools=[WEATHER]) == Message.assistant(
        tool_calls=[ToolCall("c1", "get_weather", {"city": "Rome"})]
    )
    assert api.bodies[0]["tools"][0]["type"] == "function"


async def test_astream_yields_deltas_and_assembles_tool_calls(fake_api: Any) -> None:
    api = fake_api(fake_api.sse(TEXT_STREAM), fake_api.sse(TOOL_STREAM))
    model = model_for(api)
    assert [item async for item in model.astream(HELLO)] == [
        "Hel",
        "lo, ",
        "world",
        Message.assistant("Hello, world"),
    ]
    assert [item async for item in model.astream(HELLO)] == [
        *TOOL_STREAM_DELTAS,
        TOOL_STREAM_REPLY,
    ]


async def test_async_errors_are_mapped_too(fake_api: Any) -> None:
    api = fake_api(
        fake_api.json(
            error_body("Incorrect API key", "invalid_request_error", "invalid_api_key"), status=401
        )
    )
    with pytest.raises(ModelAuthenticationError, match="OPENAI_API_KEY"):
        await model_for(api).ainvoke(HELLO)


# -- retries and errors -----------------------------------------------------------------


def test_a_500_then_a_200_succeeds_after_one_backoff(
    fake_api: Any, retry_delays: list[float]
) -> None:
    api = fake_api(
        fake_api.json(SERVER_ERROR, status=500), fake_api.json(completion({"content": "ok"}))
    )
    assert model_for(api).invoke(HELLO).content == "ok"
    assert len(api.requests) == 2
    # The SDK's first backoff: 0.5s less up to 25% jitter.
    assert len(retry_delays) == 1
    assert 0.375 <= retry_delays[0] <= 0.5


async def test_async_500_then_200_succeeds(fake_api: Any, retry_delays: list[float]) -> None:
    api = fake_api(
        fake_api.json(SERVER_ERROR, status=503), fake_api.json(completion({"content": "ok"}))
    )
    assert (await model_for(api).ainvoke(HELLO)).content == "ok"
    assert len(api.requests) == 2
    assert len(retry_delays) == 1


def test_a_connection_error_is_retried(fake_api: Any) -> None:
    api = fake_api(
        httpx2.ConnectError("connection refused"), fake_api.json(completion({"content": "ok"}))
    )
    assert model_for(api).invoke(HELLO).content == "ok"
    assert len(api.requests) == 2


def test_persistent_429_raises_rate_limit_after_exponential_backoff(
    fake_api: Any, retry_delays: list[float]
) -> None:
    api = fake_api(*[fake_api.json(RATE_LIMITED, status=429) for _ in range(4)])
    with pytest.raises(ModelRateLimitError) as info:
        model_for(api, max_retries=3).invoke(HELLO)
    assert len(api.requests) == 4
    assert len(retry_delays) == 3
    assert retry_delays == sorted(retry_delays)
    assert retry_delays[2] >= 1.5  # 0.5 * 2**2, less at most 25% jitter
    message = str(info.value)
    assert "still rate-limited after 3 retries" in message
    assert "Rate limit reached for gpt-4o" in message
    assert isinstance(info.value.__cause__, openai.RateLimitError)


def test_persistent_5xx_raises_provider_error(fake_api: Any) -> None:
    api = fake_api(*[fake_api.json(SERVER_ERROR, status=500) for _ in range(2)])
    with pytest.raises(ModelProviderError, match=r"HTTP 500.*kept failing after 1 retry") as info:
        model_for(api, max_retries=1).invoke(HELLO)
    assert type(info.value) is ModelProviderError


def test_401_raises_authentication_error_without_retrying_or_leaking_the_key(
    fake_api: Any,
) -> None:
    # The real API echoes a masked key; a misbehaving proxy might echo it whole.
    api = fake_api(
        fake_api.json(
            error_body(
                f"Incorrect API key provided: {KEY}.", "invalid_request_error", "invalid_api_key"
            ),
            status=401,
        )
    )
    with pytest.raises(ModelAuthenticationError) as info:
        model_for(api).invoke(HELLO)
    assert len(api.requests) == 1
    message = str(info.value)
    assert "HTTP 401" in message
    assert "export OPENAI_API_KEY=" in message
    assert KEY not in message
    assert isinstance(info.value.__cause__, openai.AuthenticationError)


def test_403_raises_authentication_error(fake_api: Any) -> None:
    api = fake_api(
        fake_api.json(
            error_body(
                "Project does not have access to model gpt-4o",
                "invalid_request_error",
                "model_not_found",
            ),
            status=403,
        )
    )
    with pytest.raises(ModelAuthenticationError, match=r"HTTP 403.*access to model gpt-4o"):
        model_for(api).invoke(HELLO)


def test_400_raises_provider_error_with_the_servers_reason(fake_api: Any) -> None:
    reason = "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'."
    api = fake_api(fake_api.json(error_body(reason, "invalid_request_error", None), status=400))
    with pytest.raises(ModelProviderError) as info:
        model_for(api).invoke(HELLO)
    assert type(info.value) is ModelProviderError
    assert "HTTP 400" in str(info.value)
    assert "must be a response to a preceding message" in str(info.value)
    assert len(api.requests) == 1


def test_persistent_timeouts_raise_provider_error(fake_api: Any) -> None:
    api = fake_api(*[httpx2.ReadTimeout("timed out") for _ in range(3)])
    with pytest.raises(ModelProviderError, match=r"timed out after 2 retries.*timeout=5s"):
        model_for(api, max_retries=2, timeout=5).invoke(HELLO)
    assert len(api.requests) == 3


def test_persistent_connection_errors_raise_provider_error(fake_api: Any) -> None:
    api = fake_api(*[httpx2.ConnectError("refused") for _ in range(2)])
    with pytest.raises(ModelProviderError, match="could not connect to http://gpu-box:8000/v1"):
        model_for(api, max_retries=1, base_url="http://gpu-box:8000/v1").invoke(HELLO)


# -- keys, SDK, construction ------------------------------------------------------------


def test_creating_a_model_needs_no_key_and_no_network(fake_api: Any) -> None:
    api = fake_api()
    model = OpenAIChatModel("gpt-4o", http_client=api.client())
    assert (model.provider, model.model_name) == ("openai", "gpt-4o")
    assert api.requests == []


def test_a_missing_key_fails_the_first_call_naming_the_env_var(fake_api: Any) -> None:
    api = fake_api()
    model = OpenAIChatModel("gpt-4o", http_client=api.client())
    with pytest.raises(ModelAuthenticationError) as info:
        model.invoke(HELLO)
    assert str(info.value) == (
        "No OpenAI API key configured for model 'gpt-4o'. Set the OPENAI_API_KEY environment "
        "variable (export OPENAI_API_KEY=...) or pass api_key=... to the model."
    )
    assert api.requests == []


def test_the_key_is_read_from_the_environment(
    fake_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    api = fake_api(fake_api.json(completion({"content": "ok"})))
    OpenAIChatModel("gpt-4o", http_client=api.client()).invoke(HELLO)
    assert api.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_a_compatible_server_needs_no_key(fake_api: Any) -> None:
    api = fake_api(fake_api.json(completion({"content": "from llama"})))
    model = OpenAIChatModel(
        "llama3.1:8b", base_url="http://localhost:11434/v1", http_client=api.client()
    )
    assert model.invoke(HELLO).content == "from llama"
    assert str(api.requests[0].url) == "http://localhost:11434/v1/chat/completions"
    assert api.requests[0].headers["authorization"] == "Bearer not-needed"
    assert api.bodies[0]["model"] == "llama3.1:8b"


def test_a_missing_sdk_fails_the_first_call_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    model = OpenAIChatModel("gpt-4o", api_key=KEY)
    with pytest.raises(ModelProviderError, match=r"pip install 'beamweaver\[openai\]'"):
        model.invoke(HELLO)


def test_an_empty_model_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="model name must be a non-empty string"):
        OpenAIChatModel(" ")


def test_logs_requests_without_the_key(fake_api: Any, caplog: pytest.LogCaptureFixture) -> None:
    api = fake_api(fake_api.json(completion({"content": "ok"})))
    with caplog.at_level(logging.DEBUG, logger="beamweaver_core.llm"):
        model_for(api).invoke(HELLO, tools=[WEATHER])
    ours = [r.getMessage() for r in caplog.records if r.name == "beamweaver_core.llm"]
    assert "OpenAI request: model=gpt-4o messages=1 tools=1" in ours
    assert KEY not in caplog.text
