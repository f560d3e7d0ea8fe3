"""interrupt() and resume(): ids, answers, refusals, and the LangGraph bugs we fix."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import (
    AmbiguousResumeError,
    CheckpointerRequiredError,
    MissingResumeValueError,
    NothingToResumeError,
    UnexpectedResumeValueError,
    UnknownInterruptError,
)
from beamweaver_core.graph import (
    END,
    START,
    Command,
    Completed,
    Graph,
    Interrupted,
    interrupt,
    null_resume,
)
from beamweaver_core.graph.resume import is_resume_map
from tests.support.narrow_subgraph import Child, Parent


def parallel_graph(checkpointer: MemoryCheckpointer, runs: list[str]) -> Any:
    def asker(name: str, question: str) -> Any:
        def node(_: dict[str, Any]) -> dict[str, Any]:
            runs.append(name)
            return {"answers": [f"{name}:{interrupt(question)}"]}

        return node

    def sibling(_: dict[str, Any]) -> dict[str, Any]:
        runs.append("sibling")
        return {"answers": ["sibling"]}

    return (
        Graph()
        .add_reducer("answers", operator.add)
        .add_node("left", asker("left", "question_a"))
        .add_node("right", asker("right", "question_b"))
        .add_node("sibling", sibling)
        .add_node("after", lambda s: {"answers": ["after"]})
        .add_edge(START, "left")
        .add_edge(START, "right")
        .add_edge(START, "sibling")
        .add_edge(["left", "right", "sibling"], "after")
        .compile(checkpointer=checkpointer)
    )


def history_ids(graph: Any, config: dict[str, Any]) -> list[str]:
    return [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)]


def test_interrupt_values_must_be_json_safe_and_the_path_is_named(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("n", lambda s: interrupt({"ok": [1, {"bad": object()}]}))
        .add_edge(START, "n")
        .compile(checkpointer=checkpointer)
    )
    with pytest.raises(
        TypeError, match=r"The interrupt\(\) value must be JSON-safe data: at 'ok\[1\]\.bad'"
    ) as info:
        graph.invoke({}, config)
    # A plain TypeError that shows the value and says what to pass instead.
    assert type(info.value) is TypeError
    assert "The value there: <object object at" in str(info.value)
    assert "pass its fields as a dict" in str(info.value)


def test_interrupt_without_a_checkpointer_raises_a_clear_error() -> None:
    graph = (
        Graph().add_node("ask", lambda s: {"a": interrupt("q")}).add_edge(START, "ask").compile()
    )
    with pytest.raises(CheckpointerRequiredError, match="Compile it with a checkpointer"):
        graph.invoke({})


def test_interrupt_outside_a_graph_is_refused() -> None:
    with pytest.raises(RuntimeError, match="outside a graph node"):
        interrupt("hello")


def test_parallel_interrupts_have_distinct_ids_stable_while_pending(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = parallel_graph(checkpointer, [])
    result = graph.invoke({"answers": []}, config)

    assert [i.value for i in result.interrupts] == ["question_a", "question_b"]
    assert len({i.id for i in result.interrupts}) == 2
    assert graph.get_state(config).interrupts == result.interrupts
    assert graph.get_state(config).interrupts == result.interrupts
    assert result.state == {"answers": ["sibling"]}


def test_several_interrupts_in_one_node_get_new_ids_per_question(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("multi", lambda s: {"answers": [interrupt("q1"), interrupt("q2")]})
        .add_edge(START, "multi")
        .compile(checkpointer=checkpointer)
    )
    first = graph.invoke({}, config)
    second = graph.resume("A1", config)
    done = graph.resume("A2", config)

    assert (first.interrupt.value, second.interrupt.value) == ("q1", "q2")
    assert first.interrupt.id != second.interrupt.id
    assert done.state == {"answers": ["A1", "A2"]}


def test_a_partial_resume_runs_only_answered_tasks_and_keeps_the_rest_pending(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    runs: list[str] = []
    graph = parallel_graph(checkpointer, runs)
    ids = {i.value: i.id for i in graph.invoke({"answers": []}, config).interrupts}
    runs.clear()

    partial = graph.resume({ids["question_a"]: "A"}, config)

    assert isinstance(partial, Interrupted)
    assert [(i.id, i.value) for i in partial.interrupts] == [(ids["question_b"], "question_b")]
    assert runs == ["left"]  # the unanswered sibling is not re-run (LangGraph re-runs it)
    assert partial.state == {"answers": ["left:A", "sibling"]}
    runs.clear()
    done = graph.resume({ids["question_b"]: "B"}, config)
    assert done == Completed(state={"answers": ["left:A", "right:B", "sibling", "after"]})
    assert runs == ["right"]


def test_answering_all_at_once_completes(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = parallel_graph(checkpointer, [])
    pending = graph.invoke({"answers": []}, config).interrupts
    done = graph.resume({i.id: i.value.upper() for i in pending}, config)
    assert done.state["answers"] == ["left:QUESTION_A", "right:QUESTION_B", "sibling", "after"]


@pytest.mark.parametrize(
    ("resume", "error", "message"),
    [
        ("scalar", AmbiguousResumeError, "2 interrupts are pending"),
        ({}, UnknownInterruptError, "The resume map is empty"),
        ({"0" * 32: "x"}, UnknownInterruptError, "are not pending on this thread"),
    ],
)
def test_refused_resumes_write_nothing_and_leave_the_thread_resumable(
    checkpointer: MemoryCheckpointer,
    config: dict[str, Any],
    resume: Any,
    error: type[Exception],
    message: str,
) -> None:
    graph = parallel_graph(checkpointer, [])
    pending = graph.invoke({"answers": []}, config).interrupts
    before = history_ids(graph, config)

    with pytest.raises(error, match=message):
        graph.resume(resume, config)

    assert history_ids(graph, config) == before
    assert graph.get_state(config).interrupts == pending
    assert graph.resume({i.id: "ok" for i in pending}, config).state["answers"][-1] == "after"


def test_an_unknown_id_next_to_a_valid_one_is_refused_as_a_whole(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    runs: list[str] = []
    graph = parallel_graph(checkpointer, runs)
    pending = graph.invoke({"answers": []}, config).interrupts
    runs.clear()
    with pytest.raises(UnknownInterruptError):
        graph.resume({pending[0].id: "A", "f" * 32: "B"}, config)
    assert runs == []


def test_resume_on_a_thread_with_nothing_pending_is_refused(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("a", lambda s: {"v": 1})
        .add_edge(START, "a")
        .compile(checkpointer=checkpointer)
    )
    with pytest.raises(NothingToResumeError, match="it has no checkpoint yet"):
        graph.resume("x", config)
    graph.invoke({}, config)
    with pytest.raises(NothingToResumeError, match="its run is complete"):
        graph.resume(None, config)
    with pytest.raises(NothingToResumeError, match="no pending interrupt or breakpoint"):
        graph.resume("x", config)


def test_resume_without_a_value_is_refused_while_interrupts_wait(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("a", lambda s: {"v": interrupt("q")})
        .add_edge(START, "a")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({}, config)
    with pytest.raises(MissingResumeValueError, match="to answer with None, pass null_resume"):
        graph.resume(None, config)
    assert graph.resume(null_resume(), config).state == {"v": None}


def test_a_failed_attempt_does_not_poison_the_thread(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """LangGraph replays the consumed bad answer forever; here it is discarded with the attempt."""

    def strict(_: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt("give me 'good'")
        if answer != "good":
            raise ValueError(f"bad answer {answer!r}")
        return {"v": answer}

    graph = (
        Graph()
        .add_node("strict", strict)
        .add_edge(START, "strict")
        .compile(checkpointer=checkpointer)
    )
    pending = graph.invoke({}, config).interrupt

    with pytest.raises(ValueError, match="bad answer 'bad'"):
        graph.resume("bad", config)
    assert graph.get_state(config).interrupts == (pending,)
    assert graph.resume("good", config) == Completed(state={"v": "good"})


def test_a_consumed_answer_is_never_replayed_into_a_later_question(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """LangGraph #8837: invoke(None) after answering i1 auto-answered i2 with the stale value."""
    graph = (
        Graph()
        .add_reducer("log", operator.add)
        .add_node("node", lambda s: {"log": [f"{interrupt('i1')!r}+{interrupt('i2')!r}"]})
        .add_edge(START, "node")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"log": []}, config)
    second = graph.resume("A", config)

    assert second.interrupt.value == "i2"
    with pytest.raises(MissingResumeValueError):
        graph.invoke(None, config)
    assert graph.resume("B", config).state == {"log": ["'A'+'B'"]}


