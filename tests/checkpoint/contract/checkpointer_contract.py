"""The checkpointer contract, written once and run against every checkpointer.

A test module subclasses `CheckpointerContract` and provides a `checkpointer` fixture
(see tests/checkpoint/test_memory.py and tests/checkpoint/test_postgres.py). The engine
scenarios at the end run whole graphs, so a backend passes only if the engine behaves the
same on it.
"""

from __future__ import annotations

import math
import operator
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.checkpoint.types import (
    Checkpoint,
    NewCheckpoint,
    Source,
    TaskRecord,
    TaskSpec,
)
from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.graph import END, START, Command, Graph, Interrupt, Send, interrupt
from beamweaver_core.messages import Message, ToolCall
from tests.checkpoint.contract.finished_tasks import FinishedTasksContract
from tests.checkpoint.contract.heads import HeadsContract
from tests.checkpoint.contract.task_results import TaskResultsContract


def make_checkpoint(
    thread_id: str,
    seq: int,
    values: dict[str, Any],
    *,
    parent: Checkpoint | None = None,
    ns: str = "",
    tasks: tuple[TaskSpec, ...] = (),
    metadata: dict[str, Any] | None = None,
    source: Source = "loop",
    writes: dict[str, tuple[tuple[str, Any], ...]] | None = None,
) -> NewCheckpoint:
    versions = {k: seq for k in values}
    cp = Checkpoint(
        id=uuid.uuid4().hex,
        thread_id=thread_id,
        ns=ns,
        seq=seq,
        step=seq - 2,
        parent_id=parent.id if parent else None,
        source=source,
        created_at=datetime.now(UTC),
        values=values,
        versions=versions,
        tasks=tasks,
        metadata=metadata or {},
    )
    return NewCheckpoint(cp, changed=frozenset(values), writes=writes or {})


def cfg(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **extra}}


