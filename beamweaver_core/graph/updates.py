"""A node's return value as state writes and routes, and how one step's writes merge.

Writes of a step are merged in task order, never completion order; two writes to a key
without a reducer in one step are refused with `InvalidUpdateError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from beamweaver_core.checkpoint.serde import normalize_writes
from beamweaver_core.checkpoint.types import TaskRecord, TaskSpec
from beamweaver_core.exceptions import InvalidUpdateError
from beamweaver_core.graph.definition import Branch, NodeSpec
from beamweaver_core.types import END, Command, Send

_MISSING: Any = object()


def goto_targets(goto: Any) -> list[str | Send]:
    if goto is None:
        return []
    if isinstance(goto, str | Send):
        return [goto]
    return list(goto)


def read_update(
    node: str, result: Any, keys: frozenset[str] | None, stored: bool = False
) -> tuple[list[tuple[str, Any]], list[str | Send], Command | None]:
    """Split a node's return value into writes, goto routes, and a parent command.

    `stored`: the run keeps checkpoints, so the written values take the shape they read
    back in (tuples as lists)."""
    if result is None:
        return [], [], None
    if isinstance(result, Command):
        if result.graph == Command.PARENT:
            return [], [], result
        if result.graph is not None:
            raise InvalidUpdateError(
                f"Node {node!r} returned Command(graph={result.graph!r}); the only graph a node "
                "can address besides its own is Command.PARENT."
            )
        writes = node_writes(node, result.update, keys, stored) if result.update is not None else []
        return writes, goto_targets(result.goto), None
    if isinstance(result, Mapping):
        return node_writes(node, result, keys, stored), [], None
    raise InvalidUpdateError(
        f"Node {node!r} returned {result!r} (a {type(result).__name__}); a node must return a "
        "dict of state updates, None, or a Command."
    )


def node_writes(
    node: str, update: Any, keys: frozenset[str] | None, stored: bool = False
) -> list[tuple[str, Any]]:
    if not isinstance(update, Mapping):
        raise InvalidUpdateError(
            f"Node {node!r} produced the update {update!r}; an update must be a dict of state keys."
        )
    if keys is not None:
        unknown = [k for k in update if k not in keys]
        if unknown:
            raise InvalidUpdateError(
                f"Node {node!r} wrote key(s) {unknown} that the state schema does not declare "
                f"(declared: {sorted(keys)}). Add them to the schema or stop writing them."
            )
    # Under a checkpointer tuples become lists now, as every checkpointer reads them back:
    # the rest of this run sees what a resumed run would see. (Without one nothing is read
    # back, and the values stay as given at no cost.)
    return normalize_writes(update) if stored else list(update.items())


def apply_writes(
    values: dict[str, Any],
    writes: Sequence[tuple[str, Any]],
    reducers: Mapping[str, Callable[[Any, Any], Any]],
) -> None:
    """Apply one task's writes on `values` in place (for the task's own view)."""
    for key, value in writes:
        reducer = reducers.get(key)
        if reducer is None:
            values[key] = value
        else:
            current = values.get(key, _MISSING)
            values[key] = value if current is _MISSING else reducer(current, value)


def resolve_route(branch: Branch, result: Any, nodes: Mapping[str, NodeSpec]) -> list[str | Send]:
    items = result if isinstance(result, list | tuple) else [result]
    routes: list[str | Send] = []
    for item in items:
        if isinstance(item, Send):
            if item.node not in nodes:
                raise InvalidUpdateError(
                    f"The router of {branch.source!r} sent to unknown node {item.node!r}; "
                    f"known nodes: {sorted(nodes)}."
                )
            routes.append(item)
            continue
        target = item
        if branch.path_map is not None:
            try:
                target = branch.path_map[item]
            except (KeyError, TypeError):
                raise InvalidUpdateError(
                    f"The router of {branch.source!r} returned {item!r}, which is not a key of its "
                    f"path_map {dict(branch.path_map)!r}."
                ) from None
        if target is None or target == END:
            continue
        if not isinstance(target, str) or target not in nodes:
            raise InvalidUpdateError(
                f"The router of {branch.source!r} returned {target!r}, which is not a node; "
                f"known nodes: {sorted(nodes)} (or END)."
            )
        routes.append(target)
    return routes


def merge_step(
    tasks: Sequence[TaskSpec],
    records: Mapping[str, TaskRecord],
    values: Mapping[str, Any],
    reducers: Mapping[str, Callable[[Any, Any], Any]],
) -> tuple[dict[str, Any], set[str]]:
    """The values after a complete step (every task `done`), and the keys it wrote."""
    collected: dict[str, list[Any]] = {}
    for task in tasks:
        for key, value in records[task.id].writes:
            bucket = collected.get(key)
            if bucket is None:
                collected[key] = [value]
            else:
                bucket.append(value)
    merged = dict(values)
    for key, updates in collected.items():
        reducer = reducers.get(key)
        if reducer is None:
            if len(updates) > 1:
                writers = [t.name for t in tasks if any(k == key for k, _ in records[t.id].writes)]
                raise InvalidUpdateError(conflict_message(key, writers))
            merged[key] = updates[0]
        else:
            current = merged.get(key, _MISSING)
            for update in updates:
                current = update if current is _MISSING else reducer(current, update)
            merged[key] = current
    return merged, set(collected)


def finished_conflict(
    tasks: Sequence[TaskSpec],
    records: Mapping[str, TaskRecord],
    reducers: Mapping[str, Callable[[Any, Any], Any]],
) -> tuple[str, list[str]] | None:
    """A key without a reducer that finished tasks of an open step already wrote twice
    (the step can never merge), with the names of its writers."""
    writers: dict[str, list[str]] = {}
    for task in tasks:
        record = records.get(task.id)
        if record is None or record.status != "done":
            continue
        for key, _ in record.writes:
            if key not in reducers:
                writers.setdefault(key, []).append(task.name)
    for key, names in writers.items():
        if len(names) > 1:
            return key, names
    return None


def conflict_message(key: str, writers: Sequence[str]) -> str:
    return (
        f"At key {key!r}: nodes {list(writers)} wrote it in the same super-step, but it has "
        "no reducer, so only one value per step is allowed. Declare a reducer "
        f"(add_reducer({key!r}, fn) or Annotated[T, fn]) or write it from one node."
    )


__all__ = [
    "apply_writes",
    "conflict_message",
    "finished_conflict",
    "goto_targets",
    "merge_step",
    "node_writes",
    "read_update",
    "resolve_route",
]
