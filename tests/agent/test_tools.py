"""Tools: schemas from type hints, validation, errors as messages, the tool runtime."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest

from beamweaver_core.agent import Agent, Message, Tool, ToolRuntime, tool
from beamweaver_core.agent.tools import idempotency_key
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import CheckpointerRequiredError
from beamweaver_core.graph import Completed, interrupt
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import ai, call, result


class Address(TypedDict):
    street: str
    zip: NotRequired[str]


@tool
def everything(
    name: str,
    count: int,
    ratio: float,
    flag: bool,
    tags: list[str],
    scores: dict[str, int],
    mode: Literal["fast", "slow"],
    address: Address,
    pair: tuple[int, str],
    note: Annotated[str | None, "A free-form note."] = None,
    either: int | str = 1,
    anything: Any = None,
    runtime: ToolRuntime | None = None,
) -> str:
    """Exercise every supported argument type."""
    return "ok"


def test_schema_from_type_hints() -> None:
    assert everything.name == "everything"
    assert everything.description == "Exercise every supported argument type."
    assert everything.args_schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
            "mode": {"enum": ["fast", "slow"], "type": "string"},
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["street"],
            },
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
            "note": {
                "type": ["string", "null"],
                "description": "A free-form note.",
                "default": None,
            },
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 1},
            "anything": {"default": None},
        },
        "required": ["name", "count", "ratio", "flag", "tags", "scores", "mode", "address", "pair"],
        "additionalProperties": False,
    }
    assert everything.spec.parameters == everything.args_schema


def test_decorator_options_and_definition_errors() -> None:
    @tool(name="lookup", description="Find a thing.")
    def find(key: str) -> str:
        return key

    assert (find.name, find.description) == ("lookup", "Find a thing.")

    with pytest.raises(ValueError, match="has no description"):

        @tool
        def undocumented(x: int) -> int:
            return x

    with pytest.raises(TypeError, match="takes \\*args"):

        @tool
        def variadic(*args: int) -> int:
            """Sum."""
            return sum(args)

    with pytest.raises(TypeError, match="is not supported"):

        @tool
        def odd(when: complex) -> str:
            """Odd."""
            return str(when)


def run_agent(
    tools: list[Any], *calls: Any, checkpointer: MemoryCheckpointer | None = None, **kwargs: Any
) -> Completed:
    agent = Agent.build(
        model=ScriptedChatModel([ai(*calls), Message.assistant("end")]),
        tools=tools,
        checkpointer=checkpointer or MemoryCheckpointer(),
    )
    outcome = agent.invoke(
        {"messages": [Message.user("go")]},
        config={"configurable": {"thread_id": "tools"}},
        **kwargs,
    )
    assert isinstance(outcome, Completed)
    return outcome


def test_invalid_arguments_become_an_error_message_and_the_tool_does_not_run() -> None:
    ran: list[int] = []

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        ran.append(a)
        return a + b

    done = run_agent([add], call("x1", "add", a="one", c=2))

    assert ran == []
    assert done.state["messages"][2] == result(
        "x1",
        "add",
        "Error: invalid arguments for tool `add`:\n"
        "- (arguments): Additional properties are not allowed ('c' was unexpected)\n"
        "- a: 'one' is not of type 'integer'\n"
        "Fix the arguments and call the tool again.",
        status="error",
    )


def test_exceptions_become_error_messages_the_model_reads() -> None:
    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    done = run_agent([divide], call("d1", "divide", a=1, b=0), call("d2", "divide", a=6, b=3))

    assert done.state["messages"][2:4] == [
        result(
            "d1",
            "divide",
            "Error: tool `divide` raised ZeroDivisionError: division by zero",
            status="error",
        ),
        result("d2", "divide", "2.0"),
    ]


def test_unknown_tool_becomes_an_error_message() -> None:
    done = run_agent([everything], call("u1", "teleport", to="mars"))
    assert done.state["messages"][2] == result(
        "u1",
        "teleport",
        "Error: there is no tool named `teleport`. Available tools: everything.",
        status="error",
    )


def test_non_string_results_are_json() -> None:
    @tool
    def stats(n: int) -> dict[str, Any]:
        """Stats."""
        return {"n": n, "square": n * n}

    done = run_agent([stats], call("s1", "stats", n=3))
    assert done.state["messages"][2] == result("s1", "stats", '{"n": 3, "square": 9}')


def test_async_tools_and_tool_subclasses() -> None:
    @tool
    async def slow_echo(text: str) -> str:
        """Echo after a pause."""
        await asyncio.sleep(0)
        return text.upper()

    class Weather(Tool):
        name = "weather"
        description = "Today's weather in a city."
        args_schema = {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }

        def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
            return f"sunny in {args['city']}"

    class AsyncWeather(Weather):
        name = "async_weather"

        async def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:  # type: ignore[override]
            await asyncio.sleep(0)
            return f"rainy in {args['city']}"

    calls = (
        call("e1", "slow_echo", text="hi"),
        call("w1", "weather", city="Oslo"),
        call("w2", "async_weather", city="Bergen"),
    )
    expected = [
        result("e1", "slow_echo", "HI"),
        result("w1", "weather", "sunny in Oslo"),
        result("w2", "async_weather", "rainy in Bergen"),
    ]
    assert (
        run_agent([slow_echo, Weather, AsyncWeather()], *calls).state["messages"][2:5] == expected
    )

    agent = Agent.build(
        model=ScriptedChatModel([ai(*calls), Message.assistant("end")]),
        tools=[slow_echo, Weather, AsyncWeather()],
    )
    done = asyncio.run(agent.ainvoke({"messages": [Message.user("go")]}))
    assert isinstance(done, Completed)
    assert done.state["messages"][2:5] == expected


def test_tool_definition_errors_fail_at_build() -> None:
    class Nameless(Tool):
        description = "x"

    class BadSchema(Tool):
        name = "bad"
        args_schema = {"type": "objekt"}

    with pytest.raises(ValueError, match="Nameless has no name"):
        Agent.build(model=ScriptedChatModel([]), tools=[Nameless()])
    with pytest.raises(ValueError, match="args_schema of tool 'bad' is not a valid JSON Schema"):
        Agent.build(model=ScriptedChatModel([]), tools=[BadSchema()])
    with pytest.raises(ValueError, match="Two tools are named 'everything'"):
        Agent.build(model=ScriptedChatModel([]), tools=[everything, everything])
    with pytest.raises(TypeError, match="is not a tool"):
        Agent.build(model=ScriptedChatModel([]), tools=[42])  # type: ignore[list-item]


def test_plain_functions_are_tools() -> None:
    def shout(text: str) -> str:
        """Shout."""
        return text.upper() + "!"

    assert run_agent([shout], call("s1", "shout", text="hey")).state["messages"][2] == result(
        "s1", "shout", "HEY!"
    )


def test_the_tool_runtime(checkpointer: MemoryCheckpointer) -> None:
    """A `runtime` parameter receives state, config, context, the call id and an
    idempotency key derived from the thread, the call id and the canonical arguments."""
    seen: list[ToolRuntime] = []

    @tool
    def inspect_runtime(x: int, *, runtime: ToolRuntime) -> str:
        """Look at the runtime."""
        seen.append(runtime)
        return "seen"

    config = {"configurable": {"thread_id": "rt-1"}, "tags": ["t"]}
    agent = Agent.build(
        model=ScriptedChatModel([ai(call("r1", "inspect_runtime", x=1)), Message.assistant("end")]),
        tools=[inspect_runtime],
        checkpointer=checkpointer,
    )
    agent.invoke(
        {"messages": [Message.user("go")], "ticket": "T-9"}, config=config, context={"user": "ann"}
    )

    (runtime,) = seen
    assert runtime.tool_call_id == "r1"
    assert runtime.thread_id == "rt-1"
    assert runtime.context == {"user": "ann"}
    assert runtime.config["tags"] == ["t"]
    assert runtime.state["ticket"] == "T-9"
    assert runtime.state["messages"] == [Message.user("go"), ai(call("r1", "inspect_runtime", x=1))]
    assert runtime.idempotency_key == idempotency_key(
        "rt-1", "", call("r1", "inspect_runtime", x=1)
    )
    assert (
        len(
            {
                runtime.idempotency_key,
                idempotency_key("rt-2", "", call("r1", "inspect_runtime", x=1)),
                idempotency_key("rt-1", "", call("r2", "inspect_runtime", x=1)),
                idempotency_key("rt-1", "", call("r1", "inspect_runtime", x=2)),
            }
        )
        == 4
    )
    assert idempotency_key("t", "", call("a", "f", x=1, y=2)) == idempotency_key(
        "t", "", call("a", "f", y=2, x=1)
    )


def test_interrupt_in_a_tool_without_checkpointer_fails_the_run() -> None:
    """Errors about the run itself are not turned into tool messages."""

    @tool
    def ask() -> str:
        """Ask a human."""
        return str(interrupt("Proceed?"))

    agent = Agent.build(
        model=ScriptedChatModel([ai(call("a1", "ask")), Message.assistant("end")]), tools=[ask]
    )
    with pytest.raises(
        CheckpointerRequiredError, match="called interrupt\\(\\), but the graph has no checkpointer"
    ):
        agent.invoke({"messages": [Message.user("go")]})
