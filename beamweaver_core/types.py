"""Shared value objects: commands, sends, interrupts, run results, snapshots.

They live outside the `graph` and `checkpoint` packages because both use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeAlias

START = "__start__"
END = "__end__"

Timing: TypeAlias = Literal["before", "after"]


class _NullResume:
    """The explicit "resume with None" value (`null_resume()`)."""

    _instance: ClassVar[_NullResume | None] = None

    def __new__(cls) -> _NullResume:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "null_resume()"

    def __reduce__(self) -> str:
        return "NULL_RESUME"


NULL_RESUME = _NullResume()


def null_resume() -> Any:
    """Resume with an explicit `None` answer (plain `None` means "no value supplied")."""
    return NULL_RESUME


@dataclass(frozen=True, slots=True)
class Send:
    """From a router: run `node` once with `arg` as its input instead of the graph state."""

    node: str
    arg: Any


@dataclass(frozen=True, slots=True)
class Command:
    """Returned by a node (or given as input) to update state, route, or resume.

    `goto` adds targets to the static edges; `update` is applied like a node return;
    `resume` answers pending interrupts as `resume()` does; `graph=Command.PARENT`
    addresses the parent graph from inside a subgraph.
    """

    PARENT: ClassVar[str] = "__parent__"

    goto: str | Send | Sequence[str | Send] | None = None
    update: Mapping[str, Any] | None = None
    resume: Any = None
    graph: str | None = None


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A pending question (or static breakpoint) of a paused thread."""

    id: str
    value: Any
    node: str
    ns: str = ""
    timing: Timing | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "value": self.value,
            "node": self.node,
            "ns": self.ns,
            "timing": self.timing,
        }


@dataclass(frozen=True, slots=True)
class Completed:
    """The run finished; `state` holds the final values."""

    state: dict[str, Any]
    events: list[Any] = field(default_factory=list, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The run paused; `interrupt` is the first pending interrupt, `interrupts` all."""

    interrupt: Interrupt
    interrupts: tuple[Interrupt, ...]
    state: dict[str, Any]
    events: list[Any] = field(default_factory=list, compare=False, repr=False)


RunResult: TypeAlias = Completed | Interrupted


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task of a snapshot's pending step (LangGraph's `PregelTask`)."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: str | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class StateSnapshot:
    """The state of a thread at one checkpoint."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any]
    created_at: datetime | None
    parent_config: dict[str, Any] | None
    tasks: tuple[TaskInfo, ...]
    interrupts: tuple[Interrupt, ...]


__all__ = [
    "END",
    "NULL_RESUME",
    "START",
    "Command",
    "Completed",
    "Interrupt",
    "Interrupted",
    "RunResult",
    "Send",
    "StateSnapshot",
    "TaskInfo",
    "Timing",
    "null_resume",
]
