"""`ITAssistant`: the demo's second agent (registered by `manage.py demo` as
`it_assistant`), built from tools it did not write.

Its tools come from two MCP servers declared in settings, the example servers shipped in
`demo/mcp_servers` (`demo_files` over stdio, `demo_tickets` over streamable HTTP, their
tools prefixed `files_` and `tickets_`), and from a LangChain tool. Every call that
changes something waits for a human; reads do not.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.tools import tool as langchain_tool

from beamweaver_core.agent.agent import Agent
from beamweaver_core.demo.it_planner import plan_it_reply
from beamweaver_core.demo.model import DemoChatModel
from beamweaver_core.runtime.mcp_servers import mcp_server

SYSTEM_PROMPT = """You are the IT assistant of a small online shop. You read and tidy the
files of its host, handle its support tickets and restart its services. Deleting files,
opening or closing tickets and restarting services are reviewed by a human; if a reviewer
rejects a call, do not retry it. Be brief."""

SERVICES = {"web": "the storefront", "worker": "the order workers", "db": "the database"}


@langchain_tool
def restart_service(service: Literal["web", "worker", "db"]) -> str:
    """Restart one of the shop's services (web, worker or db). Needs human approval."""
    return f"Restarted {service} ({SERVICES[service]}); it is healthy again."


class ITAssistant(Agent):
    """The demo IT assistant: MCP tools from two servers and a LangChain tool."""

    name = "ITAssistant"
    model = DemoChatModel(plan_it_reply)
    tools = [mcp_server("demo_files"), mcp_server("demo_tickets"), restart_service]
    system_prompt = SYSTEM_PROMPT
    interrupt_on = {
        "files_delete_file": True,
        "tickets_create_ticket": {"allowed_decisions": ["approve", "edit", "reject"]},
        "tickets_close_ticket": {"allowed_decisions": ["approve", "edit", "reject"]},
        "restart_service": {"allowed_decisions": ["approve", "reject"]},
    }


__all__ = ["ITAssistant", "restart_service"]
