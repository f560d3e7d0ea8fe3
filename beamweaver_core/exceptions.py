"""The error hierarchy of BeamWeaver (api.md §3).

Every real error derives from `BeamWeaverError` and, where one fits, from the matching
builtin so that callers can keep catching `ValueError` or `RuntimeError`. The interrupt
control signal is *not* an error and lives in `beamweaver_core.graph.interrupts`.

Messages say what was wrong, show the offending value, and say how to fix it.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Sequence
from typing import Any


class BeamWeaverError(Exception):
    """Root of every BeamWeaver error."""


class GraphDefinitionError(BeamWeaverError, ValueError):
    """The graph definition is invalid; `problems` lists every mistake found."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"The graph definition has {len(self.problems)} problem(s):\n{lines}\n"
            "Fix them in the builder before calling compile()."
        )


class InvalidUpdateError(BeamWeaverError, ValueError):
    """A node returned something that cannot be applied to the state."""


class GraphRecursionError(BeamWeaverError, RecursionError):
    """A run needed more super-steps than `config["recursion_limit"]` allows."""


class CheckpointerRequiredError(BeamWeaverError, RuntimeError):
    """An operation needs a checkpointer but the graph was compiled without one."""


class NothingToResumeError(BeamWeaverError, RuntimeError):
    """`resume` was called on a thread with no pending interrupt or breakpoint."""


class AmbiguousResumeError(BeamWeaverError, ValueError):
    """A scalar resume value was given while several interrupts are pending."""

    def __init__(self, pending_ids: Iterable[str]) -> None:
        self.pending_ids = tuple(pending_ids)
        super().__init__(
            f"{len(self.pending_ids)} interrupts are pending ({', '.join(self.pending_ids)}), "
            "so a single resume value is ambiguous. Resume with a dict mapping interrupt ids "
            "to answers, e.g. resume({interrupt.id: answer for interrupt in pending})."
        )


class MissingResumeValueError(BeamWeaverError, ValueError):
    """`resume()` was called without a value while interrupts wait for answers."""

    def __init__(self, pending_ids: Iterable[str]) -> None:
        self.pending_ids = tuple(pending_ids)
        super().__init__(
            f"resume() was called without a value, but interrupt(s) {list(self.pending_ids)} "
            "are waiting for answers. Pass the answer (or a dict of interrupt id -> answer); "
            "to answer with None, pass null_resume()."
        )


class UnexpectedResumeValueError(BeamWeaverError, ValueError):
    """A value was given for a static breakpoint, which asks no question: it would be
    discarded, so it is refused. Nothing was written; the thread stays paused."""

    def __init__(self, breakpoints: Sequence[Any], value: Any) -> None:
        self.pending_ids = tuple(b.id for b in breakpoints)
        self.value = value
        where = ", ".join(f"{b.timing} node {b.node!r}" for b in breakpoints)
        super().__init__(
            f"The thread is paused at a static breakpoint ({where}), which asks no question, "
            f"so the value {reprlib.repr(value)} would be discarded; it was not used and "
            "nothing was written. Continue with resume(None, config) (or null_resume()); to "
            "change the state before it continues, call update_state(config, values) first."
        )


class UnknownInterruptError(BeamWeaverError, KeyError):
    """A resume map named an interrupt that is not pending, or was empty."""

    def __init__(self, unknown_ids: Iterable[str], pending_ids: Iterable[str]) -> None:
        self.unknown_ids = tuple(unknown_ids)
        self.pending_ids = tuple(pending_ids)
        if not self.unknown_ids:
            message = (
                "The resume map is empty. Name at least one pending interrupt id; "
                f"pending: {list(self.pending_ids)}."
            )
        else:
            message = (
                f"Interrupt id(s) {list(self.unknown_ids)} are not pending on this thread "
                f"(pending: {list(self.pending_ids)}). Read the current ids with "
                "get_state(config).interrupts and answer those."
            )
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class InvalidDecisionError(BeamWeaverError, ValueError):
    """Review decisions failed validation; `problems` lists every problem found.

    Nothing was consumed: the same interrupt can be answered again.
    """

    def __init__(self, problems: Sequence[str] | Sequence[dict[str, Any]]) -> None:
        self.problems: tuple[Any, ...] = tuple(problems)
        lines = "\n".join(
            f"  - {p['message'] if isinstance(p, dict) else p}" for p in self.problems
        )
        super().__init__(
            f"The review decisions are invalid ({len(self.problems)} problem(s)):\n{lines}\n"
            "Nothing was consumed; answer the same interrupt again with corrected decisions."
        )


