"""An example MCP server over streamable HTTP: the shop's support tickets, in memory.

`python tickets_server.py --port 8931` serves it on 127.0.0.1; `manage.py demo` starts it
on a free port and declares it as `BEAMWEAVER["MCP_SERVERS"]["demo_tickets"]`. Requests
must carry the bearer token given by `--token` (the demo passes one in its headers).
"""

from __future__ import annotations

import argparse
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

TICKETS: dict[str, dict[str, str]] = {
    "T-101": {"title": "Nightly export fails", "status": "open", "priority": "high"},
    "T-102": {"title": "Typo on the checkout page", "status": "open", "priority": "low"},
    "T-100": {"title": "Slow search", "status": "closed", "priority": "normal"},
}
TOKEN: str | None = None

server = MCPServer("demo-tickets", instructions="The shop's support tickets.", log_level="WARNING")


def _authorized(ctx: Context) -> None:
    sent = (ctx.headers or {}).get("authorization", "")
    if TOKEN is not None and sent != f"Bearer {TOKEN}":
        raise ToolError("Not authorized: send the demo's bearer token.")


@server.tool()
def search_tickets(query: str, ctx: Context) -> list[dict[str, str]]:
    """Find tickets whose title contains the words."""
    _authorized(ctx)
    words = query.lower().split()
    return [
        {"id": ticket_id, **ticket}
        for ticket_id, ticket in sorted(TICKETS.items())
        if all(word in ticket["title"].lower() for word in words)
    ]


@server.tool()
def create_ticket(
    title: Annotated[str, Field(description="One line saying what is wrong", max_length=120)],
    priority: Literal["low", "normal", "high"],
    ctx: Context,
) -> dict[str, str]:
    """Open a new support ticket. Needs human approval."""
    _authorized(ctx)
    ticket_id = f"T-{100 + len(TICKETS)}"
    TICKETS[ticket_id] = {"title": title, "status": "open", "priority": priority}
    return {"id": ticket_id, **TICKETS[ticket_id]}


@server.tool()
def close_ticket(
    ticket_id: Annotated[str, Field(description="Like T-101", pattern=r"^T-\d+$")],
    resolution: Literal["resolved", "duplicate", "wont_fix"],
    ctx: Context,
) -> dict[str, str]:
    """Close a support ticket with a resolution. Needs human approval."""
    _authorized(ctx)
    ticket = TICKETS.get(ticket_id)
    if ticket is None:
        raise ToolError(f"There is no ticket {ticket_id}.")
    ticket.update(status="closed", resolution=resolution)
    return {"id": ticket_id, **ticket}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8931)
    parser.add_argument("--token", default=None, help="bearer token every request must carry")
    options = parser.parse_args()
    TOKEN = options.token
    server.run("streamable-http", host="127.0.0.1", port=options.port)
