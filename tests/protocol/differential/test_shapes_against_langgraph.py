"""The differential suite's shapes: every stream mode of the same runs, and what the read
endpoints answer about them, on BeamWeaver's `/lg` and on LangGraph's own server (the
suite: test_against_langgraph.py). Each mode's events are compared on their own, after
normalising ids and timestamps, and wherever the two differ the test says which is right
and why (docs/protocol.md, "Where BeamWeaver deliberately differs").

Two differences run through the checkpoints: LangGraph's server saves the input before the
first step as a checkpoint of its own (`next: ["__start__"]`, `step: -1`), where
BeamWeaver's first checkpoint is the input applied (`source: "input"`, `step: -1`), so
BeamWeaver's step numbers are one less; and a resume on LangGraph's server saves the
paused checkpoint again before it goes on, where BeamWeaver's answer is a write on the
paused checkpoint itself.

A BeamWeaver bug these tests found (fixed in the engine, tests/graph/test_subgraph_commit_order.py):
a run's input checkpoint was saved only with its first step's results, so a subgraph in
that step committed its own checkpoints, and with them the run's stored events, first;
a live stream then read the run's start with no checkpoint of the run to show, and its
first `values`, its first task's `input` and its `checkpoints` missed the input. The
"nested" run, whose first step is a subgraph, is compared whole for that reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.protocol.differential.comparison import Normaliser, events, on_both, without_end

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

MODES = ["values", "updates", "custom", "tasks", "checkpoints", "debug"]
HELLO = {"type": "human", "content": "hello", "id": "hello-1"}


def by_mode(seen: list[list[Any]]) -> dict[str, list[list[Any]]]:
    """A stream's events by mode (`updates|sub:<task>` is `updates`), each mode's in order,
    without `metadata` and `end`. Each test normalises what it compares (`Normaliser`)."""
    found: dict[str, list[list[Any]]] = {mode: [] for mode in MODES}
    for name, data in without_end(seen)[1:]:
        found[name.split("|")[0]].append([name, data])
    return found


def normalised(
    streams: tuple[dict[str, Any], dict[str, Any]], mode: str, shown: Callable[[Any], Any]
) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Each run's events of `mode` on each server as `shown(event)` says them, normalised
    run by run."""
    ours, theirs = (
        {run: Normaliser()([shown(e) for e in side[run][mode]]) for run in side} for side in streams
    )
    return ours, theirs


def streamed(lg: Any) -> dict[str, dict[str, list[list[Any]]]]:
    """Each mode of a three-node run, a pause, its resume and a run with a subgraph."""

    def stream(graph: str, thread_id: str, **kwargs: Any) -> dict[str, list[list[Any]]]:
        return by_mode(events(lg.runs.stream(thread_id, graph, stream_mode=MODES, **kwargs)))

    asked = lg.threads.create()["thread_id"]
    return {
        "linear": stream("linear", lg.threads.create()["thread_id"], input={"log": []}),
        "paused": stream("ask", asked, input={"amount": 2}),
        "resumed": stream("ask", asked, command={"resume": "yes"}),
        "nested": stream(
            "nested", lg.threads.create()["thread_id"], input={"log": []}, stream_subgraphs=True
        ),
    }


