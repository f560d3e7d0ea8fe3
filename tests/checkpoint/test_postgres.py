"""PostgresCheckpointer against the shared contract, plus what only Postgres can show."""

from __future__ import annotations

import contextlib
import json
import math
import operator
import random
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import IntegrityError, OperationalError, connection, connections, transaction

from beamweaver_core.checkpoint import MemoryCheckpointer, PostgresCheckpointer, known_values
from beamweaver_core.checkpoint.postgres_sql import LATEST, LOAD_HEADS
from beamweaver_core.checkpoint.types import Checkpoint, TaskRecord, TaskSpec
from beamweaver_core.exceptions import StaleWriterError, ThreadBusyError
from beamweaver_core.graph import END, START, Completed, Graph, Interrupted, interrupt
from beamweaver_core.models import Run, Thread
from tests.checkpoint.contract.checkpointer_contract import (
    CheckpointerContract,
    cfg,
    make_checkpoint,
)

# Real commits: the engine runs subgraph tasks on other threads, whose connections could
# not see a test transaction.
pytestmark = pytest.mark.django_db(transaction=True)

STORAGE_TABLES = ("bw_checkpoint", "bw_checkpoint_blob", "bw_checkpoint_write")


class TestPostgresCheckpointer(CheckpointerContract):
    @pytest.fixture
    def checkpointer(self) -> PostgresCheckpointer:
        return PostgresCheckpointer()


@pytest.fixture
def checkpointer() -> PostgresCheckpointer:
    return PostgresCheckpointer()


@pytest.fixture
def thread() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def scalar(sql: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        row = cursor.fetchone()
    assert row is not None
    return row[0]


def row_counts(thread: str | None = None) -> dict[str, int]:
    where = "" if thread is None else " WHERE thread_id = %s"
    return {
        t: scalar(f"SELECT count(*) FROM {t}{where}", [] if thread is None else [thread])
        for t in STORAGE_TABLES
    }


def running_run(thread: str, token: int) -> Run:
    Thread.objects.get_or_create(id=thread)
    return Run.objects.create(
        thread_id=thread, graph="g", status=Run.Status.RUNNING, fencing_token=token
    )


def in_thread(target: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run `target` on a thread with its own connection; its result or error lands in the dict."""
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["result"] = target()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            connections.close_all()

    worker = threading.Thread(target=body)
    worker.start()
    return worker, outcome


# -- schema ------------------------------------------------------------------------------


def test_the_database_refuses_a_second_checkpoint_at_the_same_position(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """The no-fork rule is a real unique constraint, not a check in Python."""
    checkpointer.commit(thread, "", [make_checkpoint(thread, 1, {"v": 1})])
    with pytest.raises(IntegrityError) as info, connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO bw_checkpoint (thread_id, ns, checkpoint_id, seq, step, parent_id, source, "
            "created_at, document, metadata) VALUES (%s, '', %s, 1, 0, NULL, 'loop', now(), '{}', '{}')",
            [thread, uuid.uuid4().hex],
        )
    assert info.value.__cause__.diag.constraint_name == "bw_checkpoint_one_per_seq"


def test_the_latest_checkpoint_is_read_from_the_unique_index(thread: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT seq FROM bw_checkpoint WHERE thread_id = %s AND ns = '' ORDER BY seq DESC LIMIT 1",
            [thread],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "Index Only Scan Backward using bw_checkpoint_one_per_seq" in plan or (
        "Index Scan Backward using bw_checkpoint_one_per_seq" in plan
    )


# -- values ------------------------------------------------------------------------------


def test_numbers_keep_their_type_across_a_round_trip(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """Payloads are stored as the encoder's text: jsonb would turn 1e16 into an int."""
    values = {"big": 1e16, "huge": 1e300, "neg_zero": -0.0, "nested": {"x": [1e20, 2**62]}}
    checkpointer.commit(thread, "", [make_checkpoint(thread, 1, values)])
    loaded = checkpointer.load(thread)
    assert loaded is not None
    assert loaded.values == values
    assert type(loaded.values["big"]) is float and type(loaded.values["nested"]["x"][0]) is float
    assert math.copysign(1.0, loaded.values["neg_zero"]) == -1.0
    checkpointer.commit(thread, "", [make_checkpoint(thread, 2, loaded.values, parent=loaded)])


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("nul", "the string contains a NUL character"),
        ("surrogate", "the string contains a lone surrogate"),
        ("nan", "nan is not valid JSON"),
    ],
)
def test_values_postgres_cannot_store_never_reach_the_database(
    checkpointer: PostgresCheckpointer, thread: str, kind: str, problem: str
) -> None:
    """A node producing such a value mid-run fails with its state path; no row changes."""
    bad = {"nul": "a\x00b", "surrogate": "x\ud800y", "nan": math.nan}
    graph = (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("say", lambda s: {"messages": [{"text": bad.get(s["kind"], "fine")}]})
        .add_edge(START, "say")
        .add_edge("say", END)
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"messages": [{"text": "hello"}], "kind": "ok"}, cfg(thread))
    before = row_counts()
    with pytest.raises(TypeError) as info:
        graph.invoke({"messages": [], "kind": kind}, cfg(thread))
    # The encoder numbers the index within the appended items, not the whole list.
    assert str(info.value).startswith("Cannot store the value at state path 'messages[")
    assert f"].text': {problem}" in str(info.value)
    assert row_counts() == before
    assert graph.get_state(cfg(thread)).values["messages"] == [{"text": "hello"}, {"text": "fine"}]