def test_an_answer_is_validated_storable_before_anything_runs(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    runs: list[int] = []
    graph = (
        Graph()
        .add_node("a", lambda s: runs.append(1) or {"v": interrupt("q")})
        .add_edge(START, "a")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({}, config)
    with pytest.raises(TypeError, match="NUL character"):
        graph.resume("bad\x00answer", config)
    assert runs == [1]


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    inner = value
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return value


def test_values_nested_past_the_recursion_limit_are_refused_as_unstorable(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """An answer, input, node write or interrupt value nested deeper than Python can walk
    is a `TypeError` that says so, before anything runs (it was a `RecursionError`)."""
    deep = _nested(5_000)
    runs: list[int] = []
    graph = (
        Graph()
        .add_node("a", lambda s: runs.append(1) or {"v": interrupt("q")})
        .add_edge(START, "a")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({}, config)
    with pytest.raises(TypeError, match="nested too deeply"):
        graph.resume(deep, config)
    with pytest.raises(TypeError, match="nested too deeply"):
        graph.invoke({"v": deep}, {"configurable": {"thread_id": "deep-input"}})
    asks_deep = Graph().add_node("a", lambda s: {"v": interrupt(deep)}).add_edge(START, "a")
    with pytest.raises(TypeError, match="nested too deeply"):
        asks_deep.compile(checkpointer=checkpointer).invoke(
            {}, {"configurable": {"thread_id": "x"}}
        )
    assert runs == [1]
    assert graph.resume("fine", config).state == {"v": "fine"}


def test_new_input_on_a_paused_thread_discards_the_pending_step(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("load", lambda s: {"items": ["load"]})
        .add_node("ask", lambda s: {"items": [f"ask:{interrupt('q')}"]})
        .add_edge(START, "load")
        .add_edge("load", "ask")
        .compile(checkpointer=checkpointer)
    )
    old = graph.invoke({"items": []}, config).interrupt
    new = graph.invoke({"items": ["new"]}, config).interrupt

    assert new.id != old.id
    with pytest.raises(UnknownInterruptError):
        graph.resume({old.id: "stale"}, config)
    assert graph.resume("fresh", config).state == {"items": ["load", "new", "load", "ask:fresh"]}


def test_command_update_and_goto_on_a_paused_thread(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_reducer("log", operator.add)
        .add_node("ask", lambda s: {"log": [f"ask:{interrupt('q')}:{s['mood']}"]})
        .add_node("extra", lambda s: {"log": ["extra"]})
        .add_edge(START, "ask")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"log": [], "mood": "meh"}, config)

    done = graph.invoke(Command(resume="yes", update={"mood": "great"}, goto="extra"), config)

    assert done.state == {"log": ["ask:yes:great", "extra"], "mood": "great"}
    assert [s.metadata["source"] for s in graph.get_state_history(config)][:2] == ["loop", "update"]


def test_static_breakpoints_before_after_and_new_input(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("load", lambda s: {"items": ["load"]})
        .add_node("process", lambda s: {"items": ["process"]})
        .add_node("final", lambda s: {"items": ["final"]})
        .add_edge(START, "load")
        .add_edge("load", "process")
        .add_edge("process", "final")
        .add_edge("final", END)
        .compile(checkpointer=checkpointer, interrupt_before=["process"], interrupt_after=["final"])
    )
    before = graph.invoke({"items": []}, config)
    assert (before.interrupt.timing, before.interrupt.node, before.state) == (
        "before",
        "process",
        {"items": ["load"]},
    )
    assert graph.get_state(config).interrupts == before.interrupts
    assert graph.get_state(config).next == ("process",)

    restarted = graph.invoke({"items": ["new"]}, config)
    assert restarted.interrupt.timing == "before" and restarted.state == {
        "items": ["load", "new", "load"]
    }

    after = graph.resume(None, config)
    assert (after.interrupt.timing, after.interrupt.node) == ("after", "final")
    assert graph.get_state(config).next == ()
    assert graph.get_state(config).interrupts == after.interrupts  # visible even at the end

    assert graph.resume(None, config) == Completed(
        state={"items": ["load", "new", "load", "process", "final"]}
    )


def test_interrupt_before_star_pauses_before_every_node(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("a", lambda s: {"a": 1})
        .add_node("b", lambda s: {"b": 1})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=checkpointer, interrupt_before="*")
    )
    stops = [graph.invoke({}, config).interrupt.node]
    stops.append(graph.resume(None, config).interrupt.node)
    assert stops == ["a", "b"]
    assert graph.resume(null_resume(), config).state == {"a": 1, "b": 1}


@pytest.mark.parametrize("value", ["yes", 0, False, {"approved": True}, ["x"]])
def test_a_value_given_at_a_static_breakpoint_is_refused_and_nothing_is_written(
    checkpointer: MemoryCheckpointer, config: dict[str, Any], value: Any
) -> None:
    """A breakpoint asks no question: a value for it would be discarded, so it is refused
    (as an answer nobody asked for is), the thread stays paused and resumable. `None` and
    `null_resume()` continue, as a scalar or under the breakpoint's id."""
    runs: list[str] = []
    graph = (
        Graph()
        .add_node("load", lambda s: runs.append("load") or {"loaded": True})
        .add_node("process", lambda s: runs.append("process") or {"done": True})
        .add_edge(START, "load")
        .add_edge("load", "process")
        .compile(checkpointer=checkpointer, interrupt_before=["process"])
    )
    stop = graph.invoke({}, config).interrupt
    before = history_ids(graph, config)
    runs.clear()

    with pytest.raises(UnexpectedResumeValueError, match="paused at a static breakpoint") as info:
        graph.resume(value, config)
    assert "before node 'process'" in str(info.value) and "resume(None, config)" in str(info.value)
    with pytest.raises(UnexpectedResumeValueError):
        graph.resume({stop.id: value}, config)
    with pytest.raises(UnexpectedResumeValueError):
        graph.invoke(Command(resume=value), config)

    assert runs == [] and history_ids(graph, config) == before
    assert graph.get_state(config).interrupts == (stop,)
    assert graph.resume({stop.id: null_resume()}, config).state == {"loaded": True, "done": True}
    assert runs == ["process"]


def test_a_value_at_a_breakpoint_inside_a_subgraph_is_refused_too(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    child = (
        Graph(name="child")
        .add_node("c0", lambda s: {"c0": True})
        .add_node("c1", lambda s: {"c1": True})
        .add_edge(START, "c0")
        .add_edge("c0", "c1")
        .compile(interrupt_before=["c1"])
    )
    graph = Graph().add_node("sub", child).add_edge(START, "sub").compile(checkpointer=checkpointer)
    stop = graph.invoke({}, config).interrupt
    assert (stop.timing, stop.node) == ("before", "c1")
    with pytest.raises(UnexpectedResumeValueError, match="before node 'c1'"):
        graph.resume("go", config)
    assert graph.get_state(config).interrupts == (stop,)
    assert graph.resume(None, config).state == {"c0": True, "c1": True}


def test_a_breakpoint_then_a_dynamic_interrupt_in_the_same_node(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("ask", lambda s: {"v": interrupt("q")})
        .add_edge(START, "ask")
        .compile(checkpointer=checkpointer, interrupt_before=["ask"])
    )
    assert graph.invoke({}, config).interrupt.timing == "before"
    dynamic = graph.resume(None, config)
    assert dynamic.interrupt.timing is None and dynamic.interrupt.value == "q"
    assert graph.resume(7, config).state == {"v": 7}


def test_interrupts_of_root_nodes_are_in_the_root_namespace(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """`Interrupt.ns` is the checkpoint namespace, "" at the root, for `interrupt()` calls
    and static breakpoints alike (the same as the stream envelopes' `ns`)."""
    graph = (
        Graph()
        .add_node("ask", lambda s: {"answer": interrupt("q")})
        .add_node("after", lambda s: None)
        .add_edge(START, "ask")
        .add_edge("ask", "after")
        .compile(checkpointer=checkpointer, interrupt_before=["after"])
    )
    asked = graph.invoke({}, config)
    assert (asked.interrupt.ns, asked.interrupt.timing) == ("", None)
    stopped = graph.resume("yes", config)
    assert (stopped.interrupt.ns, stopped.interrupt.timing) == ("", "before")
    assert graph.get_state(config).interrupts[0].ns == ""


def test_subgraph_interrupts_surface_at_the_root_and_finished_child_steps_are_not_rerun(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    runs: list[str] = []
    child = (
        Graph(name="child")
        .add_reducer("items", operator.add)
        .add_node("c1", lambda s: runs.append("c1") or {"items": ["c1"]})
        .add_node(
            "c2", lambda s: runs.append("c2") or {"items": [f"c2:{interrupt({'q': 'child ok?'})}"]}
        )
        .add_edge(START, "c1")
        .add_edge("c1", "c2")
        .compile()
    )
    parent = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("pre", lambda s: {"items": ["pre"]})
        .add_node("sub", child)
        .add_node("post", lambda s: {"items": ["post"]})
        .add_edge(START, "pre")
        .add_edge("pre", "sub")
        .add_edge("sub", "post")
        .compile(checkpointer=checkpointer)
    )
    paused = parent.invoke({"items": []}, config)
    snapshot = parent.get_state(config, subgraphs=True)

    assert paused.interrupt.value == {"q": "child ok?"}
    assert snapshot.next == ("sub",)
    assert snapshot.interrupts == paused.interrupts
    assert snapshot.tasks[0].state.values == {"items": ["pre", "c1"]}
    assert snapshot.tasks[0].state.next == ("c2",)
    # ns is the checkpoint namespace of the graph holding the node (api.md §1)
    assert paused.interrupt.node == "c2"
    assert paused.interrupt.ns == snapshot.tasks[0].state.config["configurable"]["checkpoint_ns"]
    assert paused.interrupt.ns.startswith("sub:") and paused.interrupt.ns.endswith("|child")
    runs.clear()
    done = parent.resume("yes", config)
    # the child's output list is appended to the parent's (the same as LangGraph's reducers)
    assert done.state == {"items": ["pre", "pre", "c1", "c2:yes", "post"]}
    assert runs == ["c2"]


async def test_a_subgraph_declaring_some_of_the_parents_keys_runs_under_ainvoke(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Issue 20 on the async driver (test_differential.py compares the sync one with
    LangGraph): the child gets the keys it declares, keeps its private key in its own
    namespace, and updates the parent only through the shared key."""

    async def c1(state: dict[str, Any]) -> dict[str, Any]:
        return {"items": [f"{state['private']}:{interrupt(sorted(state))}"]}

    child = (
        Graph(name="child", state_schema=Child)
        .add_node("c0", lambda s: {"private": "p"})
        .add_node("c1", c1)
        .add_edge(START, "c0")
        .add_edge("c0", "c1")
        .compile()
    )
    graph = (
        Graph(state_schema=Parent)
        .add_node("sub", child)
        .add_edge(START, "sub")
        .compile(checkpointer=checkpointer)
    )
    paused = await graph.ainvoke({"items": ["in"], "last": "x"}, config)
    assert paused.interrupt.value == ["items", "private"]
    inside = graph.get_state(config, subgraphs=True).tasks[0].state
    assert inside.values == {"items": ["in"], "private": "p"}
    done = await graph.aresume("ok", config)
    assert done.state == {"items": ["in", "in", "p:ok"], "last": "x"}


def test_a_subgraph_called_inside_a_node_pauses_the_parent_task(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    body_runs: list[int] = []
    child = (
        Graph(name="child")
        .add_node("ask", lambda s: {"answer": interrupt(f"approve {s['item']}?")})
        .add_edge(START, "ask")
        .compile()
    )

    def call_child(state: dict[str, Any]) -> dict[str, Any]:
        body_runs.append(1)
        first = child.invoke({"item": "a"}).state["answer"]
        second = child.invoke({"item": "b"}).state["answer"]
        return {"answers": [first, second]}

    graph = (
        Graph()
        .add_node("call_child", call_child)
        .add_edge(START, "call_child")
        .compile(checkpointer=checkpointer)
    )
    q1 = graph.invoke({}, config).interrupt
    q2 = graph.resume("yes-a", config).interrupt

    assert (q1.value, q2.value) == ("approve a?", "approve b?")
    assert graph.resume("yes-b", config).state == {"answers": ["yes-a", "yes-b"]}
    assert len(body_runs) == 3


def test_command_parent_routes_in_the_parent_graph() -> None:
    child = (
        Graph(name="child")
        .add_node(
            "handoff",
            lambda s: Command(
                graph=Command.PARENT, goto="target", update={"items": ["from-child"]}
            ),
        )
        .add_edge(START, "handoff")
        .compile()
    )
    parent = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("sub", child)
        .add_node("other", lambda s: {"items": ["other"]})
        .add_node("target", lambda s: {"items": ["target"]})
        .add_edge(START, "sub")
        .add_edge("sub", "other")
        .compile()
    )
    assert parent.invoke({"items": []}).state == {"items": ["from-child", "other", "target"]}


def test_command_parent_at_the_root_is_an_error() -> None:
    from beamweaver_core.exceptions import InvalidUpdateError

    root = (
        Graph()
        .add_node("n", lambda s: Command(graph=Command.PARENT, goto="x"))
        .add_edge(START, "n")
        .compile()
    )
    with pytest.raises(InvalidUpdateError, match="there is no parent graph"):
        root.invoke({})
    with pytest.raises(InvalidUpdateError, match="there is no parent"):
        root.invoke(Command(graph=Command.PARENT))


async def test_ainvoke_and_aresume_pause_and_resume_async_nodes(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    async def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": interrupt({"question": "Approve?"})}

    graph = Graph().add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=checkpointer)

    paused = await graph.ainvoke({}, config)
    assert isinstance(paused, Interrupted) and paused.interrupt.value == {"question": "Approve?"}
    with pytest.raises(UnknownInterruptError):
        await graph.aresume({"0" * 32: 1}, config)  # an id that is not pending
    done = await graph.aresume(True, config)
    assert isinstance(done, Completed) and done.state == {"answer": True}
    with pytest.raises(NothingToResumeError):
        await graph.aresume(True, config)


def test_a_dict_answer_and_a_map_of_ids_are_told_apart(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """A dict whose keys are not all id-shaped is the answer itself; an answer that looks
    like a map of ids is given inside a real map."""
    graph = (
        Graph()
        .add_node("ask", lambda s: {"answer": interrupt("q"), "again": interrupt("q2")})
        .add_edge(START, "ask")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({}, config)
    looks_like_ids = {"a" * 32: "not an interrupt id"}

    second = graph.resume({"name": "Ada", "age": 36}, config)
    assert isinstance(second, Interrupted) and second.interrupt.value == "q2"
    with pytest.raises(UnknownInterruptError):
        graph.resume(looks_like_ids, config)
    done = graph.resume({second.interrupt.id: looks_like_ids}, config)

    assert done.state == {"answer": {"name": "Ada", "age": 36}, "again": looks_like_ids}


@pytest.mark.parametrize(
    "key", ["0x" + "a" * 30, "+" + "a" * 31, " " + "a" * 31, "a_" * 16, "٣" * 32]
)
def test_keys_that_int_would_read_as_hex_are_not_interrupt_ids(key: str) -> None:
    """`int(key, 16)` takes signs, `0x`, `_`, spaces and non-ASCII digits; an interrupt id
    is 32 hex digits, so a dict with such a key is an answer, not a map of ids."""
    assert not is_resume_map({key: "yes"})
    assert is_resume_map({"A" * 32: "yes", "0123456789abcdef" * 2: "no"})
