"""A real MCP server for the tests, written with the official SDK.

Run as `python server.py` (stdio) or `python server.py --http PORT` (streamable HTTP on
127.0.0.1). Every tool call is appended to the JSON-lines file `$MCP_TEST_CALLS` (tool,
arguments, the request's idempotency key) before the tool does anything else, so the tests
can count what the server really received. `$MCP_TEST_PAUSE` seconds of pause after
recording a `transfer` lets a test kill its caller between the call and its result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

IDEMPOTENCY_META_KEY = "beamweaver/idempotency-key"

server = MCPServer("test-tools", instructions="Tools for the BeamWeaver tests.")


def record(tool: str, args: dict[str, object], ctx: Context) -> None:
    path = os.environ.get("MCP_TEST_CALLS")
    meta = ctx.request_context.meta or {}
    if path:
        line = {
            "tool": tool,
            "args": args,
            "key": meta.get(IDEMPOTENCY_META_KEY),
            "pid": os.getpid(),
        }
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")


@server.tool()
def add(a: int, b: int, ctx: Context) -> int:
    """Add two integers."""
    record("add", {"a": a, "b": b}, ctx)
    return a + b


@server.tool()
def send_email(
    to: Annotated[str, Field(description="Recipient address", max_length=200)],
    subject: str,
    body: str,
    priority: Literal["low", "normal", "high"] = "normal",
    ctx: Context | None = None,
) -> str:
    """Send an email to someone."""
    assert ctx is not None
    record("send_email", {"to": to, "subject": subject, "body": body, "priority": priority}, ctx)
    return f"sent to {to}: {subject}"


@server.tool()
def transfer(amount: float, to_account: str, ctx: Context) -> str:
    """Move money to an account (pauses after its effect when MCP_TEST_PAUSE is set)."""
    record("transfer", {"amount": amount, "to_account": to_account}, ctx)
    time.sleep(float(os.environ.get("MCP_TEST_PAUSE") or 0))
    return f"moved {amount} to {to_account}"


@server.tool()
def refuse(reason: str, ctx: Context) -> str:
    """Always fails (a tool-level error result)."""
    record("refuse", {"reason": reason}, ctx)
    raise ToolError(f"refused: {reason}")


@server.tool()
def crash(ctx: Context) -> str:
    """Exit the server process in the middle of the call."""
    record("crash", {}, ctx)
    os._exit(3)


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Answer after `seconds`."""
    record("slow", {"seconds": seconds}, ctx)
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def lookup(
    code: Annotated[str, Field(pattern=r"^(a+)+$", description="A code of a's")], ctx: Context
) -> str:
    """Look a code up (its schema's pattern backtracks badly on a backtracking engine)."""
    record("lookup", {"code": code}, ctx)
    return f"found {code}"


@server.tool()
def pid(ctx: Context) -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def whoami(ctx: Context) -> str:
    """The Authorization header of the request (HTTP only)."""
    return (ctx.headers or {}).get("authorization", "(none)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None, help="serve streamable HTTP on this port")
    options = parser.parse_args()
    if options.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
