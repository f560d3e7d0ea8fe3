"""Graph definitions: chaining, schemas, and every mistake reported at once."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from beamweaver_core.exceptions import GraphDefinitionError
from beamweaver_core.graph import END, START, Graph


def test_every_definition_problem_is_reported_at_once() -> None:
    builder = (
        Graph()
        .add_node("a", lambda s: s)
        .add_node("a", lambda s: s)
        .add_node(START, lambda s: s)
        .add_node("bad|name", lambda s: s)
        .add_node("not_callable", 42)
        .add_edge("a", "missing")
        .add_edge(END, "a")
        .add_edge("a", START)
        .add_conditional_edges("ghost", lambda s: "a")
        .add_conditional_edges("a", lambda s: "x", path_map={"x": "nowhere"})
    )
    with pytest.raises(GraphDefinitionError) as info:
        builder.compile(interrupt_before=["nope"], interrupt_after=["a"])

    assert sorted(info.value.problems) == sorted(
        [
            "node 'a' is added twice; node names must be unique",
            "node name '__start__' is reserved or contains one of ('|', ':', '#'); choose another name",
            "node name 'bad|name' is reserved or contains one of ('|', ':', '#'); choose another name",
            "node 'not_callable' is 42, which is neither callable nor a compiled graph",
            "edge 'a' -> 'missing': unknown node 'missing'",
            "edge END -> 'a': END cannot be the source of an edge",
            "edge 'a' -> START: START cannot be the target of an edge",
            "conditional edge from unknown node 'ghost'",
            "conditional edge from 'a': path_map names unknown node 'nowhere'",
            "no path from START: add an edge from START, e.g. add_edge(START, 'first_node')",
            "interrupt_before names unknown node 'nope'",
        ]
    )
    assert "Fix them in the builder before calling compile()" in str(info.value)


def test_join_sources_must_be_nodes() -> None:
    with pytest.raises(GraphDefinitionError) as info:
        Graph().add_node("a", lambda s: s).add_edge(START, "a").add_edge(["a", "b"], END).compile()
    assert info.value.problems == ("join ['a', 'b'] -> '__end__': 'b' is not a node",)


def test_builder_methods_chain_and_a_function_names_its_node() -> None:
    def greet(state: dict[str, Any]) -> dict[str, Any]:
        return {"greeting": f"hi {state['name']}"}

    graph = Graph().add_node(greet).add_edge(START, "greet").compile()

    assert list(graph.nodes) == ["greet"]
    assert graph.invoke({"name": "ada"}).state == {"name": "ada", "greeting": "hi ada"}


def test_annotated_typed_dict_fields_declare_reducers() -> None:
    class State(TypedDict, total=False):
        count: Annotated[int, operator.add]
        log: Annotated[list[str], operator.add]
        last: str

    graph = (
        Graph(state_schema=State)
        .add_node("a", lambda s: {"count": 1, "log": ["a"], "last": "a"})
        .add_node("b", lambda s: {"count": 10, "log": ["b"]})
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile()
    )

    assert graph.invoke({"count": 100, "log": []}).state == {
        "count": 111,
        "log": ["a", "b"],
        "last": "a",
    }


def test_a_reducer_is_not_called_for_the_first_value_of_a_key() -> None:
    calls: list[tuple[Any, Any]] = []

    def reducer(existing: Any, update: Any) -> Any:
        calls.append((existing, update))
        return existing + update

    graph = (
        Graph()
        .add_reducer("total", reducer)
        .add_node("a", lambda s: {"total": 5})
        .add_node("b", lambda s: {"total": 7})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile()
    )

    assert graph.invoke({}).state == {"total": 12}
    assert calls == [(5, 7)]


def test_compiled_graph_is_reusable_and_independent_of_later_builder_changes() -> None:
    builder = Graph().add_node("a", lambda s: {"v": 1}).add_edge(START, "a")
    graph = builder.compile()
    builder.add_node("b", lambda s: {"v": 2}).add_edge("a", "b")

    assert graph.invoke({}).state == {"v": 1}
    assert graph.invoke({}).state == {"v": 1}
