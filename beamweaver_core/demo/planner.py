"""The offline brain of the demo: replies computed from the conversation by simple rules.

It understands requests such as

- "Refund order 1234 $250" (several refunds may be listed),
- "Delete records older than 30 days" (optionally "closed records"): a read-only search
  first, then the deletion if anything matched,
- "Email the admin about the outage" (or "email ops ..." / "email someone@example.com"),
- "Look up order 1236" and "Find records about refund",

and several of them in one message, which become parallel tool calls. Once the tools have
answered, it summarizes what happened, including reviewer rejections.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from beamweaver_core.agent.review_updates import REVIEW_DECISION_KEY
from beamweaver_core.demo.store import ADMIN_EMAIL, OPS_EMAIL
from beamweaver_core.messages import Message, ToolCall

HELP_TEXT = (
    "I can look up orders, search support records, issue refunds, delete old records and "
    'email the team. Try: "Refund order 1234 $250", "Delete records older than 30 '
    'days", or "Email the admin about the refund backlog".'
)

_REFUND = re.compile(
    r"refund\s+(?:order\s+)?#?(\d+)\D{0,20}?\$?\s?(\d+(?:\.\d{1,2})?)", re.IGNORECASE
)
_DELETE = re.compile(
    r"delete\s+(?:all\s+)?(?:(open|closed|archived)\s+)?records?\s+older\s+than\s+(\d+)\s+days?",
    re.IGNORECASE,
)
_EMAIL = re.compile(
    r"e-?mail\s+(?:the\s+)?(admin|ops(?:\s+team)?|[\w.+-]+@[\w-]+\.[\w.-]+)(?:\s+(?:about|that|saying)\s+(.+?))?(?=$|\s+and\s+(?:refund|delete|look|find|search)\b|[.!?](?:\s|$))",
    re.IGNORECASE,
)
_LOOKUP = re.compile(r"(?:look\s*up|lookup|status\s+of|check)\s+order\s+#?(\d+)", re.IGNORECASE)
_SEARCH = re.compile(
    r"(?:find|search|show)\s+(?:for\s+)?records?(?:\s+(?:about|for|mentioning)\s+([\w\s-]+?))?(?=$|[.!?,])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Intent:
    """A tool call the user asked for; `dry_run` is a read-only search to run first."""

    tool: str
    args: dict[str, Any]
    dry_run: dict[str, Any] | None = None

    def first_step(self) -> tuple[str, dict[str, Any]]:
        """The first tool call: the dry-run search if there is one, else the call itself."""
        return (
            ("search_records", self.dry_run) if self.dry_run is not None else (self.tool, self.args)
        )


def plan_reply(messages: Sequence[Message]) -> Message:
    """The assistant's next message for this conversation."""
    start = _last_user_index(messages)
    intents = parse_request(messages[start].content) if start is not None else []
    if start is None or not intents:
        return Message.assistant(HELP_TEXT)
    turn = messages[start + 1 :]
    calls = {c.id: c for m in turn if m.role == "assistant" for c in m.tool_calls}
    results = [m for m in turn if m.role == "tool"]
    prefix = f"call_{start}_{len(turn)}"
    if not calls:
        first = [
            ToolCall(f"{prefix}_{n}", *intent.first_step()) for n, intent in enumerate(intents)
        ]
        return Message.assistant(_opening(intents), first)
    called = {c.name for c in calls.values()}
    follow_up = [
        intent
        for intent in intents
        if intent.dry_run is not None
        and intent.tool not in called
        and _search_found(results, calls, intent.dry_run)
    ]
    if follow_up:
        return Message.assistant(
            "The search found matching records; deleting them needs approval.",
            [ToolCall(f"{prefix}_{n}", i.tool, i.args) for n, i in enumerate(follow_up)],
        )
    return Message.assistant(summarize(results))


READ_LIMIT = 2_000
"""Characters of a request the demo planners read. Their rules are Python regexes with
lookaheads (which RE2 lacks), some quadratic on long runs of spaces: bounded input keeps
every parse in milliseconds (a 20,000-character message took 1.5 s)."""


