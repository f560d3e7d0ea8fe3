"""Long threads: a process reloads only what was written since it last read or wrote the
head (`checkpoint.known_values`), and what it reads is exactly what a cold read gives."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction

from beamweaver_core.checkpoint import PostgresCheckpointer, known_values, postgres
from beamweaver_core.checkpoint.known_values import KnownHead, KnownValues
from beamweaver_core.checkpoint.postgres_rows import FIELDS
from beamweaver_core.checkpoint.types import Checkpoint
from beamweaver_core.graph import END, START, Graph
from beamweaver_core.messages import Message
from tests.checkpoint.contract.checkpointer_contract import cfg

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def checkpointer() -> Iterator[PostgresCheckpointer]:
    known_values.VALUES.clear()
    yield PostgresCheckpointer()
    known_values.VALUES.clear()


@pytest.fixture
def thread() -> str:
    return f"long-{uuid.uuid4().hex[:12]}"


def chat(checkpointer: PostgresCheckpointer, respond: Any = None) -> Any:
    def default(state: dict[str, Any]) -> dict[str, Any]:
        turn = state["turn"]
        return {
            "messages": [
                Message(role="assistant", content=f"answer {turn} " + "é" * 40, name=f"m{turn}"),
                {"turn": turn, "nested": {"ok": [turn, None, 1.5]}},
            ],
            "summary": {"turns": turn + 1},
        }

    return (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("respond", respond or default)
        .add_edge(START, "respond")
        .add_edge("respond", END)
        .compile(checkpointer=checkpointer)
    )


def cold(checkpointer: PostgresCheckpointer, thread: str) -> Checkpoint | None:
    """The head as a process that never saw the thread reads it."""
    saved = known_values.VALUES.get(("default", thread, ""))
    known_values.VALUES.put(("default", thread, ""), None)
    try:
        return checkpointer.load(thread)
    finally:
        known_values.VALUES.put(("default", thread, ""), saved)


def assert_exact(checkpointer: PostgresCheckpointer, thread: str) -> Checkpoint:
    warm = checkpointer.load(thread)
    fresh = cold(checkpointer, thread)
    assert warm is not None and fresh is not None
    assert warm.id == fresh.id
    assert warm.values == fresh.values
    assert [type(m) for m in warm.values["messages"]] == [type(m) for m in fresh.values["messages"]]
    return warm


def blob_rows_read(load: Any) -> int:
    """Blob rows the load's statement returned (the `versions` array of its one row).

    Not the server's tuple counters (`pg_stat_xact_user_tables`): they count what the plan
    scanned, and on a table this small the planner may choose a sequential scan per
    channel once autovacuum has analysed it (the same test then read 600 "fetched" rows
    for a load that returned none). At scale the blob index is used: the query-plan
    regression check (tests/bench/test_query_plans.py) pins that."""
    returned: list[int] = []
    real = postgres.decode_fetched

    def counting(fetched: Any, *args: Any) -> Any:
        returned.append(len(fetched[FIELDS + 1] or ()))  # after the row: channels, versions
        return real(fetched, *args)

    postgres.decode_fetched = counting  # type: ignore[assignment]
    try:
        load()
    finally:
        postgres.decode_fetched = real  # type: ignore[assignment]
    assert len(returned) == 1, "one load, one statement"
    return returned[0]


def test_a_long_chat_reloads_only_what_was_written_since(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    graph = chat(checkpointer)
    for turn in range(150):  # 300 messages: a snapshot after 256, then deltas
        graph.invoke({"turn": turn}, cfg(thread))
    key = ("default", thread, "")

    # This process wrote the head: nothing to fetch.
    assert blob_rows_read(lambda: checkpointer.load(thread)) == 0
    # A process that never saw the thread reads the snapshot and every delta since (each
    # channel by its index range), not every blob of the thread.
    head = checkpointer.load(thread)
    assert head is not None
    low = head.chains["messages"][0]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE channel = 'messages' AND version >= %s), count(*) "
            "FROM bw_checkpoint_blob WHERE thread_id = %s",
            [low, thread],
        )
        chain, everything = cursor.fetchone()
    assert 1 < chain < everything
    assert blob_rows_read(lambda: cold(checkpointer, thread)) == chain + 1  # and the summary

    # Another process continued the thread by one turn: only that turn's blobs are read.
    before = known_values.VALUES.get(key)
    graph.invoke({"turn": 150}, cfg(thread))
    known_values.VALUES.put(key, before)
    assert blob_rows_read(lambda: checkpointer.load(thread)) == 2  # messages and summary
    head = assert_exact(checkpointer, thread)
    assert len(head.values["messages"]) == 302
    assert head.values["summary"] == {"turns": 151}


def test_what_is_remembered_is_exactly_what_a_cold_read_gives(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    def mutating(state: dict[str, Any]) -> dict[str, Any]:
        state["messages"].append("written in place, never returned")  # a node's bug
        state["summary"]["turns"] = -1
        return {"messages": [f"turn {state['turn']}"]}

    graph = chat(checkpointer)
    for turn in range(5):
        graph.invoke({"turn": turn}, cfg(thread))
    assert_exact(checkpointer, thread)

    # In-place mutation by a node reaches neither the database nor what is remembered.
    chat(checkpointer, mutating).invoke({"turn": 5}, cfg(thread))
    head = assert_exact(checkpointer, thread)
    assert "written in place, never returned" not in head.values["messages"]
    assert head.values["messages"][-1] == "turn 5"
    assert head.values["summary"] == {"turns": 5}

    # A node that replaces the list (a full value, not a delta).
    replace = (
        Graph()
        .add_node("respond", lambda s: {"messages": ["restart"]})
        .add_edge(START, "respond")
        .compile(checkpointer=checkpointer)
    )
    replace.invoke({"turn": 6}, cfg(thread))
    assert assert_exact(checkpointer, thread).values["messages"] == ["restart"]
    for turn in range(7, 10):
        graph.invoke({"turn": turn}, cfg(thread))
    assert len(assert_exact(checkpointer, thread).values["messages"]) == 7

    # update_state, then time travel: a fork from an old checkpoint, continued.
    graph.update_state(cfg(thread), {"messages": ["edited"]}, as_node="respond")
    assert assert_exact(checkpointer, thread).values["messages"][-1] == "edited"
    old = list(checkpointer.history(thread))[12]
    graph.invoke({"turn": 99}, cfg(thread, checkpoint_id=old.id))
    forked = assert_exact(checkpointer, thread)
    assert forked.values["messages"][: len(old.values["messages"])] == old.values["messages"]

    # A write rolled back with the caller's transaction is not remembered as stored.
    with pytest.raises(RuntimeError), transaction.atomic():
        graph.invoke({"turn": 100}, cfg(thread))
        raise RuntimeError("the caller's transaction fails")
    assert assert_exact(checkpointer, thread).id == forked.id


def test_a_thread_deleted_and_recreated_elsewhere_is_read_from_the_database(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    graph = chat(checkpointer)
    for turn in range(3):
        graph.invoke({"turn": turn}, cfg(thread))
    key = ("default", thread, "")
    stale = known_values.VALUES.get(key)
    assert stale is not None
    # Another process deletes the thread and starts it again under the same id, writing the
    # same positions (seq, versions) with other values.
    with connection.cursor() as cursor:
        for table in ("bw_checkpoint_write", "bw_checkpoint_blob", "bw_checkpoint"):
            cursor.execute(f"DELETE FROM {table} WHERE thread_id = %s", [thread])
    other = chat(checkpointer, lambda s: {"messages": [f"other {s['turn']}"], "summary": {}})
    for turn in range(3):
        other.invoke({"turn": turn}, cfg(thread))
    known_values.VALUES.put(key, stale)  # what this process still remembers
    head = checkpointer.load(thread)
    assert head is not None
    assert head.values["messages"] == ["other 0", "other 1", "other 2"]
    assert head.values["summary"] == {}


def test_remembered_heads_are_bounded_by_their_encoded_size() -> None:
    values = KnownValues(max_bytes=100)

    def entry(anchor: str, size: int) -> KnownHead:
        return KnownHead(anchor, {"m": 1}, {"m": [anchor]}, {"m": size})

    values.put(("d", "a", ""), entry("a", 40))
    values.put(("d", "b", ""), entry("b", 40))
    assert values.get(("d", "a", "")) is not None  # a is now the most recently used
    values.put(("d", "c", ""), entry("c", 40))
    assert values.get(("d", "b", "")) is None
    assert values.get(("d", "a", "")) is not None and values.get(("d", "c", "")) is not None
    values.put(("d", "huge", ""), entry("huge", 101))
    assert values.get(("d", "huge", "")) is None and len(values) == 2
    values.forget_thread("d", "a")
    assert values.get(("d", "a", "")) is None and len(values) == 1
