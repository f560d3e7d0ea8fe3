"""What a review item asks, in one line: the inbox row's text, so a reviewer can triage
without opening every item.

Written onto the item when it is created or its payload changes (`reviews.receivers`),
never at read time: the inbox renders its rows on every page and every live push. The
line is built from the redacted payload (`beamweaver_core.redaction`, the pages' policy),
is at most `MAX_CHARS` characters, and is plain text (the templates escape it and mark
its invisible characters).

- A tool review: per action, the first line of its description, or, when the
  description is the review middleware's generated one (which only repeats the tool
  and its arguments), `name(key=value, ...)` with short values; actions joined by `; `.
- A question: the question's text (a string value, or the first string under
  `question`, `message`, `prompt`, `text`, `description`, `title`), else its keys.
- A breakpoint: empty (the row says "before node" already).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from beamweaver_core.agent.hitl import DEFAULT_DESCRIPTION_PREFIX
from beamweaver_core.redaction import redact

MAX_CHARS = 200
"""The longest summary (the column's size)."""
MAX_ARGS = 4
"""Arguments shown in an argument summary; more are written as `…`."""
MAX_VALUE_CHARS = 40
"""The longest argument value shown in an argument summary."""
QUESTION_KEYS = ("question", "message", "prompt", "text", "description", "title")

_SPACE = re.compile(r"\s+")


def summarize(kind: str, value: Any) -> str:
    """The one-line summary of an item of `kind` ("tool_review", "interrupt",
    "breakpoint") whose interrupt value is `value` (plain JSON data)."""
    value = redact(value)
    if kind == "tool_review":
        text = "; ".join(_action(a) for a in _actions(value))
    elif kind == "interrupt":
        text = _question(value)
    else:
        text = ""
    return shorten(text)


def shorten(text: str, limit: int = MAX_CHARS) -> str:
    """`text` on one line (white space runs become one space), cut to `limit`."""
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _actions(value: Any) -> list[Mapping[str, Any]]:
    actions = value.get("action_requests") if isinstance(value, Mapping) else None
    return [a for a in actions if isinstance(a, Mapping)] if isinstance(actions, list) else []


def _action(action: Mapping[str, Any]) -> str:
    name = str(action.get("name", ""))
    description = action.get("description")
    if isinstance(description, str) and not _generated(name, description):
        line = next((part for part in description.splitlines() if part.strip()), "")
        if line:
            return line
    args = action.get("args")
    return f"{name}({_arguments(args) if isinstance(args, Mapping) else ''})"


def _generated(name: str, description: str) -> bool:
    """Whether `description` is the review middleware's default (`HumanInTheLoop`): a
    prefix, then the tool's name and its arguments as JSON, nothing a row needs."""
    return description.startswith(DEFAULT_DESCRIPTION_PREFIX) or (
        f"Tool: {name}\nArgs: " in description
    )


def _arguments(args: Mapping[str, Any]) -> str:
    keys = sorted(args, key=str)
    shown = [f"{key}={_short(args[key])}" for key in keys[:MAX_ARGS]]
    if len(keys) > MAX_ARGS:
        shown.append("…")
    return ", ".join(shown)


def _short(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{…}" if value else "{}"
    if isinstance(value, list):
        return f"[{len(value)} item{'' if len(value) == 1 else 's'}]"
    if isinstance(value, str):
        value = _SPACE.sub(" ", value).strip()
        if len(value) > MAX_VALUE_CHARS:
            value = value[: MAX_VALUE_CHARS - 1] + "…"
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


def _question(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in QUESTION_KEYS:
            if isinstance(value.get(key), str) and value[key].strip():
                return str(value[key])
        return _arguments(value)
    if isinstance(value, list):
        return f"[{len(value)} item{'' if len(value) == 1 else 's'}]"
    return json.dumps(value)


__all__ = ["MAX_CHARS", "shorten", "summarize"]
