"""MCP servers' tools in an agent, against real MCP servers (stdio and streamable HTTP).

Discovery, review (approve / edit / reject), schema validation of edits, the idempotency
key in each call's `_meta`, and failures that stay tool errors: a server that errs, exits
in the middle of a call, or does not answer in time.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from beamweaver_core.agent import Agent, Message, ToolCall
from beamweaver_core.agent.ledger import MemoryToolLedger, use_ledger
from beamweaver_core.agent.mcp_tools import MCPTool, MCPToolset
from beamweaver_core.agent.tools import idempotency_key
from beamweaver_core.agent.toolsets import expand_tools
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import InvalidDecisionError, MCPServerError
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.mcp.conftest import CallLog, free_port, http_toolset, stdio_server

ROOT = Path(__file__).resolve().parents[2]
EMAIL = {"to": "ops@example.com", "subject": "Outage", "body": "The export failed."}


def agent_for(server: MCPToolset, *calls: ToolCall, **options: Any) -> Agent:
    model = ScriptedChatModel([Message.assistant("", calls), Message.assistant("Done.")])
    return Agent.build(model=model, tools=[server], checkpointer=MemoryCheckpointer(), **options)


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def tool_results(result: Any) -> list[Message]:
    return [m for m in result.state["messages"] if m.role == "tool"]


def test_the_tools_of_both_transports_become_agent_tools(
    call_log: CallLog, http_server: Any
) -> None:
    _, url = http_server()
    stdio = stdio_server(call_log, prefix="local_")
    http = http_toolset(url, prefix="remote_", include=["send_email", "add"])

    local = {t.name: t for t in stdio.get_tools()}
    remote = {t.name: t for t in http.get_tools()}

    assert {"local_add", "local_send_email", "local_crash", "local_slow"} <= set(local)
    assert sorted(remote) == ["remote_add", "remote_send_email"]
    email = remote["remote_send_email"]
    assert isinstance(email, MCPTool) and email.remote_name == "send_email"
    assert email.description == "Send an email to someone."
    schema = email.args_schema
    assert schema["required"] == ["to", "subject", "body"]
    assert schema["properties"]["priority"]["enum"] == ["low", "normal", "high"]
    assert schema["properties"]["to"]["maxLength"] == 200
    assert local["local_send_email"].args_schema == schema
    assert email.at_most_once is True


def test_two_servers_offering_one_name_need_a_prefix(call_log: CallLog, http_server: Any) -> None:
    _, url = http_server()
    model = ScriptedChatModel([])

    with pytest.raises(ValueError, match="Two tools are named 'add'") as refused:
        Agent.build(model=model, tools=[stdio_server(call_log), http_toolset(url)])
    assert "MCP server 'local'" in str(refused.value) and "MCP server '127.0.0.1:" in str(
        refused.value
    )
    assert "prefix" in str(refused.value)

    tools = expand_tools([stdio_server(call_log, prefix="a_"), http_toolset(url, prefix="b_")])
    names = [t.name for t in tools]
    assert {"a_add", "b_add"} <= set(names) and len(names) == len(set(names))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_approved_call_runs_once_with_the_ledger_key_in_its_meta(
    call_log: CallLog, http_server: Any, transport: str
) -> None:
    server = stdio_server(call_log) if transport == "stdio" else http_toolset(http_server()[1])
    call = ToolCall("c1", "send_email", EMAIL)
    agent = agent_for(server, call, interrupt_on={"send_email": True})
    ledger = MemoryToolLedger()

    with use_ledger(ledger):
        paused = agent.invoke({"messages": [Message.user("email ops")]}, config(f"ok-{transport}"))
        assert isinstance(paused, Interrupted)
        (review,) = paused.interrupt.value["review_configs"]
        assert review["args_schema"]["properties"]["priority"]["enum"] == ["low", "normal", "high"]
        assert call_log.calls() == []
        done = agent.resume_review([{"type": "approve"}], config(f"ok-{transport}"))

    assert isinstance(done, Completed)
    key = idempotency_key(f"ok-{transport}", "", call)
    assert call_log.calls() == [
        {
            "tool": "send_email",
            "args": {**EMAIL, "priority": "normal"},
            "key": key,
            "pid": call_log.calls()[0]["pid"],
        }
    ]
    assert ledger.attempts == {key: 1}
    assert tool_results(done) == [
        Message.tool(
            '{"result": "sent to ops@example.com: Outage"}', tool_call_id="c1", name="send_email"
        )
    ]


def test_an_edited_call_runs_with_the_reviewers_arguments(call_log: CallLog) -> None:
    agent = agent_for(
        stdio_server(call_log),
        ToolCall("c1", "send_email", EMAIL),
        interrupt_on={"send_email": True},
    )
    agent.invoke({"messages": [Message.user("email ops")]}, config("edit"))
    edited = {**EMAIL, "to": "admin@example.com", "priority": "high"}

    done = agent.resume_review(
        [{"type": "edit", "edited_action": {"name": "send_email", "args": edited}}], config("edit")
    )

    assert isinstance(done, Completed)
    assert [c["args"] for c in call_log.calls()] == [edited]
    assert "sent to admin@example.com" in tool_results(done)[0].content


def test_a_rejected_call_is_never_sent(call_log: CallLog) -> None:
    agent = agent_for(
        stdio_server(call_log),
        ToolCall("c1", "send_email", EMAIL),
        interrupt_on={"send_email": True},
    )
    agent.invoke({"messages": [Message.user("email ops")]}, config("reject"))

    done = agent.resume_review([{"type": "reject", "message": "Not now."}], config("reject"))

    assert isinstance(done, Completed)
    assert call_log.calls() == []
    (result,) = tool_results(done)
    assert result.status == "error" and "Not now." in result.content


def test_an_edit_that_breaks_the_servers_input_schema_is_refused_before_any_call(
    call_log: CallLog,
) -> None:
    agent = agent_for(
        stdio_server(call_log),
        ToolCall("c1", "send_email", EMAIL),
        interrupt_on={"send_email": True},
    )
    agent.invoke({"messages": [Message.user("email ops")]}, config("bad-edit"))
    bad = {"to": "x" * 201, "subject": "Outage", "body": "b", "priority": "urgent"}

    with pytest.raises(InvalidDecisionError) as refused:
        agent.resume_review(
            [{"type": "edit", "edited_action": {"name": "send_email", "args": bad}}],
            config("bad-edit"),
        )

    assert "priority" in str(refused.value) and "'urgent' is not one of" in str(refused.value)
    assert "to" in str(refused.value) and "is too long" in str(refused.value)
    assert call_log.calls() == []
    # Nothing was consumed: the same review takes a valid answer.
    done = agent.resume_review([{"type": "approve"}], config("bad-edit"))
    assert isinstance(done, Completed) and len(call_log.calls()) == 1


def test_a_servers_schema_pattern_is_checked_in_linear_time(call_log: CallLog) -> None:
    # `^(a+)+$` against 26 a's and a `!` takes jsonschema's backtracking `re` ten seconds,
    # doubling with each `a`: 40 take days, far past the suite's per-test timeout (no time is
    # asserted). A server's schema could stall a worker, or the web process checking an edit.
    server = stdio_server(call_log, include=["lookup"])
    agent = agent_for(server, ToolCall("c1", "lookup", {"code": "a" * 40 + "!"}))
    try:
        result = agent.invoke({"messages": [Message.user("look it up")]}, config("pattern"))
    finally:
        server.close()

    assert isinstance(result, Completed)
    [refused] = tool_results(result)
    assert refused.status == "error" and "does not match '^(a+)+$'" in refused.content
    assert call_log.calls("lookup") == []


def test_a_schema_pattern_re2_cannot_run_refuses_the_tool_saying_why(call_log: CallLog) -> None:
    server = stdio_server(call_log)
    schemas = [
        {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(?!root)"}}},
        {"type": "object", "patternProperties": {"(a)\\1": {}}},
    ]
    for schema in schemas:
        remote = mcp_types.Tool.model_validate({"name": "pick", "inputSchema": schema})
        with pytest.raises(ValueError, match="not a regular expression RE2 accepts"):
            MCPTool(server, remote).check()


def test_pattern_properties_match_names_on_re2(call_log: CallLog) -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    remote = mcp_types.Tool.model_validate({"name": "tally", "inputSchema": schema})
    tool = MCPTool(stdio_server(call_log), remote)
    # Days for a backtracking `re` (see above); no time is asserted.
    problems = tool.argument_problems({"xaa": "two", "x" + "a" * 40 + "!": 1})
    assert problems == [
        ("", f"'x{'a' * 40}!' does not match any of the regexes: '^x(a+)+$'"),
        ("xaa", "'two' is not of type 'integer'"),
    ]
    assert tool.argument_problems({"xa": 1, "xaaa": 2}) == []


def test_a_schema_reference_to_a_url_is_never_fetched(call_log: CallLog) -> None:
    # jsonschema fetches a `$ref` it cannot resolve inside the schema from its URL: a
    # server's schema could make this process request an address inside the network.
    requested: list[str] = []

    class Schemas(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"type": "string"}')

        def log_message(self, *args: Any) -> None:
            pass

    inside = ThreadingHTTPServer(("127.0.0.1", 0), Schemas)
    threading.Thread(target=inside.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{inside.server_port}/internal.json"
    schema = {"type": "object", "properties": {"code": {"$ref": url}}}
    remote = mcp_types.Tool.model_validate({"name": "pick", "inputSchema": schema})
    try:
        problems = MCPTool(stdio_server(call_log), remote).argument_problems({"code": "x"})
    finally:
        inside.shutdown()

    assert requested == []
    assert problems == [
        (
            "",
            f"the schema's reference {url!r} cannot be checked: only references inside the "
            "schema are followed",
        )
    ]


def test_an_error_result_and_structured_content_become_tool_messages(call_log: CallLog) -> None:
    agent = agent_for(
        stdio_server(call_log),
        ToolCall("c1", "refuse", {"reason": "closed"}),
        ToolCall("c2", "add", {"a": 2, "b": 40}),
    )

    done = agent.invoke({"messages": [Message.user("go")]}, config("results"))

    refused, added = tool_results(done)
    assert refused.status == "error" and refused.content.startswith("Error: tool `refuse` reported")
    assert "closed" in refused.content
    assert (added.status, added.content) == ("success", '{"result": 42}')


def test_a_server_that_exits_mid_call_is_a_tool_error_and_an_event_and_is_restarted(
    call_log: CallLog,
) -> None:
    server = stdio_server(call_log)
    agent = agent_for(server, ToolCall("c1", "crash", {}))

    done = agent.stream_events({"messages": [Message.user("go")]}, config=config("crash"))

    assert isinstance(done, Completed)
    (result,) = tool_results(done)
    assert result.status == "error"
    assert "connection to MCP server 'local' was lost" in result.content
    assert "Whether it took effect is unknown" in result.content
    (event,) = [e for e in done.events if e.event == "mcp.error"]
    assert event.data["error"] == "MCPConnectionError" and event.data["tool"] == "crash"
    assert done.state["messages"][-1] == Message.assistant("Done.")
    # The next call starts the server again.
    first_pid = call_log.calls("crash")[0]["pid"]
    assert server.session.call_tool("pid", {}).structured_content["result"] != first_pid


def test_a_server_that_does_not_answer_in_time_is_a_tool_error_within_the_timeout(
    call_log: CallLog, http_server: Any
) -> None:
    _, url = http_server()
    server = http_toolset(url, timeout=2)
    server.connect()
    agent = agent_for(server, ToolCall("c1", "slow", {"seconds": 60}))

    started = time.monotonic()
    done = agent.stream_events({"messages": [Message.user("go")]}, config=config("slow"))
    elapsed = time.monotonic() - started

    assert isinstance(done, Completed)
    assert elapsed < 30
    (result,) = tool_results(done)
    assert result.status == "error" and "did not answer while calling tool 'slow'" in result.content
    assert [e.data["error"] for e in done.events if e.event == "mcp.error"] == ["MCPTimeoutError"]
    # The session was closed; the next call opens a new one and works.
    assert server.session.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_an_unreachable_server_fails_the_build_with_a_clear_error(call_log: CallLog) -> None:
    server = http_toolset(f"http://127.0.0.1:{free_port()}/mcp", connect_timeout=10)

    with pytest.raises(MCPServerError, match=r"Cannot build the tools of MCP server '127\.0\.0\.1"):
        Agent.build(model=ScriptedChatModel([]), tools=[server])


def test_http_headers_travel_with_every_request(http_server: Any) -> None:
    _, url = http_server()
    server = http_toolset(url, headers={"Authorization": "Bearer s3cret-token"})

    result = server.session.call_tool("whoami", {})

    assert result.structured_content == {"result": "Bearer s3cret-token"}


def test_the_agent_layer_imports_the_optional_sdks_only_when_used_and_never_django() -> None:
    code = (
        "import sys\n"
        "from beamweaver_core.agent import Agent, tool\n"
        "from beamweaver_core.llm import ScriptedChatModel\n"
        "@tool\n"
        "def ping() -> str:\n"
        "    '''Ping.'''\n"
        "    return 'pong'\n"
        "Agent.build(model=ScriptedChatModel([]), tools=[ping])\n"
        "assert 'mcp' not in sys.modules and 'langchain_core' not in sys.modules\n"
        "from beamweaver_core.agent import LangChainTool, MCPServerHTTP, MCPServerStdio\n"
        "assert 'mcp' in sys.modules and 'langchain_core' in sys.modules\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django'], 'django imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_a_tool_name_model_providers_refuse_refuses_the_tool_saying_why(
    call_log: CallLog,
) -> None:
    # The server's names are untrusted: one with a space, or past 64 characters, would
    # have every model call of the agent refused by the provider.
    server = stdio_server(call_log)
    schema = {"type": "object", "properties": {}}
    for name in ["send email", "x" * 65, "drop\u00e9"]:
        remote = mcp_types.Tool.model_validate({"name": name, "inputSchema": schema})
        with pytest.raises(ValueError, match="model providers take only 1 to 64") as refused:
            MCPTool(server, remote).check()
        assert "include=" in str(refused.value)
    fine = mcp_types.Tool.model_validate({"name": "x" * 64, "inputSchema": schema})
    MCPTool(server, fine).check()
