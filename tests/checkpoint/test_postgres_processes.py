"""Two real processes resume the same paused thread at once: one wins, the line never forks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from beamweaver_core.checkpoint import PostgresCheckpointer
from tests.support import narrow_subgraph
from tests.support.processes import child_env
from tests.support.resume_race import build_graph

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "tests" / "support" / "resume_race.py"
ROUNDS = 5

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]


def database_url_for_children() -> str:
    """A DATABASE_URL for the test database this process uses (unix socket or TCP)."""
    connection.ensure_connection()
    info = connection.connection.info
    user = f"{quote(info.user, safe='')}:{quote(info.password or '', safe='')}"
    if info.host.startswith("/"):
        return f"postgresql://{user}@:{info.port}/{quote(info.dbname)}?host={quote(info.host)}"
    return f"postgresql://{user}@{info.host}:{info.port}/{quote(info.dbname)}"


def forks(thread: str) -> list[tuple[str, int]]:
    """Checkpoints of the thread's main line that have more than one child."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parent_id, count(*) FROM bw_checkpoint WHERE thread_id = %s AND ns = '' "
            "AND parent_id IS NOT NULL GROUP BY parent_id HAVING count(*) > 1",
            [thread],
        )
        return cursor.fetchall()


def main_line(thread: str) -> list[tuple[int, str, str | None]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq, checkpoint_id, parent_id FROM bw_checkpoint WHERE thread_id = %s AND ns = '' ORDER BY seq",
            [thread],
        )
        return cursor.fetchall()


def test_two_processes_resuming_one_thread_exactly_one_wins(tmp_path: Path) -> None:
    threads = [f"race-{i}-{uuid.uuid4().hex[:8]}" for i in range(ROUNDS)]
    graph = build_graph(PostgresCheckpointer())
    for thread in threads:
        paused = graph.invoke({}, {"configurable": {"thread_id": thread}})
        assert paused.interrupt.value == "who resumes?"
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_children(),
        "DJANGO_SETTINGS_MODULE": "beamweaver_core.settings",
        "PYTHONPATH": str(ROOT),
    }
    children = [
        subprocess.Popen(
            [sys.executable, str(CHILD), name, str(tmp_path), *threads],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
        outputs.append({line["thread"]: line for line in map(json.loads, out.splitlines())})

    for thread in threads:
        outcomes = {"alpha": outputs[0][thread], "beta": outputs[1][thread]}
        winners = [name for name, line in outcomes.items() if line["outcome"] == "ok"]
        losers = [name for name, line in outcomes.items() if line["outcome"] == "busy"]
        assert len(winners) == len(losers) == 1, outcomes
        assert "moved on while this run was writing" in outcomes[losers[0]]["detail"]
        state = graph.get_state({"configurable": {"thread_id": thread}}).values
        assert state["final"] == outcomes[winners[0]]["detail"] == f"resumed by {winners[0]}"
        assert forks(thread) == []
        line = main_line(thread)
        assert [seq for seq, _, _ in line] == [1, 2, 3]
        assert [parent for _, _, parent in line] == [None, line[0][1], line[1][1]]


def test_a_narrow_subgraph_resumes_in_another_process() -> None:
    """Issue 20: a subgraph declaring only some of its parent's keys pauses in this
    process and is resumed in another; its private key comes back from its own namespace
    (the node that set it does not run again) and never reaches the parent's state."""
    thread = f"narrow-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread}}
    graph = narrow_subgraph.build_graph(PostgresCheckpointer())
    mine = f"pid {os.getpid()}"
    paused = graph.invoke({"items": [], "last": "x"}, config)
    assert paused.interrupt.value == mine
    assert graph.get_state(config, subgraphs=True).tasks[0].state.values == {
        "items": ["pre", "c0"],
        "private": mine,
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "narrow_subgraph.py"), thread, "yes"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["pid"] != os.getpid()
    expected = {"items": ["pre", "pre", "c0", f"{mine}:yes", "post"], "last": "post"}
    assert line["state"] == expected
    assert graph.get_state(config).values == expected
