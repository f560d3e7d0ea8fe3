"""The writes of a completed step, kept with the checkpoint that step produced.

When every task of a step has finished, the step is merged into the next checkpoint (a
`loop` checkpoint) and its tasks' writes are stored with that checkpoint, by task id
(`NewCheckpoint.writes`), in the same row and the same statement. Reading the parent back,
a checkpointer hands them out as the parent's `Checkpoint.results`: what each of its tasks
wrote, as LangGraph's `tasks[].result` shows it. They are not pending writes of the parent:
a fork from the parent runs its tasks again, as it always has.

Writes are data, stored with the checkpointer's serde. A write that is exactly what the
checkpoint's own blob of that channel holds (the items a node appended to a message list,
or the value it set) is stored as a reference into that blob instead of a second copy, so
keeping writes does not store an appended message twice. Per task, in write order, an
entry is one of:

- `[key, value]`: the value itself;
- `[key]`: the value the checkpoint's blob of `key` holds whole (`{"f": value}`);
- `[key, start, stop]`: items `start:stop` of the list the blob holds (the appended items
  `"a"` of a delta, or the whole list `"f"` of a snapshot).

A write is referenced only when its objects are the very objects the blob was encoded
from (identity, not equality), so the reference reads back exactly what was written.

Which child holds a checkpoint's results: the `loop` checkpoint at the next position
(`seq + 1`) whose parent it is. A checkpoint can have several children: besides the one
its step produced, a fork, an `update_state` or new input from it (once the thread has
moved on) each add a checkpoint after the thread's head, with the old one as parent. Those
carry no writes of its tasks (a fork's copy shows its own results, from its own step
child). The step's child always takes the next position, because a run steps only from
the head: continuing from an older checkpoint first puts a copy at the head.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beamweaver_core.checkpoint import serde

TaskWrites = Mapping[str, Sequence[tuple[str, Any]]]
"""`{task_id: ((key, value), ...)}`: what each task of a step wrote, in write order."""

Results = Mapping[str, tuple[tuple[str, Any], ...]]
"""`{task_id: ((key, value), ...)}`: the writes of a checkpoint's tasks, read back."""

_PATH = "<task writes>"


@dataclass(frozen=True, slots=True)
class Held:
    """What a checkpoint's new blob of one channel holds: `value` whole (a snapshot), or
    only `items` (the appended items of a delta: `value` is then `None` and `whole` False).
    `items` is the list a slice reference indexes (`None` when the value is no list)."""

    whole: bool
    value: Any
    items: list[Any] | None


def encode(writes: TaskWrites, held: Mapping[str, Held]) -> str:
    """The stored text of a step's writes; raises `TypeError` naming the key of an
    unstorable value."""
    cursors: dict[str, int] = {}
    data = {
        task_id: [_entry(key, value, held.get(key), cursors) for key, value in task]
        for task_id, task in writes.items()
    }
    # Each value is already in its JSON-safe form (converting the whole again would take
    # an engine object's tagged form for user data and escape it).
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _entry(key: str, value: Any, held: Held | None, cursors: dict[str, int]) -> list[Any]:
    if held is not None:
        if held.whole and value is held.value:
            return [key]
        if held.items is not None and type(value) is list and value:
            start = _find(held.items, value, cursors.get(key, 0))
            if start is not None:
                cursors[key] = start + len(value)
                return [key, start, start + len(value)]
    return [key, serde.to_jsonable(value, (_PATH, key))]


def _find(items: list[Any], value: list[Any], cursor: int) -> int | None:
    """Where `value`'s objects sit in `items`, in order. Writers of one key are merged in
    task order, so a writer's items usually start where the previous writer's ended
    (`cursor`); else, appended items being at the end, look back from the end. A miss
    costs one pass over `items`, less than encoding the blob that holds them."""
    n = len(value)
    first = value[0]
    for start in itertools.chain((cursor,), range(len(items) - n, cursor, -1)):
        if (
            start + n <= len(items)
            and items[start] is first
            and all(a is b for a, b in zip(items[start : start + n], value, strict=True))
        ):
            return start
    return None


def decode(text: str) -> dict[str, list[list[Any]]]:
    """The entries of stored writes, by task id (references still unresolved)."""
    data: dict[str, list[list[Any]]] = serde.loads(text)
    return data


def referenced(entries: Mapping[str, Sequence[Sequence[Any]]]) -> set[str]:
    """The channels whose blob (at the writing checkpoint's version) the entries point into."""
    return {e[0] for task in entries.values() for e in task if len(e) != 2}


def resolve(
    entries: Mapping[str, Sequence[Sequence[Any]]], blob: Callable[[str], str | None]
) -> dict[str, tuple[tuple[str, Any], ...]]:
    """The writes by task id, references read from `blob(key)` (the text of the writing
    checkpoint's own blob of `key`). Each reference is decoded on its own, so no two
    results share an object."""

    def held(key: str) -> Any:
        text = blob(key)
        if text is None:
            raise LookupError(f"Checkpoint storage is missing the blob of {key!r} a write names")
        return serde.loads(text)

    def value(entry: Sequence[Any]) -> Any:
        if len(entry) == 2:
            return entry[1]
        stored = held(entry[0])
        if len(entry) == 1:
            return stored["f"]
        items = stored["a"] if "a" in stored else stored["f"]
        return items[entry[1] : entry[2]]

    return {
        task_id: tuple((entry[0], value(entry)) for entry in task)
        for task_id, task in entries.items()
    }


def results(text: str | None, blob: Callable[[str], str | None]) -> dict[str, Any]:
    """`resolve(decode(text), blob)`, or nothing when no writes were stored."""
    if text is None:
        return {}
    return resolve(decode(text), blob)


__all__ = [
    "Held",
    "Results",
    "TaskWrites",
    "decode",
    "encode",
    "referenced",
    "resolve",
    "results",
]
