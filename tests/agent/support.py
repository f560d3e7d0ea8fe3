"""Tools and message builders shared by the agent tests."""

from __future__ import annotations

from typing import Any

from beamweaver_core.agent import Message, ToolCall, tool
from beamweaver_core.agent.tools import FunctionTool


def call(call_id: str, name: str, **args: Any) -> ToolCall:
    """A tool call as a model would propose it."""
    return ToolCall(call_id, name, args)


def ai(*calls: ToolCall, text: str = "") -> Message:
    """An assistant message proposing `calls`."""
    return Message.assistant(text, calls)


def result(call_id: str, name: str, content: str, status: str = "success") -> Message:
    """The tool message answering `call_id`."""
    return Message.tool(content, tool_call_id=call_id, name=name, status=status)  # type: ignore[arg-type]


def rejected(call_id: str, name: str, content: str) -> Message:
    """The tool message a reviewer's reject writes for `call_id`."""
    return Message.tool(
        content,
        tool_call_id=call_id,
        name=name,
        status="error",
        metadata={"review_decision": "reject"},
    )


def responded(call_id: str, name: str, content: str) -> Message:
    """The tool message a reviewer's respond writes for `call_id`."""
    return Message.tool(
        content, tool_call_id=call_id, name=name, metadata={"review_decision": "respond"}
    )


class Toolbox:
    """The guide's example tools; `ran` records every execution in order."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        def record(name: str, **args: Any) -> None:
            self.ran.append((name, args))

        @tool
        def remove_file(path: str) -> str:
            """Delete a file from the workspace."""
            record("remove_file", path=path)
            return f"deleted {path}"

        @tool
        def fetch_file(path: str) -> str:
            """Read a file from the workspace."""
            record("fetch_file", path=path)
            return f"contents of {path}"

        @tool
        def notify_email(to: str, subject: str = "Update") -> str:
            """Email someone about the work."""
            record("notify_email", to=to, subject=subject)
            return f"emailed {to}"

        @tool
        def execute_sql(query: str) -> str:
            """Run a SQL statement against the records database."""
            record("execute_sql", query=query)
            return f"ran: {query}"

        @tool
        def write_file(path: str, content: str) -> str:
            """Write a file."""
            record("write_file", path=path, content=content)
            return f"wrote {path}"

        @tool
        def read_data(table: str) -> str:
            """Read rows of a table."""
            record("read_data", table=table)
            return f"rows of {table}"

        @tool
        def send_email(to: str, subject: str, body: str = "") -> str:
            """Send an email."""
            record("send_email", to=to, subject=subject, body=body)
            return f"sent to {to}: {subject}"

        @tool
        def favorite_color(person: str) -> str:
            """Ask for someone's favorite color (a human answers it)."""
            record("favorite_color", person=person)
            return "unknown"

        self.remove_file: FunctionTool = remove_file
        self.fetch_file: FunctionTool = fetch_file
        self.notify_email: FunctionTool = notify_email
        self.execute_sql: FunctionTool = execute_sql
        self.write_file: FunctionTool = write_file
        self.read_data: FunctionTool = read_data
        self.send_email: FunctionTool = send_email
        self.favorite_color: FunctionTool = favorite_color

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]
