"""Reading a thread's saved state: `StateSnapshot`s of a checkpoint and of the history.

A snapshot shows the values with the writes of finished tasks of a paused step applied,
the nodes that run next, each task (with a subgraph's own state when asked for, and what
it wrote once it finished: from its pending record while the step is open, from the
checkpoint the step produced once it completed), and the pending interrupts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.types import Checkpoint
from beamweaver_core.exceptions import CheckpointNotFoundError
from beamweaver_core.graph.definition import GraphDefinition
from beamweaver_core.graph.loop import RunLoop, no_checkpoint
from beamweaver_core.types import StateSnapshot, TaskInfo

Config = dict[str, Any]


def state(
    graph: GraphDefinition,
    checkpointer: Checkpointer,
    thread_id: str,
    config: Config,
    subgraphs: bool,
) -> StateSnapshot:
    """The thread's latest state (or that of the checkpoint `config` names)."""
    checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
    cp = checkpointer.load(thread_id, "", checkpoint_id)
    if cp is None and checkpoint_id is not None:
        raise CheckpointNotFoundError(no_checkpoint(thread_id, checkpoint_id))
    return loaded_state(graph, checkpointer, thread_id, cp, config, subgraphs)


def latest_states(
    graphs: Mapping[str, tuple[GraphDefinition, Checkpointer]],
) -> dict[str, StateSnapshot]:
    """Each thread's latest state as `state` gives it without `subgraphs`, by thread id
    (`graphs`: each thread's graph and checkpointer), the heads of the threads on one
    checkpointer read in one `load_heads`, whatever their number.

    Nothing more is read: a snapshot without subgraphs reads nothing but its checkpoint.
    Its pending writes are the head's `records`, loaded with it; its tasks' `results` are
    empty, as `load` gives a head (they are kept by the checkpoint their step produced,
    which a head has not got); a subgraph task's state is its config only."""
    on: dict[Checkpointer, list[str]] = {}
    for thread_id, (_, checkpointer) in graphs.items():
        on.setdefault(checkpointer, []).append(thread_id)
    heads: dict[str, Checkpoint] = {}
    for checkpointer, thread_ids in on.items():
        heads.update(checkpointer.load_heads(thread_ids))
    return {
        thread_id: loaded_state(
            graph,
            checkpointer,
            thread_id,
            heads.get(thread_id),
            {"configurable": {"thread_id": thread_id}},
            False,
        )
        for thread_id, (graph, checkpointer) in graphs.items()
    }


def loaded_state(
    graph: GraphDefinition,
    checkpointer: Checkpointer,
    thread_id: str,
    cp: Checkpoint | None,
    config: Config,
    subgraphs: bool,
) -> StateSnapshot:
    """The thread's state at `cp`, loaded already (`None`: the thread has no checkpoint)."""
    if cp is None:
        return StateSnapshot(
            {},
            (),
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
            {},
            None,
            None,
            (),
            (),
        )
    return snapshot(graph, cp, config, subgraphs, checkpointer)


def history(
    graph: GraphDefinition,
    checkpointer: Checkpointer,
    thread_id: str,
    config: Config,
    limit: int | None,
    before: str | None,
) -> Iterator[StateSnapshot]:
    """Snapshots of the thread, newest first."""
    for cp in checkpointer.history(thread_id, "", before=before, limit=limit):
        yield snapshot(graph, cp, config, False, checkpointer)


def snapshot(
    graph: GraphDefinition,
    cp: Checkpoint,
    config: Config,
    subgraphs: bool,
    checkpointer: Checkpointer,
) -> StateSnapshot:
    """The snapshot of checkpoint `cp` (a subgraph keeps its checkpoints in its root's
    `checkpointer`, at any depth)."""
    loop = RunLoop.reading(graph, cp, dict(config))
    tasks: list[TaskInfo] = []
    next_names: list[str] = []
    never_merges = loop.finished_conflict() is not None
    # A paused step (a task waits on a question) shows the state at the pause; any other
    # step, the checkpoint's own values with every task next: what its tasks saved while
    # siblings ran depends on timing, not on what the step did.
    paused = any(r.status == "interrupted" for r in loop.records.values())
    for task in cp.tasks:
        record = loop.records.get(task.id)
        done = record is not None and record.status == "done"
        if not done or never_merges or not paused:
            next_names.append(task.name)
        child_state: Any = None
        spec = graph.nodes.get(task.name)
        if spec is not None and spec.subgraph is not None:
            task_ns = f"{cp.ns}|{task.name}:{task.id}" if cp.ns else f"{task.name}:{task.id}"
            child_ns = f"{task_ns}|{spec.subgraph.name}"
            child_config = {"configurable": {"thread_id": cp.thread_id, "checkpoint_ns": child_ns}}
            if subgraphs:
                child_cp = checkpointer.load(cp.thread_id, child_ns)
                child_state = (
                    snapshot(spec.subgraph, child_cp, child_config, True, checkpointer)
                    if child_cp
                    else None
                )
            else:
                child_state = child_config
        written = cp.results.get(task.id)
        if written is None and done and record is not None:
            written = record.writes
        tasks.append(
            TaskInfo(
                id=task.id,
                name=task.name,
                path=task.path,
                error=record.error if record is not None else None,
                interrupts=record.interrupts if record is not None else (),
                state=child_state,
                result=dict(written) if written is not None else None,
            )
        )
    metadata = {k: v for k, v in cp.metadata.items() if not k.startswith("_")}
    metadata.update(source=cp.source, step=cp.step)
    metadata.setdefault("parents", {})
    base = {"thread_id": cp.thread_id, "checkpoint_ns": cp.ns}
    return StateSnapshot(
        values=loop.interrupted_state() if paused else dict(cp.values),
        next=tuple(next_names),
        config={"configurable": {**base, "checkpoint_id": cp.id}},
        metadata=metadata,
        created_at=cp.created_at,
        parent_config={"configurable": {**base, "checkpoint_id": cp.parent_id}}
        if cp.parent_id
        else None,
        tasks=tuple(tasks),
        interrupts=loop.pending_interrupts(),
    )


__all__ = ["history", "latest_states", "loaded_state", "snapshot", "state"]
