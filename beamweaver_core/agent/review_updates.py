"""What validated tool review decisions write into the agent's state.

- edit: the reviewer's call replaces the proposed one in the assistant message that
  proposed it (a `ToolCallEdits` update; the proposed call stays in that message's
  `metadata[ORIGINAL_TOOL_CALLS_KEY]`);
- reject: an error tool message with the reviewer's message (or a default text);
- respond: a successful tool message with the reviewer's text;
- approve and edit with a `binding`: the digest the call must still have when it runs
  (`BINDINGS_KEY`).

Tool messages written for a reject or a respond carry `metadata[REVIEW_DECISION_KEY]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beamweaver_core.messages import Message, ToolCall, ToolCallEdits

EDITS_KEY = "hitl_edited_tool_calls"
"""Legacy state key (tool call id -> the reviewer's `{"name", "args"}`), written by versions
that kept the proposed call in the history; still honoured for threads they paused."""

REVIEW_DECISION_KEY = "review_decision"
"""`Message.metadata` key of a tool message a reviewer wrote: `"reject"` or `"respond"`."""

BINDINGS_KEY = "hitl_bindings"
"""State key: tool call id -> the execution digest its approval or edit was bound to."""


def decision_updates(decided: list[tuple[ToolCall, dict[str, Any]]]) -> dict[str, Any] | None:
    """State updates for validated decisions: edited calls replaced in the history, tool
    messages written for rejects and responds, and the bindings of approvals."""
    messages: list[Message | ToolCallEdits] = []
    edited: list[ToolCall] = []
    bindings: dict[str, str] = {}
    for call, chosen in decided:
        kind = chosen["type"]
        if "binding" in chosen:
            bindings[call.id] = chosen["binding"]
        if kind == "edit":
            action = chosen["edited_action"]
            edited.append(ToolCall(id=call.id, name=action["name"], args=dict(action["args"])))
        elif kind == "reject":
            messages.append(
                Message.tool(
                    rejection_text(call, chosen.get("message")),
                    tool_call_id=call.id,
                    name=call.name,
                    status="error",
                    metadata={REVIEW_DECISION_KEY: "reject"},
                )
            )
        elif kind == "respond":
            messages.append(
                Message.tool(
                    chosen["message"],
                    tool_call_id=call.id,
                    name=call.name,
                    metadata={REVIEW_DECISION_KEY: "respond"},
                )
            )
    if edited:
        messages.insert(0, ToolCallEdits(tuple(edited)))
    update: dict[str, Any] = {}
    if messages:
        update["messages"] = messages
    if bindings:
        update[BINDINGS_KEY] = bindings
    return update or None


def rejection_text(call: ToolCall, message: str | None) -> str:
    """The tool result of a rejected call: the reviewer's `message` as written, or (when
    they left it empty) a default saying what happened and not to retry it."""
    if message:
        return message
    return (
        f"The human reviewer rejected the tool call `{call.name}` (id {call.id}); the tool was "
        "not executed.\nDo not retry this tool call unless the user explicitly asks for it."
    )


def merge_by_call_id(existing: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    return {**existing, **update}


__all__ = [
    "BINDINGS_KEY",
    "EDITS_KEY",
    "REVIEW_DECISION_KEY",
    "decision_updates",
    "merge_by_call_id",
    "rejection_text",
]
