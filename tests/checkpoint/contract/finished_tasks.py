"""Part of the checkpointer contract: a super-step's finished tasks are saved as they finish.

While some tasks of a step still run, the writes of those that finished are committed as
pending records of the step (LangGraph's durable mode), so a step continued after a crash
runs only the tasks that had not finished. Every checkpointer runs these (through
`CheckpointerContract`), with the sync and the async driver.
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Any

import pytest

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import START, Graph

MODES = pytest.mark.parametrize("mode", ["sync", "async"])


class Crash(BaseException):
    """What the process dying mid-step looks like to the loop: nothing after it runs."""


def fast_is_saved(checkpointer: Checkpointer, thread: str) -> bool:
    """Wait (at most 30 s) until the thread's open step holds the fast task's writes."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        head = checkpointer.load(thread)
        records = head.records.values() if head is not None else ()
        if any(r.status == "done" and r.writes == (("done", ["fast"]),) for r in records):
            return True
        time.sleep(0.01)
    return False


def siblings(checkpointer: Checkpointer, fast: Any, slow: Any) -> Any:
    return (
        Graph()
        .add_reducer("done", operator.add)
        .add_node("fast", fast)
        .add_node("slow", slow)
        .add_edge(START, "fast")
        .add_edge(START, "slow")
        .compile(checkpointer=checkpointer)
    )


def call(graph: Any, mode: str, value: Any, config: dict[str, Any]) -> Any:
    if mode == "sync":
        return graph.invoke(value, config)
    return asyncio.run(graph.ainvoke(value, config))


class FinishedTasksContract:
    @MODES
    def test_engine_a_finished_task_is_saved_while_a_sibling_still_runs(
        self, checkpointer: Checkpointer, thread: str, mode: str
    ) -> None:
        seen: list[bool] = []

        def slow(state: dict[str, Any]) -> dict[str, Any]:
            seen.append(fast_is_saved(checkpointer, thread))
            return {"done": ["slow"]}

        graph = siblings(checkpointer, lambda s: {"done": ["fast"]}, slow)
        config = {"configurable": {"thread_id": thread}}
        assert call(graph, mode, {"done": []}, config).state == {"done": ["fast", "slow"]}
        assert seen == [True]

    @MODES
    def test_engine_a_step_continued_after_a_crash_runs_only_its_unfinished_tasks(
        self, checkpointer: Checkpointer, thread: str, mode: str
    ) -> None:
        runs: list[str] = []
        crashing = [True]

        def fast(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("fast")
            return {"done": ["fast"]}

        def slow(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("slow")
            if crashing[0]:
                assert fast_is_saved(checkpointer, thread)
                raise Crash
            return {"done": ["slow"]}

        graph = siblings(checkpointer, fast, slow)
        config = {"configurable": {"thread_id": thread}}
        with pytest.raises(Crash):
            call(graph, mode, {"done": []}, config)
        crashing[0] = False
        assert call(graph, mode, None, config).state == {"done": ["fast", "slow"]}
        assert sorted(runs) == ["fast", "slow", "slow"]
