"""`interrupt()`: pause a node and wait for an answer.

The pause is a control signal (`GraphInterrupt`) derived from `BaseException`, so
`except Exception` in user code cannot swallow it. Answers are matched to a node's
`interrupt()` calls by order within that node: the n-th call of a task has the id
`hash(task_ns|n)`, unique per question and stable while the thread waits on it.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from beamweaver_core.checkpoint.serde import json_safe
from beamweaver_core.exceptions import CheckpointerRequiredError
from beamweaver_core.types import NULL_RESUME, Command, Interrupt

if TYPE_CHECKING:
    from beamweaver_core.graph.runtime import Runtime


class GraphInterrupt(BaseException):
    """Raised by `interrupt()` to pause the running task; carries the new interrupts."""

    def __init__(self, interrupts: tuple[Interrupt, ...]) -> None:
        super().__init__(interrupts)
        self.interrupts = interrupts


class ParentCommand(BaseException):
    """Carries a `Command(graph=Command.PARENT)` out of a subgraph to its parent task."""

    def __init__(self, command: Command) -> None:
        super().__init__(command)
        self.command = command


def interrupt_id(task_ns: str, index: int) -> str:
    """The id of the `index`-th question asked by the task with namespace `task_ns`."""
    key = task_ns if index == 0 else f"{task_ns}|{index}"
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


@dataclass(slots=True)
class TaskScope:
    """What a running task needs to answer `interrupt()` calls and run nested graphs."""

    node: str
    task_ns: str
    checkpointing: bool
    answers: list[Any]
    resume: dict[str, Any]
    # An answer to a question of a subgraph run that was started again (see
    # `RunLoop.start_nested`), with that question: taken by the first `interrupt()` of the
    # new run that has no answer of its own.
    carried: list[tuple[Interrupt, Any]] = field(default_factory=list)
    # The checkpoint namespace of the graph the node belongs to ("" at the root): the
    # `ns` of its interrupts, like the breakpoints' and the stream envelopes'.
    graph_ns: str = ""
    runtime: Runtime | None = None
    run: Any = None
    counter: int = 0
    children: dict[str, int] = field(default_factory=dict)
    # The interrupts this task waits on (by id), and the values of the questions whose
    # answers it consumed (by index): what `answered_interrupt()` reports.
    asked: dict[str, Interrupt] = field(default_factory=dict)
    questions: dict[int, Any] = field(default_factory=dict)

    def child_ns(self, name: str) -> str:
        """Namespace of the next nested graph call of this task (deterministic by order)."""
        index = self.children.get(name, 0)
        self.children[name] = index + 1
        suffix = f"{name}" if index == 0 else f"{name}#{index}"
        return f"{self.task_ns}|{suffix}"


current_scope: ContextVar[TaskScope | None] = ContextVar("beamweaver_task_scope", default=None)


def interrupt(value: Any) -> Any:
    """Pause the running node and surface `value` (JSON-safe data; tuples become lists,
    as JSON has only arrays) to the caller.

    Returns the answer once the thread is resumed. The node runs again from its beginning
    on resume, and answers are matched to its `interrupt()` calls by order, so keep the
    sequence of calls deterministic.
    """
    # As it reads back from any checkpointer (tuples as lists), so the `Interrupted` of
    # this run and every later `get_state` show the same value.
    value = json_safe(value, "The interrupt() value")
    scope = current_scope.get()
    if scope is None:
        raise RuntimeError(
            "interrupt() was called outside a graph node. Call it from a node function "
            "while the graph runs (graph.invoke / graph.resume)."
        )
    if not scope.checkpointing:
        raise CheckpointerRequiredError(
            f"Node {scope.node!r} called interrupt(), but the graph has no checkpointer to "
            "save the paused state. Compile it with a checkpointer, e.g. "
            "graph.compile(checkpointer=MemoryCheckpointer())."
        )
    index = scope.counter
    scope.counter += 1
    if index < len(scope.answers):
        return scope.answers[index]
    iid = interrupt_id(scope.task_ns, index)
    if iid in scope.resume:
        answer = scope.resume[iid]
        answer = None if answer is NULL_RESUME else answer
        asked = scope.asked.get(iid)
        if asked is not None:
            scope.questions[index] = asked.value
        scope.answers.append(answer)
        return answer
    if scope.carried:
        asked, answer = scope.carried.pop(0)
        scope.questions[index] = asked.value
        answer = None if answer is NULL_RESUME else answer
        scope.answers.append(answer)
        return answer
    raise GraphInterrupt((Interrupt(id=iid, value=value, node=scope.node, ns=scope.graph_ns),))


def answered_interrupt() -> Interrupt | None:
    """The interrupt that the running node's next `interrupt()` call answers, as it was
    asked: `None` when that call asks a new question (and pauses).

    A node runs again from its beginning on resume and may compute its next question
    differently from when it paused (its inputs changed: the run's context, the code, the
    state). The answer belongs to the question that was asked; read it here (its `value`
    is the saved payload) to apply the answer to exactly what was asked, or to refuse the
    resume by raising (the answer is then discarded with the failed attempt and the
    interrupt stays pending). Also `None` for an answer consumed by an earlier attempt of
    the task whose question was saved by a version without this record.
    """
    scope = current_scope.get()
    if scope is None:
        raise RuntimeError(
            "answered_interrupt() was called outside a graph node. Call it from a node "
            "function while the graph runs, before the interrupt() call it is about."
        )
    index = scope.counter
    iid = interrupt_id(scope.task_ns, index)
    if index < len(scope.answers):
        if index not in scope.questions:
            return None
        return Interrupt(id=iid, value=scope.questions[index], node=scope.node, ns=scope.graph_ns)
    if iid in scope.resume:
        return scope.asked.get(iid)
    if scope.carried:
        return scope.carried[0][0]
    return None


__all__ = [
    "GraphInterrupt",
    "ParentCommand",
    "TaskScope",
    "answered_interrupt",
    "current_scope",
    "interrupt",
    "interrupt_id",
]