@pytest.fixture
def streams(both: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return streamed(both["ours"]), streamed(both["theirs"])


def test_values_updates_and_custom_events_are_langgraphs(
    streams: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """The same events, in the same order, for a run, a pause and a resume; a subgraph's
    updates and custom events under the same `mode|node:<task id>` namespace.

    A subgraph's `values` are not streamed by BeamWeaver (docs/protocol.md), LangGraph's
    server sends them as `values|sub:<task id>`. The "nested" run's first `values`, the
    input, is the bug the module's docstring describes: it was `{}`."""
    for mode in ("values", "updates", "custom"):
        mine, yours = normalised(streams, mode, lambda event: event)
        for run in ("linear", "paused", "resumed"):
            assert mine[run] == yours[run], (run, mode)
    ours, theirs = (
        {run: {mode: Normaliser()(side[run][mode]) for mode in MODES} for run in side}
        for side in streams
    )
    assert ours["paused"]["values"][-1] == [
        "values",
        {
            "amount": 2,
            "__interrupt__": [{"id": "<id:1>", "value": {"question": "Approve?", "amount": 2}}],
        },
    ]
    assert ours["resumed"]["custom"] == [["custom", {"step": "finishing"}]]
    assert (
        ours["nested"]["updates"]
        == theirs["nested"]["updates"]
        == [
            ["updates|sub:<id:1>", {"deep": {"log": ["deep"]}}],
            ["updates", {"sub": {"log": ["deep"]}}],
            ["updates", {"after": {"log": ["after"]}}],
        ]
    )
    root = [event for event in theirs["nested"]["values"] if event[0] == "values"]
    assert len(root) < len(theirs["nested"]["values"])
    assert (
        ours["nested"]["values"]
        == root
        == [
            ["values", {"log": []}],
            ["values", {"log": ["deep"]}],
            ["values", {"log": ["deep", "after"]}],
        ]
    )


def task_event(data: dict[str, Any]) -> dict[str, Any]:
    """A `tasks` event without what only LangGraph's server fills in for a starting task:
    the channels that triggered it (`branch:to:<node>`) and the run's metadata (ids and
    the server's name and version); BeamWeaver sends both empty (docs/protocol.md)."""
    return {k: v for k, v in data.items() if k not in ("triggers", "metadata")}


def test_tasks_events_are_langgraphs_but_triggers_and_metadata(
    streams: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Each task's start (its input) and result (its writes, its questions), in order.
    A subgraph's starting task carries no input on BeamWeaver (its input is the subgraph's
    state, which its stored events do not hold), LangGraph's server sends it. The input
    of the "nested" run's first task, `sub`, is compared: it is the bug the module's
    docstring describes (it was missing)."""
    for (name, data), (_, their) in zip(
        *(side["nested"]["tasks"] for side in streams), strict=True
    ):
        if "|" in name and "input" in data:
            assert data["input"] is None and their["input"] == {"log": []}
    for side, prefix in zip(streams, (None, "branch:to:"), strict=True):
        for run in side.values():
            starts = [data for _, data in run["tasks"] if "input" in data]
            assert [d["triggers"] for d in starts] == [
                [f"{prefix}{d['name']}"] if prefix else [] for d in starts
            ]
    assert {k for _, d in streams[0]["linear"]["tasks"] for k in d.get("metadata", {})} == set()
    assert {"assistant_id", "graph_id", "run_id"} <= set(
        streams[1]["linear"]["tasks"][0][1]["metadata"]
    )

    def shown(event: list[Any]) -> list[Any]:
        name, data = event
        if "input" in data and "|" in name:
            data = {**data, "input": None}
        return [name, task_event(data)]

    ours, theirs = normalised(streams, "tasks", shown)
    assert ours == theirs
    assert [d for _, d in ours["paused"]][-1] == {
        "id": "<id:1>",
        "name": "ask",
        "error": None,
        "result": {},
        "interrupts": [{"id": "<id:2>", "value": {"question": "Approve?", "amount": 2}}],
    }


def checkpoint_event(data: dict[str, Any]) -> Any:
    """What a checkpoint says of the run: its values, what runs next, and its tasks."""
    return [data["values"], data["next"], [t["name"] for t in data["tasks"]]]


def saved_only_by_langgraph(run: str, checkpoints: list[Any]) -> list[Any]:
    """LangGraph's checkpoints less the one BeamWeaver does not save: the input before the
    first step (a fresh run), the paused checkpoint saved again (a resume)."""
    if run == "resumed":
        return checkpoints[1:]
    assert checkpoints[0][1]["next"] == ["__start__"], checkpoints[0]
    return checkpoints[1:]


def test_checkpoints_and_debug_events_follow_the_same_steps(
    streams: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """The same checkpoints with the same values, next nodes and tasks, less the ones only
    LangGraph's server saves (the module's docstring), each checkpoint with the same keys;
    `debug` wraps the same checkpoints, task starts and task results, with BeamWeaver's
    step numbers one less. A checkpoint's `config` holds its thread, namespace and id
    (LangGraph's server adds the run's configurable: request ids, auth, assistant)."""
    ours, theirs = streams
    for run in ("linear", "paused", "resumed"):
        mine = ours[run]["checkpoints"]
        yours = saved_only_by_langgraph(run, theirs[run]["checkpoints"])
        assert [checkpoint_event(d) for _, d in mine] == [checkpoint_event(d) for _, d in yours], (
            run
        )
        for (_, data), (_, their) in zip(mine, yours, strict=True):
            assert set(data) == set(their)
            assert set(data["config"]["configurable"]) <= set(their["config"]["configurable"])

        debug = [d for _, d in ours[run]["debug"]]
        their_debug = [d for _, d in theirs[run]["debug"]]
        if run == "resumed" or their_debug[0]["payload"]["next"] == ["__start__"]:
            their_debug = their_debug[1:]
        for one in (*debug, *their_debug):
            assert set(one) == {"type", "step", "timestamp", "payload"}
        assert [set(d["payload"]) for d in debug] == [set(d["payload"]) for d in their_debug]

        def shown(debug: dict[str, Any]) -> list[Any]:
            payload = debug["payload"]
            said = checkpoint_event if debug["type"] == "checkpoint" else task_event
            return [debug["type"], said(payload)]

        assert [d["step"] + 1 for d in debug] == [d["step"] for d in their_debug], run
        assert Normaliser()([shown(d) for d in debug]) == Normaliser()(
            [shown(d) for d in their_debug]
        ), run
    # The "nested" run's own checkpoints (its subgraph's are not streamed: docs/protocol.md),
    # its input first: the bug the module's docstring describes left it out.
    nested = [e for e in theirs["nested"]["checkpoints"] if e[0] == "checkpoints"]
    assert [checkpoint_event(d) for _, d in ours["nested"]["checkpoints"]] == [
        checkpoint_event(d) for _, d in saved_only_by_langgraph("nested", nested)
    ]
    assert checkpoint_event(ours["nested"]["checkpoints"][0][1])[0] == {"log": []}
    assert [checkpoint_event(d) for _, d in ours["linear"]["checkpoints"]] == [
        [{"log": []}, ["one"], ["one"]],
        [{"log": ["one"]}, ["two"], ["two"]],
        [{"log": ["one", "two"]}, ["three"], ["three"]],
        [{"log": ["one", "two", "three"]}, [], []],
    ]


def test_a_nodes_message_streams_as_langgraphs_with_the_node_that_wrote_it(
    both: dict[str, Any],
) -> None:
    """A node that returns a message (no model): `messages-tuple` sends it whole with its
    metadata, `messages` as `messages/metadata` then `messages/complete`; the input's
    message is not sent. The metadata names the node that wrote it (`langgraph_node`,
    what chat UIs choose the messages to show by), its step and the run.

    Its `langgraph_checkpoint_ns` is where the node ran: `""` at the root, as for a
    model's tokens; LangGraph's server names the node's task (`reply:<task id>`).
    LangGraph's server adds what BeamWeaver does not know (the triggering channels, the
    task's path) or keeps to itself (its own name and version)."""

    def stream(lg: Any, mode: str) -> tuple[list[list[Any]], dict[str, str]]:
        thread_id = lg.threads.create()["thread_id"]
        seen = events(
            lg.runs.stream(thread_id, "reply", input={"messages": [HELLO]}, stream_mode=mode)
        )
        return without_end(seen)[1:], {"run_id": seen[0][1]["run_id"], "thread_id": thread_id}

    reply: dict[str, Any] = {
        "type": "ai",
        "id": "reply-1",
        "content": "hi",
        "name": None,
        "additional_kwargs": {},
        "response_metadata": {},
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": None,
    }
    said = {}
    for side in ("ours", "theirs"):
        [[event, (message, meta)]], ids = stream(both[side], "messages-tuple")
        assert event == "messages" and message == reply
        assert meta.items() >= ids.items()
        said[side] = {k: v for k, v in meta.items() if k not in ids}
        streamed, ids = stream(both[side], "messages")
        [[first, by_id], complete] = streamed
        assert first == "messages/metadata" and complete == ["messages/complete", [reply]]
        assert list(by_id) == ["reply-1"] and set(by_id["reply-1"]) == {"metadata"}
        assert set(by_id["reply-1"]["metadata"]) == set(meta)
        if side == "ours":  # LangGraph's `langgraph_checkpoint_ns` names each run's task
            assert by_id["reply-1"]["metadata"] == {**meta, **ids}
    ours, theirs = said["ours"], said["theirs"]
    assert ours.pop("langgraph_checkpoint_ns") == ""
    assert theirs.pop("langgraph_checkpoint_ns").startswith("reply:")
    assert ours == {k: v for k, v in theirs.items() if k in ours}
    assert ours == {
        "graph_id": "reply",
        "assistant_id": theirs["assistant_id"],
        "langgraph_node": "reply",
        "langgraph_step": 1,
    }


def sorted_keys(value: Any) -> Any:
    """`value` with its dicts' keys in order, so that `Normaliser` numbers the ids of two
    answers that differ only in their keys' order alike."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def alike(ours: Any, theirs: Any) -> bool:
    """Whether two answers are the same once each is normalised on its own."""
    return bool(Normaliser()(sorted_keys(ours)) == Normaliser()(sorted_keys(theirs)))


def keys_and_types(value: Any) -> Any:
    """A value's shape: a dict's keys with their values' shapes, a list's items' shapes,
    else the type's name."""
    if isinstance(value, dict):
        return {k: keys_and_types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys_and_types(v) for v in value]
    return type(value).__name__


def without(value: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in keys}


def test_a_paused_threads_thread_state_history_and_runs_are_langgraphs(
    both: dict[str, Any],
) -> None:
    """`threads.get`, `get_state`, `get_history`, `runs.get` and `runs.list` of a thread
    paused on a question: the same values, the same question with the same id on the
    thread, its state and its task, the same task (`path` as LangGraph's
    `["__pregel_pull", node]`), the same keys and value types.

    Where they differ: the state's checkpoint is the input applied (`source: "input"`,
    `step: -1`, no parent; LangGraph's server has a `__start__` checkpoint before it, so
    its is `loop`, step 0), and its `metadata` is the run's id where LangGraph's server
    copies the run's metadata and its own (name, version, request id). A run's `kwargs`
    are the options the request gave (LangGraph's server lists its whole run
    configuration) and its `metadata` is the request's, and a thread's `config` is empty."""

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        lg.runs.wait(thread_id, "ask", input={"amount": 2})
        runs = lg.runs.list(thread_id)
        return {
            "thread": lg.threads.get(thread_id),
            "state": lg.threads.get_state(thread_id),
            "history": lg.threads.get_history(thread_id),
            "run": lg.runs.get(thread_id, runs[0]["run_id"]),
            "runs": runs,
        }

    ours, theirs = scenario(both["ours"]), scenario(both["theirs"])
    # A thread's `config`: LangGraph's server keeps the last run's `configurable` there;
    # BeamWeaver keeps no configuration per thread (each run carries its own).
    assert ours["thread"].pop("config") == {}
    assert theirs["thread"].pop("config") == {"configurable": {}}
    assert alike(ours["thread"], theirs["thread"])
    assert ours["thread"]["status"] == "interrupted"

    state, their_state = ours["state"], theirs["state"]
    assert state["metadata"] == {
        "source": "input",
        "step": -1,
        "parents": {},
        "run_id": ours["run"]["run_id"],
    }
    assert {"source": "loop", "step": 0}.items() <= their_state["metadata"].items()
    assert state["parent_checkpoint"] is None and their_state["parent_checkpoint"] is not None
    differ = ("metadata", "parent_checkpoint", "parent_checkpoint_id")
    assert alike(without(state, *differ), without(their_state, *differ))
    [task] = state["tasks"]
    assert task["path"] == ["__pregel_pull", "ask"]
    assert ours["thread"]["interrupts"] == {task["id"]: state["interrupts"]}
    assert task["interrupts"] == state["interrupts"]
    assert ours["history"] == [state]
    assert alike(without(theirs["history"][0], *differ), without(their_state, *differ))

    run, their_run = ours["run"], theirs["run"]
    assert ours["runs"] == [run] and theirs["runs"] == [their_run]
    # `langsmith_session_name` (null here) names a LangSmith tracing project, which
    # BeamWeaver has none of; the SDK's `Run` type has no such key.
    assert keys_and_types(without(run, "kwargs", "metadata")) == keys_and_types(
        without(their_run, "kwargs", "metadata", "langsmith_session_name")
    )
    same = ("run_id", "thread_id", "assistant_id", "status", "multitask_strategy")
    assert alike({k: run[k] for k in same}, {k: their_run[k] for k in same})
    assert run["status"] == "success" and run["thread_id"] == ours["thread"]["thread_id"]
    assert run["kwargs"]["input"] == their_run["kwargs"]["input"] == {"amount": 2}


def test_a_subgraphs_paused_state_is_langgraphs(both: dict[str, Any]) -> None:
    """`get_state(subgraphs=True)` of a thread paused inside a subgraph: the subgraph's
    task holds its state, with the question, and names where it is kept by LangGraph's
    namespace, `sub:<task id>` (BeamWeaver's own, `sub:<task id>|inner_ask`, is not
    shown); without `subgraphs`, the task names that namespace only.

    LangGraph's server adds each level's checkpoint ids (`checkpoint_map`) to the
    subgraph's checkpoint, which BeamWeaver does not send."""

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        lg.runs.wait(thread_id, "nested_ask", input={"amount": 1})
        return {
            "deep": lg.threads.get_state(thread_id, subgraphs=True),
            "flat": lg.threads.get_state(thread_id),
        }

    ours, theirs = scenario(both["ours"]), scenario(both["theirs"])
    differ = ("metadata", "parent_checkpoint", "parent_checkpoint_id", "tasks")
    for side in ("deep", "flat"):
        assert alike(without(ours[side], *differ), without(theirs[side], *differ))
    [task], [their_task] = ours["deep"]["tasks"], theirs["deep"]["tasks"]
    assert alike(without(task, "state"), without(their_task, "state"))
    assert task["path"] == ["__pregel_pull", "sub"]
    inner, their_inner = task["state"], their_task["state"]
    assert inner["checkpoint"] == {
        "thread_id": ours["deep"]["checkpoint"]["thread_id"],
        "checkpoint_ns": f"sub:{task['id']}",
        "checkpoint_id": inner["checkpoint_id"],
    }
    their_checkpoint = without(their_inner["checkpoint"], "checkpoint_map")
    assert alike(inner["checkpoint"], their_checkpoint)
    assert alike(without(inner, *differ, "checkpoint"), without(their_inner, *differ, "checkpoint"))
    assert alike(inner["tasks"], their_inner["tasks"])
    [flat_task], [their_flat_task] = ours["flat"]["tasks"], theirs["flat"]["tasks"]
    assert alike(flat_task, their_flat_task)
    assert task["checkpoint"] is None  # its state says it
    assert flat_task["checkpoint"] == {
        "thread_id": inner["checkpoint"]["thread_id"],
        "checkpoint_ns": f"sub:{task['id']}",
    }


def test_assistants_their_graphs_and_schemas_are_langgraphs(both: dict[str, Any]) -> None:
    """The graphs' default assistants (`get`, `search`) are the same; the drawn graph has
    the same nodes and edges; the schemas have the same keys, each a JSON schema or null
    (BeamWeaver's graphs declare no state types, so theirs say less)."""

    def scenario(lg: Any) -> dict[str, Any]:
        found = {}
        for graph in ("ask", "nested", "reply"):
            [assistant] = lg.assistants.search(graph_id=graph)
            drawn = lg.assistants.get_graph(assistant["assistant_id"])
            found[graph] = {
                "assistant": assistant,
                "got": lg.assistants.get(assistant["assistant_id"]),
                "nodes": drawn["nodes"],
                "edges": sorted((e["source"], e["target"]) for e in drawn["edges"]),
                "schemas": lg.assistants.get_schemas(assistant["assistant_id"]),
            }
        return found

    ours, theirs = on_both(both, scenario)
    for graph in ("ask", "nested", "reply"):
        mine, yours = ours[graph], theirs[graph]
        assert mine["assistant"] == mine["got"]
        assert without(mine, "schemas") == without(yours, "schemas"), graph
        assert set(mine["schemas"]) == set(yours["schemas"])
        assert mine["schemas"]["graph_id"] == yours["schemas"]["graph_id"] == graph
        for key, schema in mine["schemas"].items():
            assert key == "graph_id" or schema is None or isinstance(schema, dict)
    assert ours["ask"]["edges"] == [["__start__", "ask"], ["ask", "finish"], ["finish", "__end__"]]