class CheckpointerContract(FinishedTasksContract, TaskResultsContract, HeadsContract):
    """Behaviour every `Checkpointer` must have (with `FinishedTasksContract`,
    `TaskResultsContract` and `HeadsContract`)."""

    @pytest.fixture
    def checkpointer(self) -> Checkpointer:  # pragma: no cover - provided by subclasses
        raise NotImplementedError

    @pytest.fixture
    def thread(self) -> str:
        return f"t-{uuid.uuid4().hex[:12]}"

    # -- storage primitives -------------------------------------------------------------

    def test_load_of_an_unknown_thread_is_none(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        assert checkpointer.load(thread) is None
        assert list(checkpointer.history(thread)) == []

    def test_commit_then_load_returns_the_checkpoint(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        task = TaskSpec(id="t1", name="node_a")
        push = TaskSpec(id="t2", name="node_b", push=0, arg={"x": [1, 2]})
        new = make_checkpoint(
            thread,
            1,
            {"n": 3, "items": ["a", "b"], "doc": {"k": "v"}},
            tasks=(task, push),
            metadata={"run_id": "r1"},
        )
        checkpointer.commit(thread, "", [new])
        loaded = checkpointer.load(thread)
        assert loaded is not None
        assert loaded.id == new.checkpoint.id
        assert loaded.values == {"n": 3, "items": ["a", "b"], "doc": {"k": "v"}}
        assert loaded.tasks == (task, push)
        assert loaded.seq == 1 and loaded.step == -1 and loaded.source == "loop"
        assert loaded.metadata == {"run_id": "r1"}
        assert loaded.records == {}
        assert abs((loaded.created_at - new.checkpoint.created_at).total_seconds()) < 0.01

    def test_load_by_id_and_history_newest_first(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        first = make_checkpoint(thread, 1, {"v": [1]})
        second = make_checkpoint(thread, 2, {"v": [1, 2]}, parent=first.checkpoint)
        third = make_checkpoint(thread, 3, {"v": [1, 2, 3]}, parent=second.checkpoint)
        checkpointer.commit(thread, "", [first, second])
        checkpointer.commit(thread, "", [third])
        by_id = checkpointer.load(thread, "", first.checkpoint.id)
        assert by_id is not None and by_id.values == {"v": [1]}
        assert checkpointer.load(thread, "", "nope") is None
        history = list(checkpointer.history(thread))
        assert [c.seq for c in history] == [3, 2, 1]
        assert history[1].parent_id == first.checkpoint.id
        assert [c.seq for c in checkpointer.history(thread, limit=2)] == [3, 2]
        assert [c.seq for c in checkpointer.history(thread, before=third.checkpoint.id)] == [2, 1]

    def test_records_are_replaced_per_task_and_loaded_with_their_checkpoint(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        new = make_checkpoint(thread, 1, {"v": 1}, tasks=(TaskSpec("a", "a"), TaskSpec("b", "b")))
        cid = new.checkpoint.id
        question = Interrupt(id="f" * 32, value={"q": 1}, node="a", ns="a:x")
        checkpointer.commit(
            thread, "", [new], [(cid, "a", TaskRecord("interrupted", interrupts=(question,)))]
        )
        checkpointer.commit(
            thread,
            "",
            [],
            [
                (cid, "a", TaskRecord("interrupted", answers=("yes",), interrupts=(question,))),
                (
                    cid,
                    "b",
                    TaskRecord("done", writes=(("v", 2),), routes=("c", Send("d", {"i": 1}))),
                ),
            ],
        )
        loaded = checkpointer.load(thread)
        assert loaded is not None
        assert loaded.records == {
            "a": TaskRecord("interrupted", answers=("yes",), interrupts=(question,)),
            "b": TaskRecord("done", writes=(("v", 2),), routes=("c", Send("d", {"i": 1}))),
        }

    def test_a_steps_writes_are_its_parents_results_and_no_pending_writes(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """The writes stored with a `loop` checkpoint are its parent's results, by task id
        (a task that wrote nothing has an empty result; see `task_results.py`); a fork's
        copy of the parent, also its child, changes nothing; the parent has no pending
        records."""
        tasks = (TaskSpec("a", "a"), TaskSpec("b", "b"), TaskSpec("c", "c"))
        parent = make_checkpoint(thread, 1, {"items": ["x"]}, tasks=tasks)
        items = ["x", {"text": "y" * 300}]
        doc = {"k": "v"}
        writes = {"a": (("items", items),), "b": (("n", 1), ("doc", doc)), "c": ()}
        child = make_checkpoint(
            thread,
            2,
            {"items": items, "n": 1, "doc": doc},
            parent=parent.checkpoint,
            writes=writes,
        )
        fork = make_checkpoint(
            thread, 3, {"items": ["x"]}, parent=parent.checkpoint, source="fork", tasks=tasks
        )
        checkpointer.commit(thread, "", [parent, child])
        checkpointer.commit(thread, "", [fork])

        expected = {
            "a": (("items", ["x", {"text": "y" * 300}]),),
            "b": (("n", 1), ("doc", {"k": "v"})),
            "c": (),
        }
        loaded = checkpointer.load(thread, "", parent.checkpoint.id)
        assert loaded is not None
        assert loaded.results == expected and loaded.records == {}
        history = {c.id: c for c in checkpointer.history(thread)}
        assert history[parent.checkpoint.id].results == expected
        assert history[child.checkpoint.id].results == {}
        assert history[fork.checkpoint.id].results == {}
        head = checkpointer.load(thread)
        assert head is not None and head.id == fork.checkpoint.id and head.results == {}

    def test_a_taken_position_is_refused_and_nothing_of_the_batch_is_written(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        first = make_checkpoint(thread, 1, {"v": 1})
        checkpointer.commit(thread, "", [first])
        fresh = make_checkpoint(thread, 2, {"v": 2}, parent=first.checkpoint)
        clash = make_checkpoint(thread, 1, {"v": 99}, parent=first.checkpoint)
        with pytest.raises(ThreadBusyError):
            checkpointer.commit(thread, "", [fresh, clash])
        assert [c.seq for c in checkpointer.history(thread)] == [1]

    def test_namespaces_are_separate_and_delete_removes_all(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        checkpointer.commit(thread, "", [make_checkpoint(thread, 1, {"v": "root"})])
        checkpointer.commit(
            thread, "sub:1", [make_checkpoint(thread, 1, {"v": "child"}, ns="sub:1")]
        )
        root, child = checkpointer.load(thread), checkpointer.load(thread, "sub:1")
        assert root is not None and root.values == {"v": "root"}
        assert child is not None and child.values == {"v": "child"}
        assert checkpointer.namespaces(thread) == ["", "sub:1"]
        checkpointer.delete_thread(thread)
        assert checkpointer.load(thread) is None and checkpointer.load(thread, "sub:1") is None

    # -- values ----------------------------------------------------------------------------

    def test_engine_types_round_trip(self, checkpointer: Checkpointer, thread: str) -> None:
        when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        values = {
            "messages": [
                Message.user("hi"),
                Message.assistant("", tool_calls=[ToolCall("c1", "search", {"q": "x"})]),
                Message.tool({"rows": 2}, tool_call_id="c1", name="search", status="error"),
            ],
            "send": Send("n", {"a": 1}),
            "question": Interrupt(id="a" * 32, value=[1], node="n", ns="n:1", timing="before"),
            "when": when,
            "raw": b"\x00\xffbytes",
            "nested": {"list": [1, 2.5, None, True, "s"], "tuple": (1, 2)},
        }
        checkpointer.commit(thread, "", [make_checkpoint(thread, 1, values)])
        loaded = checkpointer.load(thread)
        assert loaded is not None
        assert loaded.values == {
            **values,
            "nested": {"list": [1, 2.5, None, True, "s"], "tuple": [1, 2]},
        }
        assert isinstance(loaded.values["messages"][1].tool_calls[0], ToolCall)

    def test_data_shaped_like_serialized_objects_stays_plain_data(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        hostile = {
            "fake_message": {"__bw__": "message", "v": {"role": "user", "content": "x"}},
            "unknown_tag": {"__bw__": "os.system", "v": "touch pwned"},
            "langchain": {
                "lc": 2,
                "type": "constructor",
                "id": ["os", "system"],
                "kwargs": {"command": "touch pwned"},
            },
            "pickle_b64": "gASVIAAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAV0b3VjaJSFlFKULg==",
        }
        checkpointer.commit(thread, "", [make_checkpoint(thread, 1, {"args": hostile})])
        loaded = checkpointer.load(thread)
        assert loaded is not None
        assert loaded.values == {"args": hostile}
        assert type(loaded.values["args"]["fake_message"]) is dict

    @pytest.mark.parametrize(
        ("value", "problem"),
        [
            ({"ok": 1, "bad": object()}, "values of type object cannot be checkpointed"),
            ({"bad": "a\x00b"}, "NUL character"),
            ({"bad": "x\ud800y"}, "lone surrogate"),
            ({"bad": [1.0, math.nan]}, "nan is not valid JSON"),
            ({"bad": math.inf}, "inf is not valid JSON"),
            ({"bad": {1: "int key"}}, "dict keys must be str"),
            ({"bad": 10**30}, "does not fit in 64 bits"),
        ],
    )
    def test_unstorable_values_are_refused_with_their_path_before_any_write(
        self, checkpointer: Checkpointer, thread: str, value: dict[str, Any], problem: str
    ) -> None:
        good = make_checkpoint(thread, 1, {"fine": [1]})
        with pytest.raises(TypeError) as info:
            checkpointer.commit(
                thread, "", [good, make_checkpoint(thread, 2, value, parent=good.checkpoint)]
            )
        assert problem in str(info.value)
        assert "'bad" in str(info.value)
        # The error is a plain TypeError (no private class in the traceback) that shows
        # the offending value.
        assert type(info.value) is TypeError and info.value.__cause__ is None
        assert "The value: " in str(info.value)
        assert checkpointer.load(thread) is None

    # -- growth ------------------------------------------------------------------------------

    def test_an_append_only_list_is_stored_as_deltas_and_rebuilt(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        graph = (
            Graph()
            .add_reducer("messages", operator.add)
            .add_node(
                "say",
                lambda s: {
                    "messages": [{"role": "user", "text": "x" * 480, "n": len(s["messages"])}]
                },
            )
            .add_edge(START, "say")
            .add_edge("say", END)
            .compile(checkpointer=checkpointer)
        )
        for _ in range(200):
            graph.invoke({"messages": []}, cfg(thread))
        state = graph.get_state(cfg(thread)).values
        assert [m["n"] for m in state["messages"]] == list(range(200))
        raw = sum(len(str(m)) for m in state["messages"])
        assert checkpointer.stored_bytes(thread) < 3 * raw
        middle = list(graph.get_state_history(cfg(thread)))[200]
        assert len(middle.values["messages"]) == 100

    def test_unchanged_values_are_not_stored_again(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        big = {"doc": "y" * 5000}
        graph = (
            Graph()
            .add_node("tick", lambda s: {"n": s.get("n", 0) + 1})
            .add_edge(START, "tick")
            .add_conditional_edges("tick", lambda s: "tick" if s["n"] < 50 else END)
            .compile(checkpointer=checkpointer)
        )
        graph.invoke({"big": big}, {**cfg(thread), "recursion_limit": 100})
        assert checkpointer.stored_bytes(thread) < 5000 + 50 * 600

    # -- the engine on this checkpointer -----------------------------------------------------

    def test_engine_interrupt_resume_with_parallel_siblings(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        runs: list[str] = []

        def left(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("left")
            return {"answers": [f"a:{interrupt('question_a')}"]}

        def right(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("right")
            return {"answers": [f"b:{interrupt('question_b')}"]}

        def sibling(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("sibling")
            return {"answers": ["sibling"]}

        graph = (
            Graph()
            .add_reducer("answers", operator.add)
            .add_node("left", left)
            .add_node("right", right)
            .add_node("sibling", sibling)
            .add_edge(START, "left")
            .add_edge(START, "right")
            .add_edge(START, "sibling")
            .compile(checkpointer=checkpointer)
        )
        first = graph.invoke({"answers": []}, cfg(thread))
        ids = {i.value: i.id for i in first.interrupts}
        assert runs == ["left", "right", "sibling"] or sorted(runs) == ["left", "right", "sibling"]
        runs.clear()
        partial = graph.resume({ids["question_a"]: "A"}, cfg(thread))
        assert [i.id for i in partial.interrupts] == [ids["question_b"]]
        assert runs == ["left"]
        runs.clear()
        done = graph.resume({ids["question_b"]: "B"}, cfg(thread))
        assert done.state == {"answers": ["a:A", "b:B", "sibling"]}
        assert runs == ["right"]

    def test_engine_subgraph_interrupt_surfaces_and_resumes(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        child = (
            Graph(name="child")
            .add_reducer("items", operator.add)
            .add_node("c1", lambda s: {"items": ["c1"]})
            .add_node("c2", lambda s: {"items": [f"c2:{interrupt({'q': 'ok?'})}"]})
            .add_edge(START, "c1")
            .add_edge("c1", "c2")
            .compile()
        )
        parent = (
            Graph()
            .add_reducer("items", operator.add)
            .add_node("sub", child)
            .add_node("post", lambda s: {"items": ["post"]})
            .add_edge(START, "sub")
            .add_edge("sub", "post")
            .compile(checkpointer=checkpointer)
        )
        paused = parent.invoke({"items": []}, cfg(thread))
        assert paused.interrupt.value == {"q": "ok?"}
        assert parent.get_state(cfg(thread)).interrupts == paused.interrupts
        done = parent.resume("yes", cfg(thread))
        assert done.state == {"items": ["c1", "c2:yes", "post"]}

    def test_engine_fork_from_an_old_checkpoint(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        graph = (
            Graph()
            .add_node("ask", lambda s: {"answer": interrupt("proceed?")})
            .add_node("after", lambda s: {"final": f"got {s['answer']}"})
            .add_edge(START, "ask")
            .add_edge("ask", "after")
            .compile(checkpointer=checkpointer)
        )
        paused = graph.invoke({}, cfg(thread))
        paused_at = graph.get_state(cfg(thread)).config["configurable"]["checkpoint_id"]
        assert graph.resume(True, cfg(thread)).state["final"] == "got True"
        again = graph.invoke(Command(resume=False), cfg(thread, checkpoint_id=paused_at))
        assert again.state["final"] == "got False"
        assert graph.get_state(cfg(thread)).values["final"] == "got False"
        assert (
            paused.interrupt.id
            == graph.get_state(cfg(thread, checkpoint_id=paused_at)).interrupts[0].id
        )

    def test_an_unstorable_appended_item_is_named_by_its_index(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        graph = (
            Graph()
            .add_reducer("messages", operator.add)
            .add_node(
                "say",
                lambda s: {
                    "messages": [{"text": "ok"}]
                    if len(s["messages"]) < 2
                    else [{"text": "bad\x00"}]
                },
            )
            .add_edge(START, "say")
            .compile(checkpointer=checkpointer)
        )
        graph.invoke({"messages": []}, cfg(thread))
        graph.invoke({"messages": []}, cfg(thread))
        with pytest.raises(TypeError, match=r"state path 'messages\[2\]\.text'"):
            graph.invoke({"messages": []}, cfg(thread))

    def test_engine_update_state_keeps_a_pending_interrupt_answerable(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """update_state without as_node on a paused thread changes the values only: the
        interrupt stays pending with its id, a resume answers it (the node runs again on
        the updated state), and a finished sibling is not run again."""
        runs: list[str] = []

        def ask(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("ask")
            return {"answer": interrupt(f"approve {state['amount']}?")}

        def sibling(state: dict[str, Any]) -> dict[str, Any]:
            runs.append("sibling")
            return {"log": ["sibling"]}

        graph = (
            Graph()
            .add_reducer("log", operator.add)
            .add_node("ask", ask)
            .add_node("sibling", sibling)
            .add_node("after", lambda s: {"log": [f"after:{s['answer']}:{s['amount']}"]})
            .add_edge(START, "ask")
            .add_edge(START, "sibling")
            .add_edge("ask", "after")
            .compile(checkpointer=checkpointer)
        )
        paused = graph.invoke({"amount": 100, "log": []}, cfg(thread))
        graph.update_state(cfg(thread), {"amount": 900})
        state = graph.get_state(cfg(thread))
        assert state.interrupts == paused.interrupts and state.next == ("ask",)
        assert state.values == {"amount": 900, "log": ["sibling"]}
        runs.clear()
        done = graph.resume("ok", cfg(thread))
        assert done.state == {"amount": 900, "answer": "ok", "log": ["sibling", "after:ok:900"]}
        assert runs == ["ask"]

    def test_engine_a_failed_task_shows_its_error_and_runs_again(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """A node that raises leaves its error on its task, as LangGraph's ERROR write
        shows in `get_state(...).tasks[].error` (`repr` of the exception); the task is
        still next and runs again when the thread continues; the checkpoint it failed at
        keeps the error in the history."""
        attempts: list[str] = []

        def charge(state: dict[str, Any]) -> dict[str, Any]:
            attempts.append("charge")
            if len(attempts) == 1:
                raise ValueError("card declined")
            return {"charged": state["amount"]}

        graph = (
            Graph()
            .add_node("price", lambda s: {"amount": 100})
            .add_node("charge", charge)
            .add_edge(START, "price")
            .add_edge("price", "charge")
            .compile(checkpointer=checkpointer)
        )
        with pytest.raises(ValueError, match="card declined"):
            graph.invoke({}, cfg(thread))

        failed = graph.get_state(cfg(thread))
        assert failed.next == ("charge",)
        assert [(t.name, t.error, t.result) for t in failed.tasks] == [
            ("charge", "ValueError('card declined')", None)
        ]
        assert graph.invoke(None, cfg(thread)).state == {"amount": 100, "charged": 100}
        assert attempts == ["charge", "charge"]
        at_failure = [s for s in graph.get_state_history(cfg(thread)) if s.next == ("charge",)]
        assert [t.error for s in at_failure for t in s.tasks] == ["ValueError('card declined')"]

    def test_engine_tuples_are_lists_in_the_run_and_when_read_back(
        self, checkpointer: Checkpointer, thread: str
    ) -> None:
        """Payloads are JSON, which has arrays only: a tuple given anywhere (interrupt
        value, answer, input, node write, Send argument) is a list in the run's own results
        and reads back as the same list, on every checkpointer."""
        answers: list[Any] = []
        sent: list[Any] = []

        def ask(state: dict[str, Any]) -> dict[str, Any]:
            answer = interrupt({"pair": (1, 2)})
            answers.append(answer)
            return {"answer": answer, "written": (3, (4, 5))}

        def each(arg: dict[str, Any]) -> dict[str, Any]:
            sent.append(arg["t"])
            return {"sent": arg["t"]}

        graph = (
            Graph()
            .add_node("ask", ask)
            .add_node("each", each)
            .add_edge(START, "ask")
            .add_conditional_edges("ask", lambda s: [Send("each", {"t": (6, 7)})])
            .compile(checkpointer=checkpointer)
        )
        paused = graph.invoke({"given": (0, 1)}, cfg(thread))
        assert paused.interrupt.value == {"pair": [1, 2]}
        assert paused.state == {"given": [0, 1]}
        snapshot = graph.get_state(cfg(thread))
        assert snapshot.interrupts == paused.interrupts and snapshot.values == paused.state

        done = graph.resume((8, 9), cfg(thread))
        expected = {"given": [0, 1], "answer": [8, 9], "written": [3, [4, 5]], "sent": [6, 7]}
        assert done.state == expected
        assert answers == [[8, 9]] and sent == [[6, 7]]
        assert graph.get_state(cfg(thread)).values == expected
        stored = checkpointer.load(thread)
        assert stored is not None and stored.values == expected
