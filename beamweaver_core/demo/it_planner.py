"""The offline brain of the demo IT assistant: replies computed from the conversation.

It understands "delete /logs/debug-old.log", "read /logs/export.log", "list files in
/logs", "close ticket T-101 as resolved", "open a high priority ticket about ...",
"find tickets about ..." and "restart the web service", several in one message (they
become parallel tool calls), and summarizes the tool results once they are in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from beamweaver_core.agent.review_updates import REVIEW_DECISION_KEY
from beamweaver_core.demo.planner import READ_LIMIT
from beamweaver_core.messages import Message, ToolCall

HELP_TEXT = (
    "I look after the shop's host, tickets and services. Try: \"Delete /logs/debug-old.log, "
    'close ticket T-101 as resolved and restart the web service".'
)

_PATH = r"(/[\w./-]*\w)"
_RULES: tuple[
    tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, dict[str, Any]]]], ...
] = (
    (
        re.compile(rf"\bdelete\s+(?:the\s+file\s+)?{_PATH}", re.I),
        lambda m: ("files_delete_file", {"path": m[1]}),
    ),
    (
        re.compile(rf"\b(?:read|show)\s+(?:the\s+file\s+)?{_PATH}", re.I),
        lambda m: ("files_read_file", {"path": m[1]}),
    ),
    (
        re.compile(rf"\blist\s+(?:the\s+)?files(?:\s+in\s+{_PATH})?", re.I),
        lambda m: ("files_list_files", {"directory": m[1] or "/"}),
    ),
    (
        re.compile(r"\bclose\s+ticket\s+(T-\d+)(?:\s+as\s+(resolved|duplicate|wont_fix))?", re.I),
        lambda m: (
            "tickets_close_ticket",
            {"ticket_id": m[1].upper(), "resolution": (m[2] or "resolved").lower()},
        ),
    ),
    (
        re.compile(
            r"\bopen\s+an?\s+(?:(low|normal|high)\s+priority\s+)?ticket\s+about\s+([^,.!?]+?)(?=\s+and\s+|[,.!?]|$)",
            re.I,
        ),
        lambda m: (
            "tickets_create_ticket",
            {"title": m[2].strip().capitalize(), "priority": (m[1] or "normal").lower()},
        ),
    ),
    (
        re.compile(r"\bfind\s+tickets\s+about\s+([^,.!?]+?)(?=\s+and\s+|[,.!?]|$)", re.I),
        lambda m: ("tickets_search_tickets", {"query": m[1].strip()}),
    ),
    (
        re.compile(r"\brestart\s+the\s+(web|worker|db)\s+service", re.I),
        lambda m: ("restart_service", {"service": m[1].lower()}),
    ),
)


def plan_it_reply(messages: Sequence[Message]) -> Message:
    """The assistant's next message for this conversation."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if start is None:
        return Message.assistant(HELP_TEXT)
    turn = messages[start + 1 :]
    results = [m for m in turn if m.role == "tool"]
    if results:
        lines = [_summary(m) for m in results]
        return Message.assistant("Here is what happened:\n" + "\n".join(f"- {x}" for x in lines))
    calls = [
        ToolCall(f"call_{start}_{n}", name, args)
        for n, (name, args) in enumerate(parse_it_request(messages[start].content))
    ]
    if not calls:
        return Message.assistant(HELP_TEXT)
    return Message.assistant("On it; the changes wait for a reviewer.", calls)


def parse_it_request(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a request asks for, in the order they appear in its first
    `READ_LIMIT` characters (see `planner.READ_LIMIT`)."""
    text = text[:READ_LIMIT]
    found = [(m.start(), build(m)) for pattern, build in _RULES for m in pattern.finditer(text)]
    return [call for _, call in sorted(found, key=lambda item: item[0])]


def _summary(result: Message) -> str:
    if result.status == "error":
        # A reject's text is the reviewer's as written; the metadata says it was one.
        if result.metadata.get(REVIEW_DECISION_KEY) == "reject" or "rejected" in result.content:
            return f"{result.name}: the reviewer rejected it, so it did not run."
        return f"{result.name} failed: {result.content.removeprefix('Error: ')}"
    try:
        data = json.loads(result.content)
    except ValueError:
        data = result.content
    if isinstance(data, dict) and set(data) == {"result"}:  # an MCP tool's structured result
        data = data["result"]
    return f"{result.name}: {data if isinstance(data, str) else json.dumps(data)}"


__all__ = ["HELP_TEXT", "parse_it_request", "plan_it_reply"]
