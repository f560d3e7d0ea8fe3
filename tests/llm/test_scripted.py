"""ScriptedChatModel: scripted replies, functions of the conversation, recording, streaming."""

from __future__ import annotations

import threading
import time

import pytest

from beamweaver_core.exceptions import BeamWeaverError, ScriptExhaustedError
from beamweaver_core.llm import ChatModel, ScriptedChatModel, ToolCallChunk, ToolSpec
from beamweaver_core.llm.scripted import word_chunks
from beamweaver_core.messages import Message, ToolCall

HELLO = [Message.user("hello")]


def test_replies_in_order_and_records_each_call() -> None:
    first = Message.assistant("one")
    second = Message.assistant("", tool_calls=[ToolCall("c1", "search", {"q": "x"})])
    model = ScriptedChatModel([first, second])
    conversation = [Message.system("be brief"), Message.user("go")]

    assert model.invoke(conversation) is first
    assert model.invoke([*conversation, first]) is second
    assert model.calls == [tuple(conversation), (*conversation, first)]
    assert all(isinstance(call, tuple) for call in model.calls)
    assert model.remaining == 0


def test_is_a_chat_model_named_scripted() -> None:
    model = ScriptedChatModel([])
    assert isinstance(model, ChatModel)
    assert model.provider == "scripted"
    assert repr(model) == "<ScriptedChatModel scripted:scripted>"


def test_callable_entry_reacts_to_the_conversation() -> None:
    def echo(messages: tuple[Message, ...]) -> Message:
        return Message.assistant(f"you said {messages[-1].content!r} in {len(messages)} msgs")

    model = ScriptedChatModel([echo, Message.assistant("done")])
    assert model.invoke([Message.user("a"), Message.user("delete temp.txt")]).content == (
        "you said 'delete temp.txt' in 2 msgs"
    )
    assert model.invoke(HELLO).content == "done"


def test_callable_receives_the_recorded_tuple() -> None:
    seen: list[object] = []
    model = ScriptedChatModel([lambda messages: seen.append(messages) or Message.assistant()])
    model.invoke(HELLO)
    assert seen == [tuple(HELLO)]
    assert seen[0] is model.calls[0]


def test_records_the_tools_offered_per_call() -> None:
    spec = ToolSpec("search", "Search the web", {"type": "object", "properties": {}})
    model = ScriptedChatModel([Message.assistant("a"), Message.assistant("b")])
    model.invoke(HELLO, tools=[spec])
    model.invoke(HELLO)
    assert model.tools_offered == [(spec,), ()]


def test_exhaustion_raises_with_counts() -> None:
    model = ScriptedChatModel([Message.assistant("only")])
    model.invoke(HELLO)
    with pytest.raises(ScriptExhaustedError) as info:
        model.invoke(HELLO)
    assert isinstance(info.value, BeamWeaverError)
    message = str(info.value)
    assert "1 scripted response(s)" in message
    assert "called 2 times" in message
    assert "call #2" in message
    assert len(model.calls) == 2  # the failed call is recorded too, for debugging


def test_empty_script_fails_on_first_call() -> None:
    with pytest.raises(ScriptExhaustedError, match="0 scripted response"):
        ScriptedChatModel([]).invoke(HELLO)


@pytest.mark.parametrize("entry", ["text", Message.user("not me"), 42])
def test_rejects_entries_that_are_not_assistant_messages(entry: object) -> None:
    with pytest.raises(TypeError, match="scripted response #2 must be an assistant Message"):
        ScriptedChatModel([Message.assistant("ok"), entry])  # type: ignore[list-item]


def test_rejects_a_function_that_returns_a_non_assistant_message() -> None:
    model = ScriptedChatModel([lambda messages: "plain text"])
    with pytest.raises(TypeError, match="scripted function #1 must be an assistant Message"):
        model.invoke(HELLO)


def test_stream_yields_word_chunks_then_the_message() -> None:
    reply = Message.assistant("Deleting temp.txt now,  then emailing.")
    items = list(ScriptedChatModel([reply]).stream(HELLO))
    assert items[-1] is reply
    deltas = items[:-1]
    assert deltas == ["Deleting ", "temp.txt ", "now,  ", "then ", "emailing."]
    assert "".join(deltas) == reply.content


def test_stream_of_a_tool_call_reply_streams_its_arguments_in_pieces() -> None:
    reply = Message.assistant(
        tool_calls=[ToolCall("c1", "rm", {"path": "x y"}), ToolCall("c2", "ls", {})]
    )
    assert list(ScriptedChatModel([reply]).stream(HELLO)) == [
        ToolCallChunk(0, id="c1", name="rm", args='{"path": '),
        ToolCallChunk(0, args='"x '),
        ToolCallChunk(0, args='y"}'),
        ToolCallChunk(1, id="c2", name="ls", args="{}"),
        reply,
    ]


def test_chunk_size_streams_fixed_size_pieces_and_chunk_delay_spaces_them() -> None:
    """The streaming option: `chunk_size` characters per piece, `chunk_delay` seconds
    between pieces (the demo uses it so tokens visibly arrive)."""
    reply = Message.assistant("abcdefg", tool_calls=[ToolCall("c1", "rm", {"p": 1})])
    model = ScriptedChatModel([reply, reply], chunk_size=3, chunk_delay=0.05)

    started = time.monotonic()
    items = list(model.stream(HELLO))
    elapsed = time.monotonic() - started

    assert items == [
        "abc",
        "def",
        "g",
        ToolCallChunk(0, id="c1", name="rm", args='{"p'),
        ToolCallChunk(0, args='": '),
        ToolCallChunk(0, args="1}"),
        reply,
    ]
    assert elapsed >= 5 * 0.05
    assert model.invoke(HELLO) is reply


@pytest.mark.parametrize("options", [{"chunk_size": 0}, {"chunk_size": True}, {"chunk_delay": -1}])
def test_bad_streaming_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="chunk_"):
        ScriptedChatModel([], **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "  lead", "trail  ", "a\nb\tc", "one"])
def test_word_chunks_join_back_exactly(text: str) -> None:
    chunks = word_chunks(text)
    assert "".join(chunks) == text
    assert all(chunks)


async def test_async_invoke_and_stream() -> None:
    model = ScriptedChatModel([Message.assistant("hi there"), Message.assistant("bye now")])
    assert (await model.ainvoke(HELLO)).content == "hi there"
    items = [item async for item in model.astream(HELLO, tools=[ToolSpec("t")])]
    assert items == ["bye ", "now", Message.assistant("bye now")]
    assert model.tools_offered[-1] == (ToolSpec("t"),)


def test_concurrent_calls_each_get_a_distinct_reply() -> None:
    count = 200
    model = ScriptedChatModel([Message.assistant(str(i)) for i in range(count)])
    results: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(count // 8):
            reply = model.invoke(HELLO).content
            with lock:
                results.append(reply)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results, key=int) == [str(i) for i in range(count)]
    assert len(model.calls) == count
