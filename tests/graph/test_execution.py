"""Super-steps: concurrency, deterministic merges, routing, Send, joins, limits, runtime."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Any, TypedDict

import pytest

from beamweaver_core.exceptions import GraphRecursionError, InvalidUpdateError
from beamweaver_core.graph import END, START, Command, Completed, Graph, Runtime, Send, interrupt


def fan_out(*names: str, reducer: bool = True, **fns: Any) -> Graph:
    builder = Graph()
    if reducer:
        builder.add_reducer("items", operator.add)
    for name in names:
        builder.add_node(name, fns.get(name, lambda s, n=name: {"items": [n]}))
        builder.add_edge(START, name)
    return builder


def test_sync_nodes_of_one_step_run_concurrently_on_worker_threads() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def meet(name: str) -> Any:
        def node(_: dict[str, Any]) -> dict[str, Any]:
            barrier.wait()  # deadlocks (BrokenBarrierError) unless all three run at once
            return {"items": [name]}

        return node

    graph = fan_out("a", "b", "c", a=meet("a"), b=meet("b"), c=meet("c")).compile()

    assert graph.invoke({"items": []}).state == {"items": ["a", "b", "c"]}


def test_async_nodes_run_concurrently_on_the_event_loop() -> None:
    started: list[str] = []
    both_started = asyncio.Event()

    def make(name: str) -> Any:
        async def node(_: dict[str, Any]) -> dict[str, Any]:
            started.append(name)
            if len(started) == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), 5)
            return {"items": [name]}

        return node

    graph = fan_out("x", "y", x=make("x"), y=make("y")).compile()

    result = asyncio.run(graph.ainvoke({"items": []}))
    assert result == Completed(state={"items": ["x", "y"]})


def test_async_and_sync_nodes_also_run_under_sync_invoke() -> None:
    async def slow(_: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"items": ["async"]}

    graph = fan_out(
        "async_node", "sync_node", async_node=slow, sync_node=lambda s: {"items": ["sync"]}
    ).compile()

    assert graph.invoke({"items": []}).state == {"items": ["async", "sync"]}


def test_the_merge_order_is_by_task_not_by_completion() -> None:
    def slow(name: str, delay: float) -> Any:
        def node(_: dict[str, Any]) -> dict[str, Any]:
            time.sleep(delay)
            return {"items": [name]}

        return node

    graph = fan_out(
        "zslow",
        "afast",
        "mid",
        zslow=slow("zslow", 0.05),
        afast=slow("afast", 0),
        mid=slow("mid", 0.02),
    ).compile()

    assert graph.invoke({"items": []}).state["items"] == ["afast", "mid", "zslow"]


def test_two_writes_to_a_key_without_reducer_fail_the_step_and_apply_nothing(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("start", lambda s: {"phase": "started"})
        .add_node("a", lambda s: {"x": 1, "other": "a"})
        .add_node("b", lambda s: {"x": 1})
        .add_edge(START, "start")
        .add_edge("start", "a")
        .add_edge("start", "b")
        .compile(checkpointer=checkpointer)
    )
    with pytest.raises(
        InvalidUpdateError, match=r"At key 'x': nodes \['a', 'b'\] wrote it in the same super-step"
    ):
        graph.invoke({}, config)

    state = graph.get_state(config)
    assert state.values == {"phase": "started"}
    assert state.next == ("a", "b")


def test_a_conflicting_step_applies_nothing_even_when_one_writer_was_saved_first(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    """`a`'s record is committed while `b` still runs (finished tasks are kept at once);
    when `b` then writes the same key, the step fails as above and its state shows nothing
    of it applied, both tasks next. (The snapshot used to show `a`'s writes applied and
    only `b` next, depending on which task finished first.) Running it again fails again."""

    def b(_: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + 10
        while not _records_of_the_open_step(checkpointer, config) and time.monotonic() < deadline:
            time.sleep(0.01)
        return {"x": 2}

    graph = (
        Graph()
        .add_node("start", lambda s: {"phase": "started"})
        .add_node("a", lambda s: {"x": 1, "other": "a"})
        .add_node("b", b)
        .add_edge(START, "start")
        .add_edge("start", "a")
        .add_edge("start", "b")
        .compile(checkpointer=checkpointer)
    )
    for _ in range(2):
        with pytest.raises(InvalidUpdateError, match=r"At key 'x': nodes \['a', 'b'\]"):
            graph.invoke(None if _ else {}, config)

        state = graph.get_state(config)
        assert state.values == {"phase": "started"}
        assert state.next == ("a", "b")


def _records_of_the_open_step(checkpointer: Any, config: dict[str, Any]) -> bool:
    head = checkpointer.load(config["configurable"]["thread_id"])
    return head is not None and head.step == 0 and bool(head.records)


def test_a_step_that_pauses_after_two_finished_writes_to_one_key_fails_at_the_pause(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    """The step could never merge, so it fails when it would pause (as LangGraph 1.2 does)
    instead of pausing with one of the two values shown: nobody is asked to review a
    state that will never exist. Nothing of the step is saved."""
    builder = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("start", lambda s: {"items": ["start"]})
        .add_node("ask", lambda s: {"items": [interrupt("q")]})
        .add_node("s1", lambda s: {"x": "one"})
        .add_node("s2", lambda s: {"x": "two"})
        .add_edge(START, "start")
    )
    for name in ("ask", "s1", "s2"):
        builder.add_edge("start", name)
    graph = builder.compile(checkpointer=checkpointer)
    with pytest.raises(
        InvalidUpdateError,
        match=r"(?s)At key 'x': nodes \['s1', 's2'\] wrote it.*could never complete",
    ):
        graph.invoke({"items": []}, config)
    state = graph.get_state(config)
    assert (state.values, state.next, state.interrupts) == (
        {"items": ["start"]},
        ("ask", "s1", "s2"),
        (),
    )


def test_a_partial_resume_that_finishes_a_second_writer_of_one_key_fails(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    """Two interrupted tasks write the same last-value key once answered: answering one
    leaves a valid pause; answering the other first makes the step unmergeable while a
    third question still waits, so it fails and the answer is not consumed."""
    graph = fan_out(
        "a",
        "b",
        "c",
        a=lambda s: {"x": interrupt("qa")},
        b=lambda s: {"x": interrupt("qb")},
        c=lambda s: {"items": [interrupt("qc")]},
    ).compile(checkpointer=checkpointer)
    ids = {i.value: i.id for i in graph.invoke({"items": []}, config).interrupts}
    graph.resume({ids["qa"]: "A"}, config)
    with pytest.raises(InvalidUpdateError, match=r"nodes \['a', 'b'\]"):
        graph.resume({ids["qb"]: "B"}, config)
    assert {i.id for i in graph.get_state(config).interrupts} == {ids["qb"], ids["qc"]}


def test_tuples_become_lists_only_where_values_are_checkpointed(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    """Under a checkpointer a written tuple is a list at once, as it reads back (the
    contract suite checks every checkpointer); without one nothing is stored or read back,
    and values stay exactly as the nodes returned them."""

    def build(saver: Any) -> Any:
        return (
            Graph()
            .add_node("a", lambda s: {"pair": (1, 2)})
            .add_node("b", lambda s: {"seen": type(s["pair"]).__name__})
            .add_edge(START, "a")
            .add_edge("a", "b")
            .compile(checkpointer=saver)
        )

    assert build(checkpointer).invoke({}, config).state == {"pair": [1, 2], "seen": "list"}
    assert build(None).invoke({}).state == {"pair": (1, 2), "seen": "tuple"}


@pytest.mark.parametrize("bad", ["oops", 3, ["list"]])
def test_a_node_returning_something_else_than_dict_none_or_command_is_an_error(bad: Any) -> None:
    graph = Graph().add_node("n", lambda s: bad).add_edge(START, "n").compile()
    with pytest.raises(
        InvalidUpdateError,
        match=r"Node 'n' returned .* a node must return a dict of state updates, None, or a Command",
    ):
        graph.invoke({})


def test_a_node_returning_none_writes_nothing() -> None:
    graph = Graph().add_node("n", lambda s: None).add_edge(START, "n").compile()
    assert graph.invoke({"a": 1}).state == {"a": 1}


def test_writing_a_key_outside_the_schema_is_refused() -> None:
    class State(TypedDict):
        known: int

    graph = (
        Graph(state_schema=State)
        .add_node("n", lambda s: {"unknown": 1})
        .add_edge(START, "n")
        .compile()
    )
    with pytest.raises(
        InvalidUpdateError,
        match=r"wrote key\(s\) \['unknown'\] that the state schema does not declare",
    ):
        graph.invoke({"known": 1})


def test_send_runs_a_node_once_per_packet_with_its_own_input() -> None:
    graph = (
        Graph()
        .add_reducer("jokes", operator.add)
        .add_node("joke", lambda arg: {"jokes": [f"joke about {arg['subject']}"]})
        .add_conditional_edges(
            START, lambda s: [Send("joke", {"subject": x}) for x in s["subjects"]]
        )
        .compile()
    )
    assert graph.invoke({"subjects": ["cats", "dogs", "owls"]}).state["jokes"] == [
        "joke about cats",
        "joke about dogs",
        "joke about owls",
    ]


def test_two_plain_edges_run_the_target_twice_but_a_join_runs_it_once() -> None:
    def build(join: bool) -> Any:
        builder = (
            fan_out("a")
            .add_node("b", lambda s: {"items": ["b"]})
            .add_node("c", lambda s: {"items": ["c"]})
            .add_node("c2", lambda s: {"items": ["c2"]})
            .add_node("d", lambda s: {"items": ["d"]})
            .add_edge("a", "b")
            .add_edge("a", "c")
            .add_edge("c", "c2")
        )
        if join:
            builder.add_edge(["b", "c2"], "d")
        else:
            builder.add_edge("b", "d").add_edge("c2", "d")
        return builder.compile()

    assert build(join=False).invoke({"items": []}).state["items"] == ["a", "b", "c", "c2", "d", "d"]
    assert build(join=True).invoke({"items": []}).state["items"] == ["a", "b", "c", "c2", "d"]


def test_a_node_triggered_twice_in_one_step_runs_once() -> None:
    graph = (
        fan_out("a")
        .add_node("b", lambda s: {"items": ["b"]})
        .add_edge("a", "b")
        .add_conditional_edges("a", lambda s: ["b"])
        .compile()
    )
    assert graph.invoke({"items": []}).state["items"] == ["a", "b"]


def test_command_goto_adds_to_the_static_edges() -> None:
    graph = (
        Graph()
        .add_reducer("v", operator.add)
        .add_node("a", lambda s: Command(goto="z", update={"v": ["a"]}))
        .add_node("y", lambda s: {"v": ["y"]})
        .add_node("z", lambda s: {"v": ["z"]})
        .add_edge(START, "a")
        .add_edge("a", "y")
        .compile()
    )
    assert graph.invoke({"v": []}).state["v"] == ["a", "y", "z"]


def test_command_goto_to_an_unknown_node_is_an_error() -> None:
    graph = Graph().add_node("a", lambda s: Command(goto="nowhere")).add_edge(START, "a").compile()
    with pytest.raises(
        InvalidUpdateError, match="Command\\(goto='nowhere'\\), which is not a node"
    ):
        graph.invoke({})


def test_conditional_edges_with_a_path_map_and_end() -> None:
    graph = (
        Graph()
        .add_node("check", lambda s: {"checked": True})
        .add_node("go", lambda s: {"went": True})
        .add_edge(START, "check")
        .add_conditional_edges(
            "check", lambda s: "go" if s["proceed"] else "stop", {"go": "go", "stop": END}
        )
        .compile()
    )
    assert graph.invoke({"proceed": True}).state == {"proceed": True, "checked": True, "went": True}
    assert graph.invoke({"proceed": False}).state == {"proceed": False, "checked": True}


def test_a_router_sees_its_own_nodes_writes_but_not_its_siblings() -> None:
    seen: list[dict[str, Any]] = []
    graph = (
        fan_out("a", "b")
        .add_node("after", lambda s: None)
        .add_conditional_edges("a", lambda s: seen.append(dict(s)) or "after")
        .compile()
    )
    graph.invoke({"items": ["in"]})
    assert seen == [{"items": ["in", "a"]}]


def test_a_router_returning_an_unknown_key_is_an_error() -> None:
    graph = (
        Graph()
        .add_node("a", lambda s: None)
        .add_edge(START, "a")
        .add_conditional_edges("a", lambda s: "maybe", {"yes": END})
        .compile()
    )
    with pytest.raises(
        InvalidUpdateError, match="returned 'maybe', which is not a key of its path_map"
    ):
        graph.invoke({})


def loop_graph() -> Any:
    return (
        Graph()
        .add_node("loop", lambda s: {"x": s["x"] + 1})
        .add_edge(START, "loop")
        .add_conditional_edges("loop", lambda s: "loop" if s["x"] < 3 else END)
        .compile()
    )


def test_recursion_limit_counts_super_steps_and_allows_exactly_the_limit() -> None:
    assert loop_graph().invoke({"x": 0}, {"recursion_limit": 3}).state == {"x": 3}


def test_recursion_limit_is_raised_before_the_extra_step_runs() -> None:
    ran: list[int] = []
    graph = (
        Graph()
        .add_node("loop", lambda s: ran.append(s["x"]) or {"x": s["x"] + 1})
        .add_edge(START, "loop")
        .add_conditional_edges("loop", lambda s: "loop" if s["x"] < 3 else END)
        .compile()
    )
    with pytest.raises(GraphRecursionError, match="Recursion limit of 2 reached"):
        graph.invoke({"x": 0}, {"recursion_limit": 2})
    assert ran == [0, 1]


def test_the_default_recursion_limit_is_25() -> None:
    graph = (
        Graph()
        .add_node("spin", lambda s: {})
        .add_edge(START, "spin")
        .add_edge("spin", "spin")
        .compile()
    )
    with pytest.raises(GraphRecursionError, match="took 25 super-steps"):
        graph.invoke({})


@pytest.mark.parametrize("limit", [0, -1, "10"])
def test_an_invalid_recursion_limit_is_refused(limit: Any) -> None:
    with pytest.raises(ValueError, match="recursion_limit"):
        loop_graph().invoke({"x": 0}, {"recursion_limit": limit})


def test_nodes_with_a_second_argument_get_the_runtime(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    seen: dict[str, Any] = {}

    def node(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
        seen.update(
            thread=runtime.thread_id,
            context=runtime.context,
            node=runtime.node,
            config=runtime.config,
        )
        runtime.emit("progress", {"pct": 50})
        return {"done": True}

    graph = (
        Graph().add_node("work", node).add_edge(START, "work").compile(checkpointer=checkpointer)
    )
    result = graph.stream_events({}, config, context={"user_id": "u1"})

    assert seen == {
        "thread": config["configurable"]["thread_id"],
        "context": {"user_id": "u1"},
        "node": "work",
        "config": config,
    }
    progress = [e for e in result.events if e.event == "progress"]
    assert [(e.data, e.node) for e in progress] == [({"pct": 50}, "work")]


def test_node_errors_propagate_as_themselves_after_the_last_step_is_saved(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    class Boom(Exception):
        pass

    def explode(_: dict[str, Any]) -> dict[str, Any]:
        raise Boom("kaput")

    graph = (
        Graph()
        .add_node("ok", lambda s: {"ok": True})
        .add_node("explode", explode)
        .add_edge(START, "ok")
        .add_edge("ok", "explode")
        .compile(checkpointer=checkpointer)
    )
    with pytest.raises(Boom, match="kaput"):
        graph.invoke({}, config)
    state = graph.get_state(config)
    assert state.values == {"ok": True}
    assert state.next == ("explode",)


def test_a_finished_sibling_of_a_failed_task_is_not_run_again_on_retry(
    checkpointer: Any, config: dict[str, Any]
) -> None:
    runs: list[str] = []
    attempts = {"flaky": 0}

    def flaky(_: dict[str, Any]) -> dict[str, Any]:
        runs.append("flaky")
        attempts["flaky"] += 1
        if attempts["flaky"] == 1:
            raise RuntimeError("transient")
        return {"items": ["flaky"]}

    def steady(_: dict[str, Any]) -> dict[str, Any]:
        runs.append("steady")
        return {"items": ["steady"]}

    graph = fan_out("flaky", "steady", flaky=flaky, steady=steady).compile(
        checkpointer=checkpointer
    )
    with pytest.raises(RuntimeError, match="transient"):
        graph.invoke({"items": []}, config)
    result = graph.invoke(None, config)

    assert result.state == {"items": ["flaky", "steady"]}
    assert sorted(runs) == ["flaky", "flaky", "steady"]
