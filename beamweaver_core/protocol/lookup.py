"""Finding what a caller addresses: their threads (404 for hidden and unknown alike; 403
for a visible thread they may not change), a thread's graph (with the breakpoints its
latest run was given) and its state."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from beamweaver_core import statements
from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.exceptions import CheckpointNotFoundError
from beamweaver_core.graph.compiled import CompiledGraph, latest_states
from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol.auth import token_user
from beamweaver_core.protocol.errors import ProtocolError, not_found
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.runtime import options as run_options
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.access import THREAD_ID, access, locked_if_visible
from beamweaver_core.types import StateSnapshot

ACTIVE = (Run.Status.WAITING, Run.Status.QUEUED, Run.Status.RUNNING)


def threads(user: Any) -> QuerySet[Thread]:
    """The threads `user` may see."""
    return access().visible_threads(user)


def thread(
    user: Any, thread_id: str, *, busy: bool = False, latest_options: bool = False
) -> Thread:
    """The thread, if `user` may see it; 404 otherwise. In the same statement, `busy`:
    whether it is busy (`with_busy`), for a caller that shows its status;
    `latest_options`: its latest run's options (`with_latest_options`), for a caller that
    reads its state."""
    found = visible_thread(user, thread_id, busy=busy, latest_options=latest_options)
    if found is None:
        raise not_found(f"Thread {thread_id!r}")
    return found


def visible_thread(
    user: Any, thread_id: str, *, busy: bool = False, latest_options: bool = False
) -> Thread | None:
    """The thread, if `user` may see it (`busy` and `latest_options` as for `thread`);
    `None` otherwise. One statement, compiled once per visibility (the access policy's
    `visibility`: every request of `/lg` that names a thread asks it, some twice, and
    building the visibility rule cost more CPU than running it) and prepared."""
    key = access().visibility(user)
    if key is None:
        return None

    def build() -> QuerySet[Thread]:
        visible = threads(user).filter(id=THREAD_ID).order_by()  # a key: one row at most
        if busy:
            visible = with_busy(visible)
        if latest_options:
            visible = with_latest_options(visible)
        return visible

    statement = statements.compiled_model(
        ("lg visible thread", key, busy, latest_options), build, stand_ins=[THREAD_ID]
    )
    found = statements.models(statement, {THREAD_ID: thread_id}, prepared=True)
    return found[0] if found else None


def locked(user: Any, thread_id: str) -> Thread:
    """The thread, its row locked until the caller's transaction ends, if `user` may see
    it (`runtime.access.locked_if_visible`); 404 otherwise."""
    found = locked_if_visible(user, thread_id)
    if found is None:
        raise not_found(f"Thread {thread_id!r}")
    return found


def may_change(user: Any, thread: Thread) -> None:
    """403 unless `user`, who sees `thread`, may change it: the access policy's
    `change_refusal`, the rule of who may cancel its run."""
    refusal = access().change_refusal(user, thread)
    if refusal is not None:
        raise ProtocolError(403, refusal)


def changeable(user: Any, thread_id: str) -> Thread:
    """The thread locked (`locked`), if `user` may see it (404) and change it (403,
    `may_change`)."""
    found = locked(user, thread_id)
    may_change(user, found)
    return found


def claimed(user: Any, thread_id: str) -> None:
    """`thread_id`'s row inserted for a run that creates its thread (`if_not_exists:
    "create"`), in the caller's transaction; if the thread exists by now (created since
    the caller looked, by someone else), it is `changeable` by `user` or refused (404 or
    403), as a run on an existing thread is. The insert waits for another transaction's
    uncommitted insert of the same id, so no thread slips in between."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Thread._meta.db_table} (id) VALUES (%s) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            [thread_id],
        )
        created = cursor.fetchone() is not None
    if not created:
        changeable(user, thread_id)


def thread_again(token: str, thread_id: str, *, latest_options: bool = False) -> Thread:
    """The thread, if `token` still acts as a user who may see it; 401 or 404 otherwise
    (`latest_options` as for `thread`). A wait or a stream asks again before it answers
    or sends more: meanwhile the token may have been revoked, or the thread hidden from
    its user (its run asked a question a review policy gives to others)."""
    return thread(token_user(token), thread_id, latest_options=latest_options)


def run(user: Any, thread_id: str, run_id: str, *, record: bool = False) -> Run:
    """The thread's run, if `user` may see the thread; 404 otherwise. `record`: read with
    its protocol record in the same statement (`select_related`), for a caller that shows
    the run."""
    found = thread(user, thread_id)
    try:
        key = uuid.UUID(run_id)
    except ValueError:
        raise not_found(f"Run {run_id!r}") from None
    runs = Run.objects.filter(id=key, thread=found)
    match = (runs.select_related("protocol") if record else runs).first()
    if match is None:
        raise not_found(f"Run {run_id!r}")
    return match


def protocol_record(run: Run) -> ProtocolRun | None:
    """The run's protocol record (the request as the client sent it; `None` for a run
    started elsewhere than `/lg`): cached on it when `launch` has just stored it or the run
    was read with it (`run(..., record=True)`, whose `select_related` caches `None` for a
    run without one); read otherwise."""
    if not Run.protocol.is_cached(run):
        return ProtocolRun.objects.filter(run_id=run.id).first()
    try:
        return run.protocol
    except ProtocolRun.DoesNotExist:
        return None


def graph(thread: Thread, checkpointer: PostgresCheckpointer | None = None) -> CompiledGraph | None:
    """The thread's graph on Postgres (on `checkpointer`, or a new one), with the
    breakpoints of its latest run (so a pause at one of them reads as pending); `None` for
    a thread no graph has run on yet."""
    if not thread.graph:
        return None
    try:
        compiled = registry.compiled_graph(thread.graph, checkpointer or PostgresCheckpointer())
    except registry.UnknownGraphError:
        return None
    if hasattr(thread, LATEST_OPTIONS):
        latest: Any = getattr(thread, LATEST_OPTIONS)
    else:
        latest = _latest_runs(thread.pk).values_list("options", flat=True).first()
    return run_options.configured_graph(compiled, run_options.carried(latest))


def require_graph(thread: Thread) -> CompiledGraph:
    """The thread's graph; 409 while no graph ran on it (nothing to read or update)."""
    found = graph(thread)
    if found is None:
        if thread.graph:
            raise ProtocolError(
                409, f"Graph {thread.graph!r} of thread {thread.id!r} is no longer registered."
            )
        raise ProtocolError(
            409,
            f"Thread {thread.id!r} has no state yet: start a run on it first (its assistant "
            "decides the graph).",
        )
    return found


def snapshot(
    thread: Thread, checkpoint_id: str | None = None, *, subgraphs: bool = False
) -> StateSnapshot | None:
    """The thread's state (at `checkpoint_id`), or `None` without a graph; 404 for an
    unknown checkpoint."""
    compiled = graph(thread)
    if compiled is None:
        if checkpoint_id is not None:
            raise not_found(f"Checkpoint {checkpoint_id!r}")
        return None
    config: dict[str, Any] = {"configurable": {"thread_id": thread.id}}
    if checkpoint_id is not None:
        config["configurable"]["checkpoint_id"] = checkpoint_id
    try:
        return compiled.get_state(config, subgraphs=subgraphs)
    except CheckpointNotFoundError:
        raise not_found(f"Checkpoint {checkpoint_id!r}") from None


def snapshots(found: Sequence[Thread]) -> list[StateSnapshot | None]:
    """Each thread's state as `snapshot(thread)` gives it: its graph's latest state (each
    thread's graph with its latest run's breakpoints, `graph`), `None` without a graph.
    The graphs share one checkpointer, so the latest checkpoints of all the threads are
    read in one statement (`compiled.latest_states`), however many there are."""
    shared = PostgresCheckpointer()
    graphs = {t.pk: compiled for t in found if (compiled := graph(t, shared)) is not None}
    states = latest_states(graphs)
    return [states.get(t.pk) for t in found]


def busy(thread: Thread) -> bool:
    """Whether a run of the thread is waiting, queued or running (read with the thread by
    `with_busy`, asked here otherwise)."""
    known = getattr(thread, BUSY, None)
    if known is not None:
        return bool(known)
    return Run.objects.filter(thread=thread, status__in=ACTIVE).exists()


BUSY = "bw_busy"
"""The annotation `with_busy` adds."""


def with_busy(found: QuerySet[Thread]) -> QuerySet[Thread]:
    """`found`, each thread read with whether it is busy (`busy` then asks nothing)."""
    active = Run.objects.filter(thread=OuterRef("pk"), status__in=ACTIVE)
    return found.annotate(**{BUSY: Exists(active)})


LATEST_OPTIONS = "bw_latest_options"
"""The annotation `with_latest_options` adds."""


def with_latest_options(found: QuerySet[Thread]) -> QuerySet[Thread]:
    """`found`, each thread read with its latest run's options (`graph`, and so its
    state, then asks nothing more than the checkpointer)."""
    latest = _latest_runs(OuterRef("pk")).values("options")[:1]
    return found.annotate(**{LATEST_OPTIONS: Subquery(latest)})


def latest_runs(thread_ids: Collection[str]) -> dict[str, Run]:
    """Each thread's latest run by thread id, in one statement (none without a thread)."""
    if not thread_ids:
        return {}
    latest = Thread.objects.filter(pk__in=thread_ids).annotate(
        latest=Subquery(_latest_runs(OuterRef("pk")).values("pk")[:1])
    )
    return {run.thread_id: run for run in Run.objects.filter(pk__in=latest.values("latest"))}


def _latest_runs(thread_id: Any) -> QuerySet[Run]:
    return Run.objects.filter(thread_id=thread_id).order_by("-created_at")


__all__ = [
    "ACTIVE",
    "BUSY",
    "busy",
    "changeable",
    "claimed",
    "graph",
    "latest_runs",
    "locked",
    "may_change",
    "require_graph",
    "run",
    "snapshot",
    "snapshots",
    "thread",
    "thread_again",
    "threads",
    "visible_thread",
    "with_busy",
    "with_latest_options",
]
