"""A child process for tests/checkpoint/test_postgres_processes.py: resume a thread that
paused inside a subgraph sharing only some keys with its parent (issue 20).

Run as `python tests/support/narrow_subgraph.py THREAD ANSWER` with `DATABASE_URL` naming
the test database. It resumes the thread with `ANSWER` and prints the final state as one
JSON line.
"""

from __future__ import annotations

import json
import operator
import os
import sys
from typing import Annotated, Any, TypedDict

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import START, Graph, interrupt
from beamweaver_core.graph.compiled import CompiledGraph


class Parent(TypedDict, total=False):
    """A parent state; `Child` shares `items` with it."""

    items: Annotated[list[Any], operator.add]
    last: str


class Child(TypedDict, total=False):
    """Shares `items` with `Parent`; `private` is the subgraph's own."""

    items: Annotated[list[Any], operator.add]
    private: str


def build_graph(checkpointer: Checkpointer) -> CompiledGraph:
    """`pre` -> `sg` (child: `c0` sets its private key to this process's pid, `c1` asks
    about it) -> `post`. A resume in another process must read `private` back from the
    child's namespace, not run `c0` again."""
    child = (
        Graph(name="child", state_schema=Child)
        .add_node("c0", lambda s: {"items": ["c0"], "private": f"pid {os.getpid()}"})
        .add_node("c1", lambda s: {"items": [f"{s['private']}:{interrupt(s['private'])}"]})
        .add_edge(START, "c0")
        .add_edge("c0", "c1")
        .compile()
    )
    return (
        Graph(name="parent", state_schema=Parent)
        .add_node("pre", lambda s: {"items": ["pre"]})
        .add_node("sg", child)
        .add_node("post", lambda s: {"items": ["post"], "last": "post"})
        .add_edge(START, "pre")
        .add_edge("pre", "sg")
        .add_edge("sg", "post")
        .compile(checkpointer=checkpointer)
    )


def main(thread: str, answer: str) -> None:
    import django

    django.setup()
    from beamweaver_core.checkpoint.postgres import PostgresCheckpointer

    result = build_graph(PostgresCheckpointer()).resume(
        answer, {"configurable": {"thread_id": thread}}
    )
    sys.stdout.write(json.dumps({"pid": os.getpid(), "state": result.state}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
