"""Part of the checkpointer contract: what each task of a checkpoint wrote (its `results`).

A completed step's writes are stored with the checkpoint the step produced, and read back
as the results of the parent's tasks (`checkpoint.task_writes`): by id, in the history
(on every page, whichever page holds the child), after a fork, and for a step that paused
first. They are never pending writes of the parent (the storage primitive is
`test_a_steps_writes_are_its_parents_results_and_no_pending_writes` of the contract).
Every checkpointer runs these (through `CheckpointerContract`).
"""

from __future__ import annotations

import operator
from typing import Any

import pytest

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import START, Graph, interrupt
from beamweaver_core.messages import Message


def results_by_entry(graph: Any, config: dict[str, Any]) -> list[Any]:
    """Each history entry's tasks as `(name, result)`, newest first."""
    return [[(t.name, t.result) for t in s.tasks] for s in graph.get_state_history(config)]


class TaskResultsContract:
    """Every checkpointer hands out a checkpoint's `results` the same way."""

    def test_engine_history_shows_what_each_task_wrote_on_every_page(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """Parallel appends to one list, a value set whole, a task that wrote nothing: each
        entry shows the same results read in one page, one entry a page (whose child is
        then on another page) or by id."""
        graph = (
            Graph()
            .add_reducer("items", operator.add)
            .add_node("a", lambda s: {"items": [{"from": "a", "n": len(s["items"])}]})
            .add_node("b", lambda s: {"items": ["b1", "b2"], "doc": {"text": "d" * 300}})
            .add_node("quiet", lambda s: None)
            .add_node("last", lambda s: {"items": ["last"], "n": 7})
            .add_edge(START, "a")
            .add_edge(START, "b")
            .add_edge(START, "quiet")
            .add_edge("a", "last")
            .compile(checkpointer=checkpointer)
        )
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"items": ["in"]}, config)
        graph.invoke({"items": ["again"]}, config)

        def run(n: int) -> list[Any]:
            return [
                [],
                [("last", {"items": ["last"], "n": 7})],
                [
                    ("a", {"items": [{"from": "a", "n": n}]}),
                    ("b", {"items": ["b1", "b2"], "doc": {"text": "d" * 300}}),
                    ("quiet", {}),
                ],
            ]

        whole = results_by_entry(graph, config)
        assert whole == [*run(6), *run(1)]
        one_by_one: list[Any] = []
        before = None
        for _ in whole:
            page = list(graph.get_state_history(config, limit=1, before=before))
            one_by_one.append([(t.name, t.result) for t in page[0].tasks])
            before = page[0].config
        assert one_by_one == whole
        by_id = [
            [(t.name, t.result) for t in graph.get_state(s.config).tasks]
            for s in graph.get_state_history(config)
        ]
        assert by_id == whole

    def test_engine_a_write_is_read_back_whatever_holds_its_list(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """A step that makes its list long enough to be stored whole (a snapshot, not a
        delta), a reducer that rebuilds the items (so nothing refers to them), and a long
        value set again: each task's result is exactly what it wrote."""
        graph = (
            Graph()
            .add_reducer("items", operator.add)
            .add_reducer("copies", lambda old, new: [dict(x) for x in [*old, *new]])
            .add_node(
                "bulk",
                lambda s: {
                    "items": [{"i": i} for i in range(300)],
                    "copies": [{"c": len(s["copies"])}],
                    "text": "t" * 400,
                },
            )
            .add_node("tail", lambda s: {"items": [{"i": "tail"}], "text": "u" * 400})
            .add_edge(START, "bulk")
            .add_edge("bulk", "tail")
            .compile(checkpointer=checkpointer)
        )
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"items": [{"i": "first"}], "copies": []}, config)
        assert results_by_entry(graph, config) == [
            [],
            [("tail", {"items": [{"i": "tail"}], "text": "u" * 400})],
            [
                (
                    "bulk",
                    {
                        "items": [{"i": i} for i in range(300)],
                        "copies": [{"c": 0}],
                        "text": "t" * 400,
                    },
                )
            ],
        ]

    def test_engine_written_engine_objects_and_look_alike_data_read_back_as_written(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """Messages (stored in a blob, or on their own) and a user dict shaped like the
        serde's envelope come back as they were written, never one as the other."""
        hello = Message.user("hello")
        graph = (
            Graph()
            .add_reducer("messages", operator.add)
            .add_reducer("notes", lambda old, new: [*old, new])
            .add_node(
                "write",
                lambda s: {
                    "messages": [hello, Message.assistant("hi")],
                    "notes": Message.user("aside"),
                    "data": {"__bw__": "message", "v": {"role": "user"}},
                },
            )
            .add_edge(START, "write")
            .compile(checkpointer=checkpointer)
        )
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"messages": [], "notes": []}, config)
        assert results_by_entry(graph, config)[1] == [
            (
                "write",
                {
                    "messages": [Message.user("hello"), Message.assistant("hi")],
                    "notes": Message.user("aside"),
                    "data": {"__bw__": "message", "v": {"role": "user"}},
                },
            )
        ]

    def test_engine_an_unstorable_write_is_refused_even_when_its_reducer_makes_it_storable(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """Writes are stored as data, like the values: a set that the reducer turns into a
        list is refused with its key, before anything of the step is written."""
        graph = (
            Graph()
            .add_reducer("tags", lambda old, new: sorted({*old, *new}))
            .add_node("tag", lambda s: {"tags": {"b", "a"}})
            .add_edge(START, "tag")
            .compile(checkpointer=checkpointer)
        )
        config = {"configurable": {"thread_id": thread}}
        with pytest.raises(TypeError, match=r"state path '<task writes>\.tags'"):
            graph.invoke({"tags": []}, config)
        assert checkpointer.load(thread) is None

    def test_engine_a_fork_shows_its_own_results_and_leaves_the_original_lines(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """A fork from a middle checkpoint runs its step again: the fork's copy shows the
        new run's writes, the checkpoint it was forked from keeps the first run's."""
        runs: list[str] = []

        def middle(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("middle")
            return {"items": [f"middle {len(runs)}"]}

        graph = (
            Graph()
            .add_reducer("items", operator.add)
            .add_node("first", lambda s: {"items": ["first"]})
            .add_node("middle", middle)
            .add_node("end", lambda s: {"items": ["end"]})
            .add_edge(START, "first")
            .add_edge("first", "middle")
            .add_edge("middle", "end")
            .compile(checkpointer=checkpointer)
        )
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"items": []}, config)
        original = next(s for s in graph.get_state_history(config) if s.next == ("middle",))
        graph.invoke(None, original.config)
        assert runs == ["middle", "middle"]
        history = list(graph.get_state_history(config))
        fork = next(s for s in history if s.metadata["source"] == "fork")
        assert fork.parent_config == original.config
        assert [(t.name, t.result) for t in fork.tasks] == [("middle", {"items": ["middle 2"]})]
        assert [(t.name, t.result) for t in original.tasks] == [("middle", {"items": ["middle 1"]})]
        assert graph.get_state(original.config) == original
        assert original in history

    def test_engine_a_paused_step_shows_its_answered_task_once_it_completed(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        graph = (
            Graph()
            .add_reducer("items", operator.add)
            .add_node("ask", lambda s: {"items": [f"ask:{interrupt('ok?')}"]})
            .add_node("sibling", lambda s: {"items": ["sibling"]})
            .add_edge(START, "ask")
            .add_edge(START, "sibling")
            .compile(checkpointer=checkpointer)
        )
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"items": []}, config)
        assert results_by_entry(graph, config) == [
            [("ask", None), ("sibling", {"items": ["sibling"]})]
        ]
        graph.resume("yes", config)
        assert results_by_entry(graph, config) == [
            [],
            [("ask", {"items": ["ask:yes"]}), ("sibling", {"items": ["sibling"]})],
        ]