def parse_request(text: str) -> list[_Intent]:
    """The tool calls a request asks for, in the order they appear in its first
    `READ_LIMIT` characters."""
    text = text[:READ_LIMIT]
    found = [(m.start(), build(m)) for pattern, build in _RULES for m in pattern.finditer(text)]
    return [intent for _, intent in sorted(found, key=lambda item: item[0])]


def _refund(m: re.Match[str]) -> _Intent:
    args = {"order_id": m.group(1), "amount": float(m.group(2)), "reason": "Customer request"}
    return _Intent("issue_refund", args)


def _delete(m: re.Match[str]) -> _Intent:
    args: dict[str, Any] = {"older_than_days": int(m.group(2))}
    if m.group(1):
        args["status"] = m.group(1).lower()
    return _Intent("delete_records", args, dry_run=dict(args))


def _email(m: re.Match[str]) -> _Intent:
    who = m.group(1).lower()
    to = ADMIN_EMAIL if who == "admin" else OPS_EMAIL if who.startswith("ops") else m.group(1)
    topic = (m.group(2) or "an operations update").strip()
    body = f"Hello,\n\nA note from the operations assistant about {topic}.\n\nThanks."
    return _Intent("send_email", {"to": to, "subject": topic[:1].upper() + topic[1:], "body": body})


def _lookup(m: re.Match[str]) -> _Intent:
    return _Intent("lookup_order", {"order_id": m.group(1)})


def _search(m: re.Match[str]) -> _Intent:
    query = (m.group(1) or "").strip()
    return _Intent("search_records", {"query": query} if query else {})


_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], _Intent]], ...] = (
    (_REFUND, _refund),
    (_DELETE, _delete),
    (_EMAIL, _email),
    (_LOOKUP, _lookup),
    (_SEARCH, _search),
)


def summarize(results: Sequence[Message]) -> str:
    """One line per tool result, in the order they arrived."""
    lines = [_summary_line(m) for m in results]
    return "Here is what happened:\n" + "\n".join(f"- {line}" for line in lines)


def _summary_line(result: Message) -> str:
    if result.status == "error":
        if result.metadata.get(REVIEW_DECISION_KEY) == "reject" or "rejected" in result.content:
            return f"{result.name}: the reviewer rejected it, so I did not run it."
        return f"{result.name} failed: {result.content.removeprefix('Error: ')}"
    data = _json_tail(result.content)
    if not isinstance(data, dict):
        return f"{result.name}: {result.content}"
    if result.name == "issue_refund":
        return f"Refunded ${data['refunded']:.2f} on order {data['order_id']} ({data['customer']})."
    if result.name == "delete_records":
        return f"Deleted {data['deleted']} record(s): {', '.join(data['record_ids']) or 'none'}."
    if result.name == "send_email":
        return f'Emailed {data["to"]}: "{data["subject"]}".'
    if result.name == "lookup_order":
        return f"Order {data['order_id']} for {data['customer']}: ${data['total']:.2f}, {data['status']}, ${data['refunded']:.2f} refunded."
    if result.name == "search_records":
        ids = ", ".join(r["record_id"] for r in data["records"])
        return f"Found {data['count']} record(s){': ' + ids if ids else ''}."
    return f"{result.name}: {result.content}"


def _json_tail(content: str) -> Any:
    """The JSON result of a tool message (after the edit notice older versions wrote)."""
    _, _, tail = content.rpartition("Tool response:\n")
    try:
        return json.loads(tail)
    except ValueError:
        return None


def _search_found(
    results: Sequence[Message], calls: dict[str, ToolCall], args: dict[str, Any]
) -> bool:
    """Whether the search with `args` ran and matched at least one record."""
    for result in results:
        call = calls.get(result.tool_call_id or "")
        if call is not None and call.name == "search_records" and dict(call.args) == args:
            data = _json_tail(result.content)
            if isinstance(data, dict) and data.get("count"):
                return True
    return False


def _opening(intents: Sequence[_Intent]) -> str:
    if any(i.dry_run for i in intents):
        return "First I will check which records match before deleting anything."
    return ""


def _last_user_index(messages: Sequence[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return None


__all__ = ["HELP_TEXT", "parse_request", "plan_reply", "summarize"]