class NotAReviewError(BeamWeaverError, ValueError):
    """The interrupt is not a HumanInTheLoop tool review."""


class ReviewChangedError(BeamWeaverError, RuntimeError):
    """A review answer cannot be applied: the tool calls it was asked about are no longer
    the agent's pending calls (the state changed under the pause). Nothing was consumed;
    the thread is still paused on the same interrupt."""


class ThreadBusyError(BeamWeaverError, RuntimeError):
    """Another run is already active on the thread."""


class GraphChangedError(BeamWeaverError, RuntimeError):
    """A saved step names nodes the graph no longer has: the graph's code changed while
    the thread was paused. Raised before anything is written; the thread stays as it was."""

    def __init__(self, graph: str, missing: Sequence[str], nodes: Sequence[str]) -> None:
        self.graph = graph
        self.missing = tuple(missing)
        super().__init__(
            f"Graph {graph!r} has no node(s) {list(self.missing)}, which this thread's pending "
            f"step runs: the graph's code changed since the thread paused (its nodes now: "
            f"{sorted(nodes)}). Resume the thread with the graph version that paused it, or "
            "fork it from an earlier checkpoint (checkpoint_id) that the new graph can run."
        )


class AsyncTaskError(BeamWeaverError, RuntimeError):
    """An async subagent task cannot do what was asked (it is waiting for a review, it
    already ended, ...). The async task tools report it to the model as a tool error."""


class UnknownAsyncTaskError(AsyncTaskError, LookupError):
    """No async task with that id was started by this agent's thread."""


class AsyncTaskClientRequiredError(BeamWeaverError, RuntimeError):
    """An async subagent was used with no client to run its tasks."""


class CheckpointNotFoundError(BeamWeaverError, LookupError):
    """The addressed checkpoint or thread does not exist."""


class ScriptExhaustedError(BeamWeaverError, RuntimeError):
    """A `ScriptedChatModel` was called more times than it has responses."""


class StaleWriterError(ThreadBusyError):
    """A checkpoint write was fenced off: another run now owns the thread."""


class ModelProviderError(BeamWeaverError, RuntimeError):
    """A chat model provider failed (auth, rate limit, malformed response, network)."""


class ModelAuthenticationError(ModelProviderError):
    """The provider refused the credentials (or none were configured)."""


class ModelRateLimitError(ModelProviderError):
    """The provider kept rate-limiting after every retry."""


class MalformedModelResponseError(ModelProviderError):
    """The provider answered with something that is not a valid chat response."""


class MCPServerError(BeamWeaverError, RuntimeError):
    """An MCP server could not be used: unreachable, failed, or answered with an error."""


class MCPConnectionError(MCPServerError):
    """The MCP server could not be reached, or its connection was lost (it exited)."""


class MCPTimeoutError(MCPServerError):
    """The MCP server did not answer within its timeout."""


__all__ = [
    "AmbiguousResumeError",
    "AsyncTaskClientRequiredError",
    "AsyncTaskError",
    "BeamWeaverError",
    "CheckpointNotFoundError",
    "CheckpointerRequiredError",
    "GraphChangedError",
    "GraphDefinitionError",
    "GraphRecursionError",
    "InvalidDecisionError",
    "InvalidUpdateError",
    "MCPConnectionError",
    "MCPServerError",
    "MCPTimeoutError",
    "MalformedModelResponseError",
    "MissingResumeValueError",
    "ModelAuthenticationError",
    "ModelProviderError",
    "ModelRateLimitError",
    "NotAReviewError",
    "NothingToResumeError",
    "ReviewChangedError",
    "ScriptExhaustedError",
    "StaleWriterError",
    "ThreadBusyError",
    "UnexpectedResumeValueError",
    "UnknownAsyncTaskError",
    "UnknownInterruptError",
]
