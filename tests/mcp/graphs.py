"""Agents on MCP servers declared in settings (`BEAMWEAVER["MCP_SERVERS"]`), registered
for the runtime tests and their worker processes."""

from __future__ import annotations

from collections.abc import Sequence

from beamweaver_core.agent import Agent, Message, ToolCall
from beamweaver_core.llm import ScriptedChatModel
from beamweaver_core.runtime.mcp_servers import mcp_server

MCP_GRAPHS = {
    "mcp_mail": "tests.mcp.graphs:MailAgent",
    "mcp_transfer": "tests.mcp.graphs:TransferAgent",
}


def _once(call: ToolCall) -> ScriptedChatModel:
    """A model that proposes `call`, then says it is done (for every run)."""

    def reply(messages: Sequence[Message]) -> Message:
        if any(m.role == "tool" for m in messages):
            return Message.assistant("Done.")
        return Message.assistant("", [call])

    return ScriptedChatModel([reply] * 1000)


class MailAgent(Agent):
    """Sends one email through the `mail` server's `send_email`, reviewed."""

    name = "MailAgent"
    model = _once(
        ToolCall(
            "call_mail_1",
            "mail_send_email",
            {"to": "ops@example.com", "subject": "Outage", "body": "The export failed."},
        )
    )
    tools = [mcp_server("mail")]
    interrupt_on = {"mail_send_email": {"allowed_decisions": ["approve", "edit", "reject"]}}


class TransferAgent(Agent):
    """Moves money through the `bank` server's `transfer` (at most once), unreviewed."""

    name = "TransferAgent"
    model = _once(
        ToolCall("call_transfer_1", "bank_transfer", {"amount": 250.0, "to_account": "DE-7"})
    )
    tools = [mcp_server("bank")]
