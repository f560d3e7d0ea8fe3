"""The tool-execution ledger: every tool action recorded under its idempotency key.

A step can run again (after a crash, or a worker losing its lease), so a tool call can be
attempted twice. The ledger records each call before it runs (`started`) and its result
after (`done`):

- a call already `done` is never run again: its recorded result is returned;
- a call `started` but never finished had an unknown outcome. An ordinary tool runs again
  with the same idempotency key (at least once: it must dedupe by the key). A tool marked
  `at_most_once = True` is not run blindly: the run pauses and asks a human whether it
  happened (`outcome_unknown`).

Without a ledger in effect (`use_ledger`), tools simply run. The durable runtime installs
a Postgres ledger fenced to the run, so a worker that lost its lease cannot start a tool.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from beamweaver_core.graph.interrupts import interrupt
from beamweaver_core.messages import Message

if TYPE_CHECKING:
    from beamweaver_core.agent.tools import Tool, ToolRuntime
    from beamweaver_core.messages import ToolCall

OUTCOME_UNKNOWN = "outcome_unknown"
"""The `kind` of the interrupt raised for an at-most-once call with an unknown outcome."""


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What the ledger knew of a call when asked to begin it."""

    status: Literal["new", "started", "done"]
    message: Message | None = None


class ToolLedger(Protocol):
    def begin(
        self, key: str, *, tool: str, thread_id: str | None, args: dict[str, Any]
    ) -> LedgerEntry:
        """Record that the call is about to run (if new) and say what was known before."""

    def finish(self, key: str, message: Message) -> None:
        """Record the call's result."""


class MemoryToolLedger:
    """An in-process ledger (tests, and runs without a database)."""

    def __init__(self) -> None:
        self._entries: dict[str, LedgerEntry] = {}
        self._lock = threading.Lock()
        self.attempts: dict[str, int] = {}

    def begin(
        self, key: str, *, tool: str, thread_id: str | None, args: dict[str, Any]
    ) -> LedgerEntry:
        with self._lock:
            known = self._entries.get(key)
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if known is None:
                self._entries[key] = LedgerEntry("started")
                return LedgerEntry("new")
            return known

    def finish(self, key: str, message: Message) -> None:
        with self._lock:
            self._entries[key] = LedgerEntry("done", message)


current_ledger: ContextVar[ToolLedger | None] = ContextVar("beamweaver_tool_ledger", default=None)


@contextmanager
def use_ledger(ledger: ToolLedger | None) -> Iterator[None]:
    """Record the tool calls made inside this block (and its graph tasks) in `ledger`."""
    token = current_ledger.set(ledger)
    try:
        yield
    finally:
        current_ledger.reset(token)


def run_recorded(tool: Tool, call: ToolCall, runtime: ToolRuntime) -> Message:
    """Run `call` under the ledger in effect (see the module docstring)."""
    ledger = current_ledger.get()
    if ledger is None:
        return tool.execute(call, runtime)
    key = runtime.idempotency_key
    entry = ledger.begin(key, tool=call.name, thread_id=runtime.thread_id, args=dict(call.args))
    if entry.status == "done" and entry.message is not None:
        return entry.message
    if entry.status == "started" and getattr(tool, "at_most_once", False):
        message = _ask_about_unknown_outcome(tool, call, runtime)
        if message is not None:
            ledger.finish(key, message)
            return message
    message = tool.execute(call, runtime)
    ledger.finish(key, message)
    return message


def _ask_about_unknown_outcome(tool: Tool, call: ToolCall, runtime: ToolRuntime) -> Message | None:
    """Pause for a human; `None` means they confirmed it did not run, so run it now.

    An answer that is none of the three outcomes asks again (the question says why)."""
    question = {
        "kind": OUTCOME_UNKNOWN,
        "question": (
            f"The tool `{call.name}` was started but its worker stopped before recording the "
            "outcome. It runs at most once, so it is not retried automatically. Did it take "
            'effect? Answer {"outcome": "succeeded", "result": "..."} if it did, '
            '{"outcome": "not_run"} to run it now, or {"outcome": "skip"} to tell the model it '
            "was not done."
        ),
        "tool": call.name,
        "args": dict(call.args),
        "idempotency_key": runtime.idempotency_key,
    }
    while True:
        answer = interrupt(question)
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        if outcome == "succeeded":
            result = answer.get("result") or "The operator confirmed the action took effect."
            return Message.tool(result, tool_call_id=call.id, name=call.name)
        if outcome == "not_run":
            return None
        if outcome == "skip":
            return Message.tool(
                f"The `{call.name}` call was not completed (its outcome was unknown after a crash "
                "and an operator chose to skip it). Do not retry it unless the user asks.",
                tool_call_id=call.id,
                name=call.name,
                status="error",
            )
        question = {**question, "error": f"{answer!r} is not one of the three answers."}


__all__ = [
    "OUTCOME_UNKNOWN",
    "LedgerEntry",
    "MemoryToolLedger",
    "ToolLedger",
    "current_ledger",
    "run_recorded",
    "use_ledger",
]
