"""Property-based tests of the merge and resume invariants."""

from __future__ import annotations

import itertools
import operator
import random
import time
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import START, Completed, Graph, Interrupted, interrupt

names = st.lists(st.text("abcdefghij", min_size=1, max_size=4), min_size=1, max_size=6, unique=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=names, seed=st.integers(0, 2**16))
def test_the_merge_does_not_depend_on_completion_order(nodes: list[str], seed: int) -> None:
    rng = random.Random(seed)

    def make(name: str, delay: float) -> Any:
        def node(_: dict[str, Any]) -> dict[str, Any]:
            time.sleep(delay)
            return {"log": [name], "count": 1}

        return node

    builder = Graph().add_reducer("log", operator.add).add_reducer("count", operator.add)
    for name in nodes:
        builder.add_node(name, make(name, rng.choice([0, 0.001, 0.003])))
        builder.add_edge(START, name)
    result = builder.compile().invoke({"log": [], "count": 0})
    assert result.state == {"log": sorted(nodes), "count": len(nodes)}


@settings(max_examples=40, deadline=None)
@given(nodes=names, data=st.data())
def test_any_partition_of_answers_leads_to_the_same_final_state(
    nodes: list[str], data: st.DataObject
) -> None:
    """Answering parallel interrupts in any grouping and order gives one result, each task
    runs once per answer it consumes, and pending ids never change until answered."""
    runs: dict[str, int] = dict.fromkeys(nodes, 0)

    def make(name: str) -> Any:
        def node(_: dict[str, Any]) -> dict[str, Any]:
            runs[name] += 1
            return {"answers": [f"{name}={interrupt(name)}"]}

        return node

    builder = Graph().add_reducer("answers", operator.add)
    for name in nodes:
        builder.add_node(name, make(name))
        builder.add_edge(START, name)
    graph = builder.compile(checkpointer=MemoryCheckpointer())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    first = graph.invoke({"answers": []}, config)
    assert isinstance(first, Interrupted)
    pending = {i.id: i.value for i in first.interrupts}
    assert sorted(pending.values()) == sorted(nodes)
    order = data.draw(st.permutations(list(pending)))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(order) - 1)), max_size=len(order))))
    groups = [order[a:b] for a, b in itertools.pairwise([0, *cuts, len(order)]) if order[a:b]]

    result: Any = first
    answered: set[str] = set()
    for group in groups:
        assert {i.id for i in result.interrupts} == set(pending) - answered
        result = graph.resume({iid: pending[iid].upper() for iid in group}, config)
        answered |= set(group)
    assert isinstance(result, Completed)
    assert result.state == {"answers": [f"{n}={n.upper()}" for n in sorted(nodes)]}
    assert runs == dict.fromkeys(nodes, 2)


@settings(max_examples=30, deadline=None)
@given(count=st.integers(1, 8))
def test_interrupt_ids_are_unique_per_question(count: int) -> None:
    def asks(_: dict[str, Any]) -> dict[str, Any]:
        return {"answers": [interrupt(f"q{i}") for i in range(count)]}

    graph = (
        Graph()
        .add_node("asks", asks)
        .add_edge(START, "asks")
        .compile(checkpointer=MemoryCheckpointer())
    )
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    result = graph.invoke({}, config)
    seen = []
    while isinstance(result, Interrupted):
        seen.append(result.interrupt.id)
        result = graph.resume(result.interrupt.value, config)
    assert len(seen) == len(set(seen)) == count
    assert result.state == {"answers": [f"q{i}" for i in range(count)]}
