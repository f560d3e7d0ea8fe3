"""Streaming over `/lg` with the official Python SDK against a live server: every stream
mode in the protocol's event names and shapes, subgraphs, errors, and streams joined
and resumed with `Last-Event-ID` from the stored run events."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from beamweaver_core.models import Run

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def client(url: str, token: str) -> Any:
    return get_sync_client(url=url, api_key=token)


def events(parts: Any) -> list[tuple[str, Any]]:
    return [(p.event, p.data) for p in parts]


def test_values_updates_and_custom_stream_as_the_run_goes_metadata_first_end_last(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    alice, bob = client(lg_url, alice_token), client(lg_url, bob_token)
    thread_id = alice.threads.create()["thread_id"]
    modes = ["values", "updates", "custom"]
    paused = events(alice.runs.stream(thread_id, "ask", input={"amount": 2}, stream_mode=modes))
    (question,) = paused[-2][1]["__interrupt__"]
    run = Run.objects.get(thread_id=thread_id)
    assert paused == [
        ("metadata", {"run_id": str(run.id), "attempt": 1}),
        ("values", {"amount": 2}),
        ("updates", {"__interrupt__": [question]}),
        ("values", {"amount": 2, "__interrupt__": [question]}),
        ("end", None),
    ]
    resumed = events(
        bob.runs.stream(thread_id, "ask", command={"resume": "yes"}, stream_mode=modes)
    )
    assert resumed[1:] == [
        ("values", {"amount": 2}),
        ("updates", {"ask": {"answer": "yes"}}),
        ("values", {"amount": 2, "answer": "yes"}),
        ("custom", {"step": "finishing"}),
        ("updates", {"finish": {"log": ["finish"]}}),
        ("values", {"amount": 2, "answer": "yes", "log": ["finish"]}),
        ("end", None),
    ]
    assert resumed[0][0] == "metadata"


def test_messages_tuple_streams_the_model_reply_token_by_token(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    parts = events(
        lg.runs.stream(
            None,
            "chat",
            input={"messages": [{"type": "human", "content": "hi", "id": "h1"}]},
            stream_mode=["messages-tuple", "values"],
        )
    )
    chunks = [data for event, data in parts if event == "messages"]
    assert len(chunks) > 1
    assert {(c[0]["type"], c[1]["langgraph_node"]) for c in chunks} == {("AIMessageChunk", "model")}
    assert len({c[0]["id"] for c in chunks}) == 1
    assert "".join(c[0]["content"] for c in chunks) == "Hello there friend"
    final = [data for event, data in parts if event == "values"][-1]
    assert [(m["type"], m["content"]) for m in final["messages"]] == [
        ("human", "hi"),
        ("ai", "Hello there friend"),
    ]
    assert final["messages"][0]["id"] == "h1"


def test_messages_stream_partial_messages_with_their_metadata(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    parts = events(
        lg.runs.stream(
            None,
            "chat",
            input={"messages": [{"role": "user", "content": "hi"}]},
            stream_mode="messages",
        )
    )
    names = [event for event, _ in parts]
    assert names[0] == "metadata" and names[1] == "messages/metadata" and names[-1] == "end"
    partials = [data[0] for event, data in parts if event == "messages/partial"]
    assert [p["content"] for p in partials][-1] == "Hello there friend"
    assert all(p["type"] == "ai" for p in partials)
    assert [len(p["content"]) for p in partials] == sorted(len(p["content"]) for p in partials)


def test_events_tasks_checkpoints_and_debug_describe_each_step(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    parts = events(
        lg.runs.stream(
            None,
            "linear",
            input={"log": []},
            stream_mode=["events", "tasks", "checkpoints", "debug"],
        )
    )
    checkpoints = [data for event, data in parts if event == "checkpoints"]
    assert [(c["metadata"]["source"], c["metadata"]["step"], c["next"]) for c in checkpoints] == [
        ("input", -1, ["one"]),
        ("loop", 0, ["two"]),
        ("loop", 1, ["three"]),
        ("loop", 2, []),
    ]
    assert checkpoints[1]["parent_config"] == checkpoints[0]["config"]
    tasks = [data for event, data in parts if event == "tasks"]
    assert [(t["name"], "result" in t) for t in tasks] == [
        ("one", False),
        ("one", True),
        ("two", False),
        ("two", True),
        ("three", False),
        ("three", True),
    ]
    assert tasks[1]["result"] == {"log": ["one"]} and tasks[1]["error"] is None
    assert [d["type"] for event, d in parts if event == "debug"] == [
        "checkpoint",
        *["task", "task_result", "checkpoint"] * 3,
    ]
    recorded = [(d["event"], d["name"]) for event, d in parts if event == "events"]
    assert recorded[0] == ("on_chain_start", "linear") and recorded[-1] == (
        "on_chain_end",
        "linear",
    )
    assert ("on_chain_end", "two") in recorded


def test_subgraphs_stream_under_their_namespace(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    parts = events(
        lg.runs.stream(
            None, "nested", input={"log": []}, stream_mode="updates", stream_subgraphs=True
        )
    )
    updates = [(event.split(":")[0], data) for event, data in parts if event.startswith("updates")]
    assert updates == [
        ("updates|sub", {"deep": {"log": ["deep"]}}),
        ("updates", {"sub": {"log": ["deep"]}}),
        ("updates", {"after": {"log": ["after"]}}),
    ]
    flat = events(lg.runs.stream(None, "nested", input={"log": []}, stream_mode="updates"))
    assert [e for e, _ in flat if e.startswith("updates")] == ["updates", "updates"]


def test_a_failing_run_streams_an_error_event_then_ends(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    parts = events(lg.runs.stream(None, "explode", input={}, stream_mode="values"))
    assert [event for event, _ in parts] == ["metadata", "values", "error", "end"]
    assert (
        parts[2][1]["error"] == "RuntimeError" and "tool backend is down" in parts[2][1]["message"]
    )


def test_a_runs_stream_is_joined_later_and_resumed_after_the_last_event_seen(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread_id = lg.threads.create()["thread_id"]
    run = lg.runs.create(thread_id, "linear", input={"log": []}, stream_mode=["values", "updates"])
    lg.runs.join(thread_id, run["run_id"])
    whole = list(lg.runs.join_stream(thread_id, run["run_id"]))
    assert [p.event for p in whole] == ["metadata", "values", *["updates", "values"] * 3, "end"]
    ids = [tuple(int(n) for n in p.id.split("-")) for p in whole[1:-1]]
    assert ids == sorted(set(ids))  # ids only grow
    rest = list(lg.runs.join_stream(thread_id, run["run_id"], last_event_id=whole[3].id))
    assert events(rest) == events(whole[4:])
    only = events(lg.runs.join_stream(thread_id, run["run_id"], stream_mode="updates"))
    assert [e for e, _ in only] == ["metadata", "updates", "updates", "updates", "end"]
