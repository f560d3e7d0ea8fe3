"""A child process for tests/checkpoint/test_postgres_processes.py: resume paused threads.

Run as `python tests/support/resume_race.py NAME BARRIER_DIR THREAD...` with
`DATABASE_URL` naming the test database. For each thread it resumes the pending interrupt
with the answer `NAME`; inside the resumed node it waits at a file barrier until the other
child got there too, so both have loaded the same head before either writes. It prints
one JSON line per thread: `{"thread", "outcome": "ok" | "busy" | "error", "detail"}`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import START, Graph, interrupt
from beamweaver_core.graph.compiled import CompiledGraph

PARTIES = 2
BARRIER_TIMEOUT = 60.0


def build_graph(
    checkpointer: Checkpointer, meet: Callable[[], None] = lambda: None
) -> CompiledGraph:
    """`ask` pauses for an answer; on resume it meets the other writer, then `after` runs."""

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt("who resumes?")
        meet()
        return {"answer": answer}

    return (
        Graph()
        .add_node("ask", ask)
        .add_node("after", lambda s: {"final": f"resumed by {s['answer']}"})
        .add_edge(START, "ask")
        .add_edge("ask", "after")
        .compile(checkpointer=checkpointer)
    )


def file_barrier(directory: Path, name: str) -> None:
    """Announce `name` in `directory`, then wait until every party has announced itself."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while len(list(directory.iterdir())) < PARTIES:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the other writer never reached {directory}")
        time.sleep(0.002)


def main(name: str, barrier_dir: str, threads: list[str]) -> None:
    import django

    django.setup()
    from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
    from beamweaver_core.exceptions import ThreadBusyError

    for thread in threads:
        graph = build_graph(
            PostgresCheckpointer(), lambda t=thread: file_barrier(Path(barrier_dir) / t, name)
        )
        try:
            result = graph.resume(name, {"configurable": {"thread_id": thread}})
            line = {"thread": thread, "outcome": "ok", "detail": result.state.get("final")}
        except ThreadBusyError as exc:
            line = {"thread": thread, "outcome": "busy", "detail": str(exc)}
        except Exception as exc:  # reported to the parent, which fails the test with it
            line = {"thread": thread, "outcome": "error", "detail": repr(exc)}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
