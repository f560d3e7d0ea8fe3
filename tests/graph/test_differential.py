"""Differential tests: the same graphs on BeamWeaver and on LangGraph give the same results.

Where BeamWeaver deliberately differs (fixed bugs), the other test modules say so; these
cover behaviour that mirrors LangGraph 1.2.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END as LG_END
from langgraph.graph import START as LG_START
from langgraph.graph import StateGraph
from langgraph.types import Command as LGCommand
from langgraph.types import Send as LGSend
from langgraph.types import interrupt as lg_interrupt

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import END, START, Command, Graph, Send, interrupt
from tests.support.narrow_subgraph import Child, Parent


class State(TypedDict, total=False):
    items: Annotated[list[Any], operator.add]
    x: int
    subjects: list[str]
    route: str


class Engine:
    """One graph description, built on either engine."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.lg = kind == "langgraph"
        self.START = LG_START if self.lg else START
        self.END = LG_END if self.lg else END
        self.Send = LGSend if self.lg else Send
        self.Command = LGCommand if self.lg else Command
        self.interrupt = lg_interrupt if self.lg else interrupt

    def builder(self, schema: type = State) -> Any:
        return StateGraph(schema) if self.lg else Graph(state_schema=schema)

    def compile(self, builder: Any, checkpointed: bool = False) -> Any:
        if self.lg:
            return builder.compile(checkpointer=InMemorySaver() if checkpointed else None)
        return builder.compile(checkpointer=MemoryCheckpointer() if checkpointed else None)

    def values(self, result: Any) -> dict[str, Any]:
        if self.lg:
            return {k: v for k, v in result.items() if k != "__interrupt__"}
        return result.state

    def interrupts(self, graph: Any, config: dict[str, Any]) -> list[Any]:
        return list(graph.get_state(config).interrupts)

    def resume(self, graph: Any, value: Any, config: dict[str, Any]) -> dict[str, Any]:
        """Resume with `value` (`None`: continue past a breakpoint)."""
        if self.lg:
            payload = None if value is None else LGCommand(resume=value)
            return self.values(graph.invoke(payload, config))
        return self.values(graph.resume(value, config))


def both(build: Callable[[Engine], Any]) -> tuple[Any, Any]:
    return build(Engine("beamweaver")), build(Engine("langgraph"))


