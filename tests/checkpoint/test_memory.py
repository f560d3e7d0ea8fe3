"""MemoryCheckpointer against the shared checkpointer contract."""

from __future__ import annotations

import operator

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.checkpoint.encoding import SNAPSHOT_MIN, plan_storage
from beamweaver_core.graph import END, START, Graph
from tests.checkpoint.contract.checkpointer_contract import CheckpointerContract


class TestMemoryCheckpointer(CheckpointerContract):
    @pytest.fixture
    def checkpointer(self) -> MemoryCheckpointer:
        return MemoryCheckpointer()


def test_snapshots_of_an_append_only_list_are_taken_each_time_it_grows_four_times() -> None:
    """The first snapshot comes after `SNAPSHOT_MIN` appended items, the next one once the
    list is four times the last snapshot: until then every version is stored as a delta."""
    start = SNAPSHOT_MIN + 44

    def plan(length: int) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
        return plan_storage({"m": (3, start)}, {"m": 9}, {"m": [0] * length}, {"m": 9}, 10)

    chains, deltas = plan(4 * start - 1)
    assert deltas == {"m": (9, 9)} and chains == {"m": (3, start)}
    chains, deltas = plan(4 * start)
    assert deltas == {} and chains == {"m": (10, 4 * start)}
    # A short list is not snapshot again before SNAPSHOT_MIN items were appended to it.
    short = plan_storage({"m": (3, 2)}, {"m": 9}, {"m": [0] * (SNAPSHOT_MIN + 1)}, {"m": 9}, 10)
    assert short == ({"m": (3, 2)}, {"m": (9, 9)})
    short = plan_storage({"m": (3, 2)}, {"m": 9}, {"m": [0] * (SNAPSHOT_MIN + 2)}, {"m": 9}, 10)
    assert short == ({"m": (10, SNAPSHOT_MIN + 2)}, {})


def test_a_list_is_rebuilt_across_its_snapshots() -> None:
    """Over the first value and two snapshots (after SNAPSHOT_MIN appended items, then at
    4x that length) and the deltas between them, every checkpoint reads back whole."""
    checkpointer = MemoryCheckpointer()
    graph = (
        Graph()
        .add_reducer("log", operator.add)
        .add_node("add", lambda s: {"log": [len(s["log"]), len(s["log"]) + 1]})
        .add_edge(START, "add")
        .add_edge("add", END)
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "snapshots"}}
    for _ in range(SNAPSHOT_MIN // 2 * 5):
        graph.invoke({"log": []}, config)
    history = list(checkpointer.history("snapshots"))
    fulls = [
        version
        for (channel, version), text in checkpointer._threads["snapshots"][""].blobs.items()
        if channel == "log" and text.startswith('{"f"')
    ]
    assert len(fulls) == 3, fulls
    by_seq = {checkpoint.seq: checkpoint for checkpoint in history}
    lengths = [len(by_seq[version].values["log"]) for version in sorted(fulls)]
    assert lengths == [0, SNAPSHOT_MIN, 4 * SNAPSHOT_MIN], lengths
    for checkpoint in history[::37]:
        log = checkpoint.values["log"]
        assert log == list(range(len(log)))
    assert len(history[0].values["log"]) == SNAPSHOT_MIN * 5