# -- growth and transactions -------------------------------------------------------------


def test_storage_grows_linearly_with_appended_messages(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """200 steps each appending a ~500-byte message: bytes stay within 2.5x the raw bytes at
    every 50 steps (about 2.2x: one delta blob and two checkpoint rows per step, no snapshot
    before SNAPSHOT_MIN items), and no 50-step stretch costs much more than the first."""
    words = ("the", "run", "paused", "at", "a", "tool", "call", "while", "reviewer", "read", "it")
    rng = random.Random(3)

    def say(state: dict[str, Any]) -> dict[str, Any]:
        text = " ".join(rng.choice(words) for _ in range(120))[:480]
        return {"messages": [{"role": "user", "text": text, "n": len(state["messages"])}]}

    graph = (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("say", say)
        .add_edge(START, "say")
        .add_edge("say", END)
        .compile(checkpointer=checkpointer)
    )
    sizes = []
    for step in range(1, 201):
        graph.invoke({"messages": []}, cfg(thread))
        if step % 50 == 0:
            messages = graph.get_state(cfg(thread)).values["messages"]
            raw = sum(len(json.dumps(m)) for m in messages)
            stored = checkpointer.stored_bytes(thread)
            assert stored <= 2.5 * raw, f"after {step} steps: {stored} bytes stored for {raw} raw"
            sizes.append(stored)
    assert [m["n"] for m in graph.get_state(cfg(thread)).values["messages"]] == list(range(200))
    increments = [b - a for a, b in zip([0, *sizes], sizes, strict=False)]
    assert max(increments) <= 1.5 * increments[0], increments


@contextlib.contextmanager
def recording_statements(statements: list[str]) -> Iterator[None]:
    """Record every statement sent through Django's or the checkpointer's own cursors."""
    real = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        text = str(query).lstrip()
        if text and not text.upper().startswith(("SET ", "SHOW ")):  # not the pool's health checks
            statements.append(text)
        return real(self, query, params, **kwargs)

    def record(run: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql.lstrip())
        return run(sql, params, many, context)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        with connection.execute_wrapper(record):
            yield
    finally:
        psycopg.Cursor.execute = real  # type: ignore[method-assign]


def test_each_super_step_is_one_transaction(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """A 10-node line: one write statement (so one transaction) per super-step, plus the read."""
    builder = Graph().add_reducer("log", operator.add)
    previous = START
    for i in range(10):
        builder.add_node(f"n{i}", lambda s, i=i: {"log": [i]})
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    builder.add_edge(previous, END)
    graph = builder.compile(checkpointer=checkpointer)
    statements: list[str] = []
    commits: list[int] = []
    real_commit = connection.commit

    def counting_commit() -> None:
        commits.append(1)
        real_commit()

    connection.commit = counting_commit  # type: ignore[method-assign]
    try:
        with recording_statements(statements):
            assert graph.invoke({"log": []}, cfg(thread)).state == {"log": list(range(10))}
    finally:
        del connection.commit
    writes = [s for s in statements if s.startswith("WITH")]
    reads = [s for s in statements if not s.startswith("WITH")]
    assert (len(writes), len(reads), len(commits)) == (10, 1, 0)
    # Ground truth from the rows: 11 checkpoints (input + 10 steps) written by 10 transactions.
    assert scalar("SELECT count(*) FROM bw_checkpoint WHERE thread_id = %s", [thread]) == 11
    assert (
        scalar(
            "SELECT count(DISTINCT xmin::text) FROM bw_checkpoint WHERE thread_id = %s", [thread]
        )
        == 10
    )


def test_a_write_bigger_than_one_statement_is_still_one_transaction(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    tasks = tuple(TaskSpec(f"task-{i}", "n") for i in range(2500))
    new = make_checkpoint(thread, 1, {"v": 1}, tasks=tasks)
    records = [
        (new.checkpoint.id, t.id, TaskRecord("done", writes=(("v", i),)))
        for i, t in enumerate(tasks)
    ]
    checkpointer.commit(thread, "", [new], records)
    loaded = checkpointer.load(thread)
    assert loaded is not None and len(loaded.records) == 2500
    assert loaded.records["task-7"] == TaskRecord("done", writes=(("v", 7),))
    xids = scalar(
        "SELECT count(DISTINCT xmin::text) FROM (SELECT xmin FROM bw_checkpoint WHERE thread_id = %s "
        "UNION ALL SELECT xmin FROM bw_checkpoint_write WHERE thread_id = %s) rows",
        [thread, thread],
    )
    assert xids == 1


def test_a_refused_write_inside_an_outer_transaction_leaves_it_usable(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    first = make_checkpoint(thread, 1, {"v": 1})
    checkpointer.commit(thread, "", [first])
    with transaction.atomic():
        Thread.objects.filter(id=thread).update(status=Thread.Status.RUNNING)
        with pytest.raises(ThreadBusyError):
            checkpointer.commit(
                thread, "", [make_checkpoint(thread, 1, {"v": 2}, parent=first.checkpoint)]
            )
        assert Thread.objects.get(id=thread).status == Thread.Status.RUNNING
    assert Thread.objects.get(id=thread).status == Thread.Status.RUNNING


# -- reading -----------------------------------------------------------------------------


def test_load_reads_a_checkpoint_with_its_records_and_blobs_in_one_statement(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    new = make_checkpoint(
        thread, 1, {"a": [1], "b": {"k": "v"}, "c": "x" * 300, "n": 1}, tasks=(TaskSpec("t", "t"),)
    )
    checkpointer.commit(
        thread, "", [new], [(new.checkpoint.id, "t", TaskRecord("done", writes=(("n", 2),)))]
    )
    statements: list[str] = []
    with recording_statements(statements):
        loaded = checkpointer.load(thread)
    assert loaded is not None and loaded.values == {
        "a": [1],
        "b": {"k": "v"},
        "c": "x" * 300,
        "n": 1,
    }
    assert loaded.records == {"t": TaskRecord("done", writes=(("n", 2),))}
    assert len(statements) == 1


def test_load_rebuilds_a_delta_chain_in_one_statement(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """The blob range of each channel comes from the stored document: a list stored as a
    snapshot and appended deltas is rebuilt whole, from the head or from an older id."""
    graph = (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("say", lambda s: {"messages": [len(s["messages"])], "big": "y" * 300})
        .add_edge(START, "say")
        .add_edge("say", END)
        .compile(checkpointer=checkpointer)
    )
    for _ in range(5):
        graph.invoke({"messages": []}, cfg(thread))
    middle = list(checkpointer.history(thread))[4]
    statements: list[str] = []
    with recording_statements(statements):
        head = checkpointer.load(thread)
        older = checkpointer.load(thread, "", middle.id)
    assert len(statements) == 2
    assert head is not None and head.values["messages"] == [0, 1, 2, 3, 4]
    assert head.values["big"] == "y" * 300
    assert older is not None and older.values == middle.values
    assert older.values["messages"] == [0, 1, 2]


def test_history_pages_through_long_threads(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """History is read a page at a time; across pages it matches the memory checkpointer."""

    def build(saver: Any) -> Any:
        return (
            Graph()
            .add_reducer("items", operator.add)
            .add_node("add", lambda s: {"items": [len(s["items"])]})
            .add_edge(START, "add")
            .add_edge("add", END)
            .compile(checkpointer=saver)
        )

    memory = MemoryCheckpointer()
    for saver in (checkpointer, memory):
        graph = build(saver)
        for _ in range(65):
            graph.invoke({"items": []}, cfg(thread))

    def summary(history: Iterator[Checkpoint]) -> list[tuple[int, dict[str, Any]]]:
        return [(c.seq, c.values) for c in history]

    assert summary(checkpointer.history(thread)) == summary(memory.history(thread))
    assert [c.seq for c in checkpointer.history(thread)] == list(range(130, 0, -1))
    cut = next(c.id for c in checkpointer.history(thread) if c.seq == 101)
    assert [c.seq for c in checkpointer.history(thread, before=cut, limit=60)] == list(
        range(100, 40, -1)
    )
    assert [c.seq for c in checkpointer.history(thread, limit=50)] == list(range(130, 80, -1))
    assert list(checkpointer.history(thread, before="unknown")) == []


def chat_turns(checkpointer: PostgresCheckpointer, thread: str, turns: int) -> Any:
    """A chat graph: each turn's `say` appends one ~500-byte message."""
    graph = (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("say", lambda s: {"messages": [{"n": len(s["messages"]), "text": "w" * 480}]})
        .add_edge(START, "say")
        .add_edge("say", END)
        .compile(checkpointer=checkpointer)
    )
    for _ in range(turns):
        graph.invoke({"messages": []}, cfg(thread))
    return graph


def test_task_results_survive_a_round_trip_through_the_database(thread: str) -> None:
    """Results read back by a process that never saw the writes (no remembered values):
    the same, entry by entry, as the memory checkpointer's; the stored writes point into
    the blob holding the appended message, which is stored once."""
    memory = MemoryCheckpointer()
    chat_turns(PostgresCheckpointer(), thread, 3)
    expected = chat_turns(memory, thread, 3)

    known_values.VALUES.forget_thread("default", thread)
    graph = chat_turns(PostgresCheckpointer(), thread, 0)
    history = list(graph.get_state_history(cfg(thread)))
    results = [[(t.name, t.result) for t in s.tasks] for s in history]
    assert results == [
        [(t.name, t.result) for t in s.tasks] for s in expected.get_state_history(cfg(thread))
    ]
    assert results[1] == [("say", {"messages": [{"n": 2, "text": "w" * 480}]})]
    assert [graph.get_state(s.config).tasks for s in history] == [s.tasks for s in history]
    stored = scalar(
        "SELECT string_agg(task_writes, ' ') FROM bw_checkpoint WHERE thread_id = %s", [thread]
    )
    assert stored.count('"say"') == 0 and "w" * 480 not in stored
    assert stored.count('[["messages",0,1]]') == 3


def test_results_cost_no_statement_of_their_own(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """A step's writes go into its checkpoint's row, in the step's one statement; reading
    them back, a checkpoint by id is still one statement and a history page two (the rows,
    then the page's blobs), whichever page holds the child."""
    statements: list[str] = []
    with recording_statements(statements):
        graph = chat_turns(checkpointer, thread, 2)
    # One write per invoke (its input checkpoint and its one step), as without results.
    assert len([s for s in statements if s.startswith("WITH")]) == 2
    history = list(checkpointer.history(thread))
    assert history[1].results and history[3].results
    middle = history[1].id
    statements.clear()
    with recording_statements(statements):
        by_id = checkpointer.load(thread, "", middle)
        page = list(checkpointer.history(thread, before=history[0].id, limit=1))
    assert by_id is not None and by_id.results == page[0].results == history[1].results
    assert len(statements) == 3
    assert graph.get_state(cfg(thread, checkpoint_id=middle)).tasks[0].result == {
        "messages": [{"n": 1, "text": "w" * 480}]
    }


def test_history_finds_each_rows_step_child_by_one_index_probe(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """The step child of each row of a history page is one probe of the (thread, ns, seq)
    index, not a scan of the thread's checkpoints per row (what the planner may do with a
    lateral subquery it pulls up into a join)."""
    chat_turns(checkpointer, thread, 40)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE bw_checkpoint")
        # As the query-plan check does: a table this small is read whole whatever it has.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            f"EXPLAIN (ANALYZE, COSTS OFF) {LATEST}",
            {"thread": thread, "ns": "", "limit": 50, "checkpoint_id": None},
        )
        plan = [line for (line,) in cursor.fetchall()]
    probe = next(i for i, line in enumerate(plan) if "on bw_checkpoint k" in line)
    assert "bw_checkpoint_one_per_seq" in plan[probe], plan
    assert "(seq = (c.seq + 1))" in plan[probe + 1], plan


def test_the_heads_of_any_number_of_threads_are_read_in_one_statement(
    checkpointer: PostgresCheckpointer,
) -> None:
    """One statement for one thread or six (each head with its records and blobs), and
    none for no thread."""
    threads = [f"heads-{i}-{uuid.uuid4().hex[:6]}" for i in range(6)]
    for thread in threads:
        chat_turns(checkpointer, thread, 2)
    counts = []
    for asked in ([], threads[:1], threads):
        statements: list[str] = []
        with recording_statements(statements):
            heads = checkpointer.load_heads(asked)
        assert [len(heads[t].values["messages"]) for t in asked] == [2] * len(asked)
        counts.append(len(statements))
    assert counts == [0, 1, 1]


def test_the_heads_of_many_threads_are_found_by_one_index_probe_each(
    checkpointer: PostgresCheckpointer,
) -> None:
    """`LOAD_HEADS` finds each thread's head by one backward probe of the (thread, ns,
    seq) index, its records and its blobs by their own indexes: no table is read whole
    for the threads asked."""
    threads = [f"probe-{i}-{uuid.uuid4().hex[:6]}" for i in range(5)]
    for thread in threads:
        chat_turns(checkpointer, thread, 5)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE bw_checkpoint")
        cursor.execute("ANALYZE bw_checkpoint_blob")
        # As the query-plan check does: a table this small is read whole whatever it has.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {LOAD_HEADS}", {"threads": threads, "ns": ""})
        plan = [line for (line,) in cursor.fetchall()]
    scans = [line.split("->")[-1].split("(actual")[0].strip() for line in plan if " on " in line]
    assert scans == [
        "Function Scan on unnest wanted",
        "Index Scan Backward using bw_checkpoint_one_per_seq on bw_checkpoint",
        "Index Scan using bw_checkpoint_write_unique on bw_checkpoint_write",
        "Function Scan on jsonb_each_text v",
        "Index Scan using bw_checkpoint_blob_unique on bw_checkpoint_blob blob",
    ], plan
    assert "loops=5" in next(line for line in plan if "bw_checkpoint_one_per_seq" in line)


def test_each_os_thread_uses_its_own_connection(checkpointer: PostgresCheckpointer) -> None:
    threads = [f"os-{i}-{uuid.uuid4().hex[:6]}" for i in range(6)]

    def work(name: str) -> tuple[int, dict[str, Any]]:
        parent = None
        for seq in range(1, 21):
            new = make_checkpoint(name, seq, {"n": seq}, parent=parent)
            checkpointer.commit(name, "", [new])
            parent = new.checkpoint
        loaded = checkpointer.load(name)
        assert loaded is not None
        return loaded.seq, loaded.values

    workers = [in_thread(lambda name=name: work(name)) for name in threads]
    for worker, _ in workers:
        worker.join(30)
    assert [outcome.get("result") for _, outcome in workers] == [(20, {"n": 20})] * 6


# -- fencing -----------------------------------------------------------------------------


def test_a_write_with_the_current_token_succeeds(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    run = running_run(thread, token=2)
    checkpointer.fenced(run.id, 2).commit(thread, "", [make_checkpoint(thread, 1, {"v": 1})])
    assert row_counts(thread)["bw_checkpoint"] == 1


@pytest.mark.parametrize(("token", "status"), [(1, "running"), (2, "queued"), (2, "succeeded")])
def test_a_stale_writer_is_refused_and_writes_nothing(
    checkpointer: PostgresCheckpointer, thread: str, token: int, status: str
) -> None:
    first = make_checkpoint(thread, 1, {"v": [1]}, tasks=(TaskSpec("t", "t"),))
    checkpointer.commit(thread, "", [first])
    run = running_run(thread, token=2)
    Run.objects.filter(id=run.id).update(status=status)
    before = row_counts(thread)
    stale = checkpointer.fenced(run.id, token)
    with pytest.raises(StaleWriterError) as info:
        stale.commit(
            thread,
            "",
            [make_checkpoint(thread, 2, {"v": [1, 2]}, parent=first.checkpoint)],
            [(first.checkpoint.id, "t", TaskRecord("done", writes=(("v", [2]),)))],
        )
    assert str(info.value) == (
        f"Run {run.id} no longer owns thread {thread!r}: its fencing token {token} is stale or "
        "the run is no longer running, so another worker has taken it over. Nothing was "
        "written; stop this run and let the new owner continue the thread."
    )
    assert row_counts(thread) == before


def test_a_stale_writer_is_told_it_is_stale_even_when_its_position_is_taken(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    first = make_checkpoint(thread, 1, {"v": 1})
    checkpointer.commit(thread, "", [first])
    run = running_run(thread, token=3)
    checkpointer.fenced(run.id, 3).commit(
        thread, "", [make_checkpoint(thread, 2, {"v": 2}, parent=first.checkpoint)]
    )
    with pytest.raises(StaleWriterError):
        checkpointer.fenced(run.id, 2).commit(
            thread, "", [make_checkpoint(thread, 2, {"v": 9}, parent=first.checkpoint)]
        )


def test_a_reclaim_waits_for_an_in_flight_fenced_write(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """The write locks the run row FOR SHARE: the token bump of a re-claim cannot commit
    between the fence check and the write's commit."""
    run = running_run(thread, token=1)

    def reclaim() -> int:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '300ms'")
            cursor.execute(
                "UPDATE bw_run SET fencing_token = fencing_token + 1 WHERE id = %s", [run.id]
            )
            return cursor.rowcount

    with transaction.atomic():
        checkpointer.fenced(run.id, 1).commit(thread, "", [make_checkpoint(thread, 1, {"v": 1})])
        worker, outcome = in_thread(reclaim)
        worker.join(10)
        assert isinstance(outcome.get("error"), OperationalError)
        assert "lock timeout" in str(outcome["error"])
    worker, outcome = in_thread(reclaim)
    worker.join(10)
    assert outcome == {"result": 1}


def test_a_fenced_write_that_waits_for_a_reclaim_sees_the_new_token(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    run = running_run(thread, token=1)
    bumped, release = threading.Event(), threading.Event()

    def reclaim() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE bw_run SET fencing_token = 2 WHERE id = %s", [run.id])
            bumped.set()
            release.wait(10)

    def write() -> None:
        checkpointer.fenced(run.id, 1).commit(thread, "", [make_checkpoint(thread, 1, {"v": 1})])

    claimer, _ = in_thread(reclaim)
    assert bumped.wait(10)
    writer, outcome = in_thread(write)
    writer.join(0.3)
    assert writer.is_alive(), "the fenced write should wait for the re-claim's row lock"
    release.set()
    claimer.join(10)
    writer.join(10)
    assert isinstance(outcome.get("error"), StaleWriterError)
    assert row_counts(thread)["bw_checkpoint"] == 0


# -- the write hook ------------------------------------------------------------------------


def test_the_write_hook_runs_inside_the_write_transaction(
    checkpointer: PostgresCheckpointer, thread: str
) -> None:
    """Rows the hook writes commit with the checkpoint; a failing hook undoes both."""
    run = running_run(thread, token=1)
    calls: list[str] = []

    def mark(cursor: Any) -> None:
        cursor.execute(
            "UPDATE bw_thread SET metadata = '{\"marked\": true}' WHERE id = %s", [thread]
        )
        calls.append("mark")

    def fail(cursor: Any) -> None:
        mark(cursor)
        raise RuntimeError("event store down")

    first = make_checkpoint(thread, 1, {"v": 1})
    checkpointer.fenced(run.id, 1, on_write=mark).commit(thread, "", [first])
    assert Thread.objects.get(id=thread).metadata == {"marked": True}
    Thread.objects.filter(id=thread).update(metadata={})
    with pytest.raises(RuntimeError, match="event store down"):
        checkpointer.fenced(run.id, 1, on_write=fail).commit(
            thread, "", [make_checkpoint(thread, 2, {"v": 2}, parent=first.checkpoint)]
        )
    assert Thread.objects.get(id=thread).metadata == {}
    assert row_counts(thread)["bw_checkpoint"] == 1
    with pytest.raises(StaleWriterError):
        checkpointer.fenced(run.id, 0, on_write=mark).commit(
            thread, "", [make_checkpoint(thread, 2, {"v": 2}, parent=first.checkpoint)]
        )
    assert calls == ["mark", "mark"]


async def test_a_subgraph_without_a_checkpointer_of_its_own_pauses_and_resumes_under_ainvoke(
    thread: str,
) -> None:
    """A subgraph saves to its root's checkpointer, so under `ainvoke` its reads of that
    checkpointer run off the event loop like the root's (Django refuses database calls
    made on it)."""
    inner = (
        Graph(name="inner")
        .add_node("ask", lambda s: {"answer": interrupt("Proceed?")})
        .add_edge(START, "ask")
        .compile()
    )
    outer = (
        Graph(name="outer")
        .add_node("inner", inner)
        .add_edge(START, "inner")
        .compile(checkpointer=PostgresCheckpointer())
    )
    paused = await outer.ainvoke({}, cfg(thread))
    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value == "Proceed?"
    done = await outer.aresume("yes", cfg(thread))
    assert done == Completed(state={"answer": "yes"})


async def test_an_async_run_gives_back_the_connections_its_threads_used() -> None:
    """An async run hands the blocking checkpointer's calls to asyncio's executor threads;
    each kept a pooled connection checked out for good (the end of the test session then
    found them still connected to the test database, and a long-lived server would run out
    of its pool)."""
    from asgiref.sync import sync_to_async
    from django.db import connection

    def checked_out() -> int:
        stats = connection.pool.get_stats()
        return int(stats["pool_size"] - stats["pool_available"])

    graph = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("a", lambda s: {"items": ["a"]})
        .add_node("b", lambda s: {"items": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=PostgresCheckpointer())
    )
    before = await sync_to_async(checked_out)()

    for n in range(4):
        await graph.ainvoke({"items": []}, {"configurable": {"thread_id": f"async-pool-{n}"}})

    assert await sync_to_async(checked_out)() <= before


def test_a_live_stream_gives_back_the_connection_its_run_thread_used() -> None:
    """`iter_events` runs the graph on a thread of its own, which ended with the blocking
    checkpointer's pooled connection still checked out: the pool counted the slot as taken
    for good, and the connection stayed open until the garbage collector finalized it."""

    def checked_out() -> int:
        stats = connection.pool.get_stats()
        return int(stats["pool_size"] - stats["pool_available"])

    graph = (
        Graph()
        .add_node("a", lambda s: {"done": True})
        .add_edge(START, "a")
        .compile(checkpointer=PostgresCheckpointer())
    )
    connection.ensure_connection()
    before = checked_out()

    for n in range(4):
        events = list(graph.iter_events({}, {"configurable": {"thread_id": f"live-pool-{n}"}}))
        assert events[-1].event == "run.completed"

    assert checked_out() == before