def run(
    engine: Engine, graph: Any, payload: Any, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    return engine.values(graph.invoke(payload, config) if config else graph.invoke(payload))


def add(name: str) -> Callable[[Any], dict[str, Any]]:
    return lambda state: {"items": [name]}


SCENARIOS: dict[str, Callable[[Engine], Any]] = {}


def scenario(fn: Callable[[Engine], Any]) -> Callable[[Engine], Any]:
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
def linear(e: Engine) -> Any:
    b = e.builder()
    for i in range(5):
        b.add_node(f"n{i}", lambda s, i=i: {"items": [i], "x": s.get("x", 0) + 1})
    b.add_edge(e.START, "n0")
    for i in range(4):
        b.add_edge(f"n{i}", f"n{i + 1}")
    return e.compile(b), {"items": [], "x": 0}


@scenario
def fanout_then_join(e: Engine) -> Any:
    b = e.builder()
    for name in ("w3", "w1", "w2"):
        b.add_node(name, add(name))
        b.add_edge(e.START, name)
    b.add_node("join", add("join"))
    b.add_edge(["w1", "w2", "w3"], "join")
    return e.compile(b), {"items": []}


@scenario
def two_edges_into_one_node(e: Engine) -> Any:
    b = e.builder()
    for name in ("a", "b", "c", "c2", "d"):
        b.add_node(name, add(name))
    b.add_edge(e.START, "a")
    b.add_edge("a", "b")
    b.add_edge("a", "c")
    b.add_edge("c", "c2")
    b.add_edge("b", "d")
    b.add_edge("c2", "d")
    return e.compile(b), {"items": []}


@scenario
def send_map_reduce(e: Engine) -> Any:
    b = e.builder()
    b.add_node("joke", lambda arg: {"items": [f"joke:{arg['subject']}"]})
    b.add_conditional_edges(
        e.START, lambda s: [e.Send("joke", {"subject": x}) for x in s["subjects"]]
    )
    return e.compile(b), {"subjects": ["cats", "dogs", "owls"], "items": []}


@scenario
def conditional_with_path_map(e: Engine) -> Any:
    b = e.builder()
    b.add_node("check", add("check"))
    b.add_node("yes", add("yes"))
    b.add_node("no", add("no"))
    b.add_edge(e.START, "check")
    b.add_conditional_edges(
        "check", lambda s: s["route"], {"go": "yes", "skip": "no", "stop": e.END}
    )
    return e.compile(b), {"route": "skip", "items": []}


@scenario
def command_goto_is_additive(e: Engine) -> Any:
    b = e.builder()
    b.add_node("a", lambda s: e.Command(goto="z", update={"items": ["a"]}))
    b.add_node("y", add("y"))
    b.add_node("z", add("z"))
    b.add_edge(e.START, "a")
    b.add_edge("a", "y")
    return e.compile(b), {"items": []}


@scenario
def loop_until_done(e: Engine) -> Any:
    b = e.builder()
    b.add_node("loop", lambda s: {"x": s["x"] + 1, "items": [s["x"]]})
    b.add_edge(e.START, "loop")
    b.add_conditional_edges("loop", lambda s: "loop" if s["x"] < 6 else e.END)
    return e.compile(b), {"x": 0, "items": []}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_final_state(name: str) -> None:
    (ours, our_input), (theirs, their_input) = both(SCENARIOS[name])
    assert run(Engine("beamweaver"), ours, our_input) == run(
        Engine("langgraph"), theirs, their_input
    )


def parallel_questions(e: Engine) -> Any:
    b = e.builder()
    b.add_node("left", lambda s: {"items": [f"a:{e.interrupt('question_a')}"]})
    b.add_node("right", lambda s: {"items": [f"b:{e.interrupt('question_b')}"]})
    b.add_node("sib", add("sib"))
    b.add_edge(e.START, "left")
    b.add_edge(e.START, "right")
    b.add_edge(e.START, "sib")
    return e.compile(b, checkpointed=True)


def test_parallel_interrupts_resumed_by_id_map_give_the_same_state() -> None:
    results = []
    for engine in (Engine("beamweaver"), Engine("langgraph")):
        graph = parallel_questions(engine)
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        graph.invoke({"items": []}, config)
        pending = engine.interrupts(graph, config)
        assert sorted(i.value for i in pending) == ["question_a", "question_b"]
        answers = {i.id: i.value.upper() for i in pending}
        out = graph.invoke(engine.Command(resume=answers), config)
        results.append(engine.values(out))
    assert results[0] == results[1]


def test_subgraph_interrupt_and_resume_give_the_same_state() -> None:
    results = []
    for engine in (Engine("beamweaver"), Engine("langgraph")):
        child_builder = engine.builder()
        child_builder.add_node("c1", add("c1"))
        child_builder.add_node("c2", lambda s, e=engine: {"items": [f"c2:{e.interrupt('ok?')}"]})
        child_builder.add_edge(engine.START, "c1")
        child_builder.add_edge("c1", "c2")
        child = child_builder.compile()
        parent_builder = engine.builder()
        parent_builder.add_node("pre", add("pre"))
        parent_builder.add_node("sub", child)
        parent_builder.add_node("post", add("post"))
        parent_builder.add_edge(engine.START, "pre")
        parent_builder.add_edge("pre", "sub")
        parent_builder.add_edge("sub", "post")
        parent = engine.compile(parent_builder, checkpointed=True)
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        parent.invoke({"items": []}, config)
        results.append(engine.values(parent.invoke(engine.Command(resume="yes"), config)))
    assert results[0] == results[1]


# -- subgraphs that share only some keys with their parent (issue 20) ----------------------


class Deep(TypedDict, total=False):
    items: Annotated[list[Any], operator.add]
    deep: int


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def child_snapshot(graph: Any, config: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    child = graph.get_state(config, subgraphs=True).tasks[0].state
    return child.values, tuple(child.next)


def test_a_narrow_subgraph_gets_the_shared_keys_and_updates_only_them() -> None:
    """The issue's example: the child declares `items` only; `last` stays the parent's."""
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        child = e.builder(Child)
        child.add_node("c0", lambda s: {"items": ["c0"], "private": f"saw {len(s['items'])}"})
        child.add_edge(e.START, "c0")
        parent = e.builder(Parent)
        parent.add_node("sg", child.compile())
        parent.add_edge(e.START, "sg")
        graph = e.compile(parent, checkpointed=True)
        results.append(run(e, graph, {"items": [], "last": "x"}, thread()))
    assert results[0] == results[1] == {"items": ["c0"], "last": "x"}


def test_an_interrupt_inside_a_narrow_subgraph_keeps_its_private_keys() -> None:
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        child = e.builder(Child)
        child.add_node("c0", lambda s: {"items": ["c0"], "private": "secret"})
        child.add_node("c1", lambda s, e=e: {"items": [f"c1:{e.interrupt({'q': s['private']})}"]})
        child.add_edge(e.START, "c0")
        child.add_edge("c0", "c1")
        parent = e.builder(Parent)
        parent.add_node("pre", add("pre"))
        parent.add_node("sg", child.compile())
        parent.add_node("post", lambda s: {"items": ["post"], "last": "y"})
        parent.add_edge(e.START, "pre")
        parent.add_edge("pre", "sg")
        parent.add_edge("sg", "post")
        graph = e.compile(parent, checkpointed=True)
        config = thread()
        paused = run(e, graph, {"items": [], "last": "x"}, config)
        questions = [i.value for i in e.interrupts(graph, config)]
        inside = child_snapshot(graph, config)
        done = e.resume(graph, "yes", config)
        results.append((paused, questions, inside, done))
    assert results[0] == results[1]
    assert results[0][2] == ({"items": ["pre", "c0"], "private": "secret"}, ("c1",))
    assert results[0][3] == {"items": ["pre", "pre", "c0", "c1:yes", "post"], "last": "y"}


def test_send_to_a_narrow_subgraph_passes_only_the_keys_it_declares() -> None:
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        child = e.builder(Child)
        child.add_node("c0", lambda s: {"items": [f"c0:{s.get('private')}:{len(s['items'])}"]})
        child.add_edge(e.START, "c0")
        parent = e.builder(Parent)
        parent.add_node("sg", child.compile())
        parent.add_conditional_edges(
            e.START,
            lambda s, e=e: [
                e.Send("sg", {"items": ["a"], "last": "ignored", "private": "p"}),
                e.Send("sg", {"items": ["b", "c"]}),
            ],
        )
        graph = e.compile(parent, checkpointed=True)
        results.append(run(e, graph, {"items": [], "last": "x"}, thread()))
    assert results[0] == results[1]
    assert results[0] == {"items": ["a", "c0:p:1", "b", "c", "c0:None:2"], "last": "x"}


def test_interrupts_in_narrow_subgraphs_under_send_resume_by_id() -> None:
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        child = e.builder(Child)
        child.add_node("c0", lambda s: {"private": s["items"][0]})
        child.add_node(
            "c1", lambda s, e=e: {"items": [f"{s['private']}:{e.interrupt(s['private'])}"]}
        )
        child.add_edge(e.START, "c0")
        child.add_edge("c0", "c1")
        parent = e.builder(Parent)
        parent.add_node("sg", child.compile())
        parent.add_conditional_edges(
            e.START,
            lambda s, e=e: [e.Send("sg", {"items": [x], "last": s["last"]}) for x in ("u", "v")],
        )
        graph = e.compile(parent, checkpointed=True)
        config = thread()
        run(e, graph, {"items": [], "last": "x"}, config)
        pending = e.interrupts(graph, config)
        assert sorted(i.value for i in pending) == ["u", "v"]
        first = next(i for i in pending if i.value == "u")
        partial = e.resume(graph, {first.id: "U"}, config)
        rest = e.interrupts(graph, config)
        done = e.resume(graph, {rest[0].id: "V"}, config)
        results.append((partial, [i.value for i in rest], done))
    assert results[0] == results[1]
    assert results[0][2] == {"items": ["u", "u:U", "v", "v:V"], "last": "x"}


def test_a_narrow_subgraph_nested_two_levels() -> None:
    """Parent(items, last) > Child(items, private) > Deep(items, deep), interrupt inside."""
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        inner = e.builder(Deep)
        inner.add_node("g0", lambda s, e=e: {"items": [f"g0:{e.interrupt('deep?')}"], "deep": 1})
        inner.add_edge(e.START, "g0")
        middle = e.builder(Child)
        middle.add_node("m0", lambda s: {"items": ["m0"], "private": "m"})
        middle.add_node("inner", inner.compile())
        middle.add_node("m1", lambda s: {"items": [f"m1:{s['private']}"]})
        middle.add_edge(e.START, "m0")
        middle.add_edge("m0", "inner")
        middle.add_edge("inner", "m1")
        parent = e.builder(Parent)
        parent.add_node("outer", middle.compile())
        parent.add_edge(e.START, "outer")
        graph = e.compile(parent, checkpointed=True)
        config = thread()
        paused = run(e, graph, {"items": ["in"], "last": "x"}, config)
        mid = graph.get_state(config, subgraphs=True).tasks[0].state
        inside = (mid.values, mid.tasks[0].state.values, tuple(mid.tasks[0].state.next))
        done = e.resume(graph, "ok", config)
        results.append((paused, inside, done))
    assert results[0] == results[1]
    assert results[0][1] == (
        {"items": ["in", "m0"], "private": "m"},
        {"items": ["in", "m0"]},
        ("g0",),
    )
    assert results[0][2]["last"] == "x" and results[0][2]["items"][-1] == "m1:m"


def test_a_breakpoint_inside_a_narrow_subgraph() -> None:
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        child = e.builder(Child)
        child.add_node("c0", lambda s: {"items": ["c0"], "private": "p"})
        child.add_node("c1", lambda s: {"items": [f"c1:{s['private']}"]})
        child.add_edge(e.START, "c0")
        child.add_edge("c0", "c1")
        parent = e.builder(Parent)
        parent.add_node("sg", child.compile(interrupt_before=["c1"]))
        parent.add_edge(e.START, "sg")
        graph = e.compile(parent, checkpointed=True)
        config = thread()
        paused = run(e, graph, {"items": [], "last": "x"}, config)
        inside = child_snapshot(graph, config)
        done = e.resume(graph, None, config)
        results.append((paused, inside, done))
    assert results[0] == results[1]
    assert results[0][1] == ({"items": ["c0"], "private": "p"}, ("c1",))
    assert results[0][2] == {"items": ["c0", "c1:p"], "last": "x"}


# -- a failed step, and a Command without a resume, as input ------------------------------


def charge_fails_once(e: Engine, *, side: bool = False) -> Any:
    """`price`, then `charge`, whose first attempt raises `ValueError('card declined')`
    (with `side`: and a `side` task beside it, writing `x`)."""
    failures = [ValueError("card declined")]

    def charge(state: Any) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return {"items": ["charged"]}

    b = e.builder()
    b.add_node("price", add("price"))
    b.add_node("charge", charge)
    b.add_edge(e.START, "price")
    b.add_edge("price", "charge")
    if side:
        b.add_node("side", lambda s: {"x": 3})
        b.add_edge("price", "side")
    return e.compile(b, checkpointed=True)


def test_a_failed_step_shows_the_same_error_and_runs_again() -> None:
    """LangGraph stores a failed task's ERROR write as `repr(exc)` and shows it on the task
    in `get_state`; the task stays next and runs again on `invoke(None)`."""
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        graph = charge_fails_once(e)
        config = thread()
        with pytest.raises(ValueError, match="card declined"):
            graph.invoke({"items": []}, config)
        failed = graph.get_state(config)
        seen = (tuple(failed.next), [(t.name, t.error) for t in failed.tasks])
        results.append((seen, run(e, graph, None, config)))
    assert results[0] == results[1]
    assert results[0] == (
        (("charge",), [("charge", "ValueError('card declined')")]),
        {"items": ["price", "charged"]},
    )


def paused_with_a_side_node(e: Engine) -> Any:
    b = e.builder()
    b.add_node("ask", lambda s, e=e: {"items": [f"ask:{e.interrupt('ok?')}:{s['x']}"]})
    b.add_node("side", lambda s: {"items": [f"side:{s['x']}"]})
    b.add_node("finish", add("finish"))
    b.add_edge(e.START, "ask")
    b.add_edge("ask", "finish")
    return e.compile(b, checkpointed=True)


@pytest.mark.parametrize(
    "command",
    [{"update": {"x": 5}}, {"goto": "side"}, {"update": {"x": 7}, "goto": ["side"]}],
    ids=["update", "goto", "both"],
)
def test_a_command_without_resume_on_a_paused_thread(command: dict[str, Any]) -> None:
    """The update is applied to the paused step and a goto target runs beside it; the
    question still waits, with its id, and the answer finishes the run on the updated
    state. (LangGraph also runs the waiting node again, which asks the same question
    again: BeamWeaver leaves it waiting, docs/engine.md.)"""
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        graph = paused_with_a_side_node(e)
        config = thread()
        graph.invoke({"items": [], "x": 1}, config)
        asked = [i.id for i in e.interrupts(graph, config)]
        changed = run(e, graph, e.Command(**command), config)
        still = [i.id for i in e.interrupts(graph, config)] == asked
        results.append(
            (changed, still, tuple(graph.get_state(config).next), e.resume(graph, "yes", config))
        )
    assert results[0] == results[1]
    assert results[0][1] is True


@pytest.mark.parametrize(
    "command", [{"update": {"x": 5}}, {"goto": "side"}], ids=["update", "goto"]
)
def test_a_command_without_resume_on_a_finished_thread(command: dict[str, Any]) -> None:
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        graph = paused_with_a_side_node(e)
        config = thread()
        graph.invoke({"items": [], "x": 1}, config)
        e.resume(graph, "yes", config)
        results.append(run(e, graph, e.Command(**command), config))
    assert results[0] == results[1]


@pytest.mark.parametrize("timing", ["before", "after"])
def test_a_command_update_continues_past_a_breakpoint(timing: str) -> None:
    results = []
    for e in (Engine("beamweaver"), Engine("langgraph")):
        b = e.builder()
        b.add_node("one", add("one"))
        b.add_node("two", lambda s: {"items": [f"two:{s['x']}"]})
        b.add_edge(e.START, "one")
        b.add_edge("one", "two")
        graph = b.compile(
            checkpointer=InMemorySaver() if e.lg else MemoryCheckpointer(),
            **(
                {"interrupt_before": ["two"]}
                if timing == "before"
                else {"interrupt_after": ["one"]}
            ),
        )
        config = thread()
        paused = run(e, graph, {"items": [], "x": 1}, config)
        results.append((paused, run(e, graph, e.Command(update={"x": 2}), config)))
    assert results[0] == results[1]
    assert results[0][1] == {"items": ["one", "two:2"], "x": 2}


def test_history_shows_each_finished_tasks_result() -> None:
    """Every task of a step that completed shows its writes as `result` in the history,
    as LangGraph's `get_state_history` does. LangGraph's input checkpoint (its
    `__start__` task, one step before BeamWeaver's numbering) is left aside."""

    def build(e: Engine) -> Any:
        b = e.builder()
        b.add_node("a", lambda s: {"items": ["a"], "x": 1})
        b.add_node("b", lambda s: {"items": ["b"]})
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_edge(e.START, "a")
        b.add_edge(e.START, "b")
        b.add_edge("a", "c")
        graph = e.compile(b, checkpointed=True)
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        graph.invoke({"items": []}, config)
        return [
            (tuple(s.next), [(t.name, t.result, t.error) for t in s.tasks])
            for s in graph.get_state_history(config)
            if tuple(s.next) != ("__start__",)
        ]

    ours, theirs = both(build)
    assert (
        ours
        == theirs
        == [
            ((), []),
            (("c",), [("c", {"items": ["c"]}, None)]),
            (("a", "b"), [("a", {"items": ["a"], "x": 1}, None), ("b", {"items": ["b"]}, None)]),
        ]
    )


def history_tasks(graph: Any, config: dict[str, Any]) -> list[Any]:
    """Each history entry's tasks as `(name, result, error, interrupt values)`, newest
    first, leaving aside LangGraph's input checkpoint (its `__start__` task)."""
    return [
        [(t.name, t.result, t.error, [i.value for i in t.interrupts]) for t in s.tasks]
        for s in graph.get_state_history(config)
        if tuple(s.next) != ("__start__",)
    ]


def test_history_of_an_interrupted_step_shows_what_its_finished_tasks_wrote() -> None:
    """While the step waits, the task that asked has no result and its sibling shows its
    writes; once the answer completes the step, the task that asked shows its writes too
    (its interrupt still listed, as the record of the step). (`next` and `values` of the
    paused entry differ on purpose: docs/engine.md, "The snapshot of a paused step".)"""

    def build(e: Engine) -> Any:
        b = e.builder()
        b.add_node("ask", lambda s, e=e: {"items": [f"ask:{e.interrupt('ok?')}"]})
        b.add_node("sib", add("sib"))
        b.add_node("after", add("after"))
        b.add_edge(e.START, "ask")
        b.add_edge(e.START, "sib")
        b.add_edge("ask", "after")
        graph = e.compile(b, checkpointed=True)
        config = thread()
        graph.invoke({"items": []}, config)
        paused = history_tasks(graph, config)
        e.resume(graph, "yes", config)
        return paused, history_tasks(graph, config)

    ours, theirs = both(build)
    assert ours == theirs
    paused, done = ours
    assert paused == [[("ask", None, None, ["ok?"]), ("sib", {"items": ["sib"]}, None, [])]]
    assert done == [
        [],
        [("after", {"items": ["after"]}, None, [])],
        [("ask", {"items": ["ask:yes"]}, None, ["ok?"]), ("sib", {"items": ["sib"]}, None, [])],
    ]


def test_history_shows_a_failed_tasks_error_and_once_it_ran_again_its_result() -> None:
    """The failed attempt's error stays on the step's entry (LangGraph's ERROR write);
    once the task ran again and the step completed, its writes are its result beside it."""

    def build(e: Engine) -> Any:
        graph = charge_fails_once(e, side=True)
        config = thread()
        with pytest.raises(ValueError, match="card declined"):
            graph.invoke({"items": []}, config)
        failed = history_tasks(graph, config)
        graph.invoke(None, config)
        return failed, history_tasks(graph, config)

    ours, theirs = both(build)
    assert ours == theirs
    error = "ValueError('card declined')"
    failed, done = ours
    assert failed == [
        [("charge", None, error, []), ("side", {"x": 3}, None, [])],
        [("price", {"items": ["price"]}, None, [])],
    ]
    assert done == [
        [],
        [("charge", {"items": ["charged"]}, error, []), ("side", {"x": 3}, None, [])],
        [("price", {"items": ["price"]}, None, [])],
    ]


def test_history_of_a_fork_from_a_middle_checkpoint_shows_both_lines_results() -> None:
    """A fork from the middle of a finished run runs the forked step again on a line of its
    own: the history shows each line's tasks with what they wrote (the fork's copy of the
    checkpoint, before its step ran, included), and the original line keeps its results."""

    def build(e: Engine) -> Any:
        runs: list[str] = []

        def b_node(state: Any) -> dict[str, Any]:
            runs.append("b")
            return {"items": ["b"], "x": len(runs)}

        b = e.builder()
        b.add_node("a", add("a"))
        b.add_node("b", b_node)
        b.add_node("c", add("c"))
        b.add_edge(e.START, "a")
        b.add_edge("a", "b")
        b.add_edge("b", "c")
        graph = e.compile(b, checkpointed=True)
        config = thread()
        graph.invoke({"items": []}, config)
        middle = next(s for s in graph.get_state_history(config) if tuple(s.next) == ("b",))
        graph.invoke(None, middle.config)
        entries = [
            (s.metadata["source"] == "fork", tuple(s.next), [(t.name, t.result) for t in s.tasks])
            for s in graph.get_state_history(config)
            if tuple(s.next) != ("__start__",)
        ]
        return entries, runs

    ours, theirs = both(build)
    assert ours == theirs
    entries, runs = ours
    assert runs == ["b", "b"]
    assert entries == [
        (False, (), []),
        (False, ("c",), [("c", {"items": ["c"]})]),
        (True, ("b",), [("b", {"items": ["b"], "x": 2})]),
        (False, (), []),
        (False, ("c",), [("c", {"items": ["c"]})]),
        (False, ("b",), [("b", {"items": ["b"], "x": 1})]),
        (False, ("a",), [("a", {"items": ["a"]})]),
    ]
