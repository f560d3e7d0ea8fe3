"""What runs next: the successors of finished nodes, the tasks of a step, breakpoints.

After a node finishes, its static edges, the joins it completes and its router's choices
become the next step's routes; the routes become tasks (one per pulled node, one per
`Send`). Before a step runs, a pending static breakpoint pauses it, and only tasks without
a record, failed ones, or interrupted tasks whose interrupts were answered, run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from beamweaver_core.checkpoint.types import Checkpoint, TaskRecord, TaskSpec
from beamweaver_core.graph.definition import GraphDefinition
from beamweaver_core.graph.updates import resolve_route
from beamweaver_core.types import END, START, Interrupt, Send


def routes_after(
    graph: GraphDefinition,
    node: str,
    values: dict[str, Any],
    chosen: Sequence[str | Send],
    barriers: dict[str, tuple[str, ...]] | None = None,
) -> list[str | Send]:
    """Successors of `node` once it finished: static edges, joins, then its choices.

    Joins are tracked in `barriers` (updated in place): a join's target is routed once
    every source has arrived."""
    routes: list[str | Send] = list(graph.successors.get(node, ()))
    if barriers is not None:
        for join in graph.joins_by_source.get(node, ()):
            arrived = set(barriers.get(join.key, ())) | {node}
            if arrived >= join.sources:
                barriers.pop(join.key, None)
                routes.append(join.target)
            else:
                barriers[join.key] = tuple(sorted(arrived))
    if node == START:
        for branch in graph.branches.get(START, ()):
            decided = branch.route(values, None)
            routes.extend(resolve_route(branch, decided, graph.nodes))
    routes.extend(chosen)
    return routes


def chosen_routes(graph: GraphDefinition, node: str, values: dict[str, Any]) -> list[str | Send]:
    """What the routers of `node` choose on `values` (for `update_state(as_node=...)`)."""
    chosen: list[str | Send] = []
    for branch in graph.branches.get(node, ()):
        decided = branch.route(values, None)
        chosen.extend(resolve_route(branch, decided, graph.nodes))
    return chosen


def split_routes(routes: Sequence[str | Send]) -> tuple[list[str], list[Send]]:
    """The pulled node names (sorted, once each) and the `Send`s (in order) of `routes`."""
    pulls: set[str] = set()
    sends: list[Send] = []
    for route in routes:
        if isinstance(route, Send):
            sends.append(route)
        elif route != END:
            pulls.add(route)
    return sorted(pulls), sends


def unsaved_tasks(pulls: Sequence[str], sends: Sequence[Send]) -> tuple[TaskSpec, ...]:
    """The tasks of a step without a checkpointer: their ids only tell them apart."""
    tasks = [TaskSpec(id=name, name=name) for name in pulls]
    tasks.extend(
        TaskSpec(id=f"push:{i}", name=s.node, push=i, arg=s.arg) for i, s in enumerate(sends)
    )
    return tuple(tasks)


def breakpoint_id(checkpoint_id: str, timing: str) -> str:
    return hashlib.blake2b(
        f"{checkpoint_id}|breakpoint|{timing}".encode(), digest_size=16
    ).hexdigest()


def pending_breakpoint(
    graph: GraphDefinition,
    checkpoint: Checkpoint | None,
    ns: str,
    tasks: Sequence[TaskSpec],
    records: Mapping[str, TaskRecord],
) -> Interrupt | None:
    """The static breakpoint the step after `checkpoint` waits on, if any: after a node
    that just ran, or before a node about to run (unless the step already started)."""
    if checkpoint is None:
        return None
    if graph.interrupt_after:
        for node in checkpoint.metadata.get("_after", ()):
            if node in graph.interrupt_after:
                return Interrupt(
                    id=breakpoint_id(checkpoint.id, "after"),
                    value=None,
                    node=node,
                    ns=ns,
                    timing="after",
                )
    if graph.interrupt_before and not records:
        for task in tasks:
            if task.name in graph.interrupt_before:
                return Interrupt(
                    id=breakpoint_id(checkpoint.id, "before"),
                    value=None,
                    node=task.name,
                    ns=ns,
                    timing="before",
                )
    return None


def runnable(
    tasks: Sequence[TaskSpec], records: Mapping[str, TaskRecord], resume: Mapping[str, Any]
) -> tuple[list[tuple[TaskSpec, tuple[Any, ...]]], bool]:
    """The tasks of a step to run now, each with the answers it already consumed, and
    whether other tasks still wait on unanswered interrupts."""
    to_run: list[tuple[TaskSpec, tuple[Any, ...]]] = []
    waiting = False
    for task in tasks:
        record = records.get(task.id)
        if record is None or record.status == "failed":
            to_run.append((task, ()))
        elif record.status == "interrupted":
            if any(i.id in resume for i in record.interrupts):
                to_run.append((task, record.answers))
            else:
                waiting = True
    return to_run, waiting


__all__ = [
    "breakpoint_id",
    "chosen_routes",
    "pending_breakpoint",
    "routes_after",
    "runnable",
    "split_routes",
    "unsaved_tasks",
]
