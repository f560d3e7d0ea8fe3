"""Assistants, threads and thread state over `/lg` with the official Python SDK, against a
live server; authentication, visibility, and bad input answered as LangGraph's server
answers it (a clear 4xx, nothing changed)."""

from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import (
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)

from beamweaver_core.models import Checkpoint, Run, Thread
from tests.protocol.conftest import api_user, token_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

SERVER_ENV = {
    # Questions of the "approval" graph are for the finance group only: their threads are
    # hidden from other reviewers.
    # and tool reviews of the "tool_review" graph need two approvals.
    "BEAMWEAVER_REVIEW_POLICIES": json.dumps(
        [
            {"name": "finance-only", "graph": "approval", "groups": ["finance"]},
            {"name": "two-approvals", "graph": "tool_review", "approvals": 2},
        ]
    )
}
ASK_ID = "a457ba2f-c0dc-56e6-817d-ddf904d1e526"  # uuid5 of "ask" in LangGraph's namespace


def client(url: str, token: str) -> Any:
    return get_sync_client(url=url, api_key=token)


def raw(
    url: str,
    path: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """A request without the SDK (for bodies the SDK would never send)."""
    request = urllib.request.Request(f"{url}{path}", data=body, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("x-api-key", token)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_registered_graphs_are_the_assistants_found_by_name_or_id(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    found = lg.assistants.search(graph_id="ask")
    assert [(a["assistant_id"], a["graph_id"], a["name"], a["version"]) for a in found] == [
        (ASK_ID, "ask", "ask", 1)
    ]
    assert lg.assistants.get("ask") == lg.assistants.get(ASK_ID) == found[0]
    everything = lg.assistants.search(limit=100)
    assert {"ask", "linear", "nested", "chat", "mailer"} <= {a["graph_id"] for a in everything}
    page = lg.assistants.search(limit=2, offset=1, sort_by="graph_id", sort_order="asc")
    assert [a["graph_id"] for a in page] == sorted(a["graph_id"] for a in everything)[1:3]
    assert lg.assistants.count(graph_id="linear") == 1
    with pytest.raises(NotFoundError):
        lg.assistants.get("no-such-graph")
    status, body = raw(lg_url, "/assistants", method="POST", body=b"{}", token=alice_token)
    assert status == 405 and "registered" in body["detail"]


def test_an_assistants_graph_is_drawn_with_its_subgraphs_on_xray(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    flat = lg.assistants.get_graph("nested")
    assert [n["id"] for n in flat["nodes"]] == ["__start__", "sub", "after", "__end__"]
    assert flat["edges"] == [
        {"source": "sub", "target": "after"},
        {"source": "__start__", "target": "sub"},
        {"source": "after", "target": "__end__"},
    ]
    deep = lg.assistants.get_graph("nested", xray=True)
    assert [n["id"] for n in deep["nodes"]] == ["__start__", "sub:deep", "after", "__end__"]
    assert {"source": "sub:deep", "target": "after"} in deep["edges"]
    schemas = lg.assistants.get_schemas("linear")
    assert schemas["graph_id"] == "linear" and schemas["state_schema"]["type"] == "object"
    assert list(lg.assistants.get_subgraphs("nested")) == ["sub"]


def test_a_thread_is_created_read_updated_copied_and_deleted(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create(thread_id="lg-thread-1", metadata={"user": "u1"})
    assert (thread["thread_id"], thread["status"], thread["metadata"], thread["values"]) == (
        "lg-thread-1",
        "idle",
        {"user": "u1"},
        None,
    )
    with pytest.raises(ConflictError):
        lg.threads.create(thread_id="lg-thread-1")
    assert lg.threads.create(thread_id="lg-thread-1", if_exists="do_nothing")["metadata"] == {
        "user": "u1"
    }

    done = lg.runs.wait("lg-thread-1", "linear", input={"log": []})
    assert done == {"log": ["one", "two", "three"]}
    updated = lg.threads.update("lg-thread-1", metadata={"topic": "t"})
    assert updated["metadata"] == {
        "user": "u1",
        "topic": "t",
        "graph_id": "linear",
        "assistant_id": updated["metadata"]["assistant_id"],
    }
    assert updated["values"] == {"log": ["one", "two", "three"]}

    copy = lg.threads.copy("lg-thread-1")
    assert copy["thread_id"] != "lg-thread-1" and copy["values"] == done
    assert len(lg.threads.get_history(copy["thread_id"], limit=100)) == len(
        lg.threads.get_history("lg-thread-1", limit=100)
    )
    lg.threads.delete("lg-thread-1")
    with pytest.raises(NotFoundError):
        lg.threads.get("lg-thread-1")
    assert not Checkpoint.objects.filter(thread_id="lg-thread-1").exists()
    assert lg.threads.get(copy["thread_id"])["values"] == done


def test_threads_are_searched_by_status_metadata_and_values_with_paging(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    for index in range(3):
        lg.threads.create(
            thread_id=f"lg-search-{index}", metadata={"team": "a" if index < 2 else "b"}
        )
    lg.runs.wait("lg-search-0", "linear", input={"log": []})
    lg.runs.wait("lg-search-1", "ask", input={"amount": 1})

    team_a = lg.threads.search(metadata={"team": "a"}, sort_by="thread_id", sort_order="asc")
    assert [t["thread_id"] for t in team_a] == ["lg-search-0", "lg-search-1"]
    assert [t["thread_id"] for t in lg.threads.search(status="interrupted")] == ["lg-search-1"]
    assert [t["thread_id"] for t in lg.threads.search(values={"log": ["one", "two", "three"]})] == [
        "lg-search-0"
    ]
    page = lg.threads.search(limit=1, offset=1, sort_by="thread_id", sort_order="desc")
    assert [t["thread_id"] for t in page] == ["lg-search-1"]
    assert lg.threads.count(metadata={"team": "b"}) == 1
    assert lg.threads.count(status="idle") == 2


def test_a_paused_thread_shows_its_status_interrupts_state_and_tasks(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    paused = lg.runs.wait(None, "ask", input={"amount": 7}, on_completion="keep")
    (question,) = paused["__interrupt__"]
    assert question["value"] == {"question": "Approve?", "amount": 7} and len(question["id"]) == 32
    run = Run.objects.get(status="interrupted", graph="ask")
    thread = lg.threads.get(run.thread_id)
    assert thread["status"] == "interrupted"
    ((task_id, interrupts),) = thread["interrupts"].items()
    assert interrupts == [question]
    state = lg.threads.get_state(run.thread_id)
    assert state["next"] == ["ask"] and state["values"] == {"amount": 7}
    assert [(t["id"], t["name"], t["interrupts"]) for t in state["tasks"]] == [
        (task_id, "ask", [question])
    ]
    assert (
        state["checkpoint"]["thread_id"] == run.thread_id
        and state["checkpoint"]["checkpoint_ns"] == ""
    )
    assert state["metadata"]["source"] == "input" and state["created_at"]
    assert state["interrupts"] == [question]
    # Through the official SDK too: writing the state as the node that asked is refused,
    # and the question stays (tests/protocol/test_state_writes.py).
    with pytest.raises(ConflictError):
        lg.threads.update_state(run.thread_id, {"answer": "yes"}, as_node="ask")
    assert lg.threads.get_state(run.thread_id)["interrupts"] == [question]


def test_state_is_updated_as_a_node_and_from_an_older_checkpoint(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    lg.threads.create(thread_id="lg-state-1")
    lg.runs.wait("lg-state-1", "linear", input={"log": []})
    history = lg.threads.get_history("lg-state-1", limit=10)
    assert [h["values"]["log"] for h in history] == [
        ["one", "two", "three"],
        ["one", "two"],
        ["one"],
        [],
    ]
    assert all(h["parent_checkpoint"] == n["checkpoint"] for h, n in itertools.pairwise(history))
    assert [h["values"]["log"] for h in lg.threads.get_history("lg-state-1", limit=2)] == [
        ["one", "two", "three"],
        ["one", "two"],
    ]
    before = lg.threads.get_history("lg-state-1", before=history[1]["checkpoint"], limit=5)
    assert [h["values"]["log"] for h in before] == [["one"], []]
    inputs = lg.threads.get_history("lg-state-1", metadata={"source": "input"})
    assert [h["values"]["log"] for h in inputs] == [[]]

    written = lg.threads.update_state("lg-state-1", {"log": ["x"]}, as_node="one")
    state = lg.threads.get_state("lg-state-1")
    assert state["checkpoint"] == written["checkpoint"]
    assert state["values"]["log"] == ["one", "two", "three", "x"] and state["next"] == ["two"]
    assert state["metadata"]["source"] == "update"

    early = history[2]["checkpoint"]  # after "one"
    lg.threads.update_state("lg-state-1", {"log": ["fork"]}, checkpoint=early)
    assert lg.threads.get_state("lg-state-1")["values"]["log"] == ["one", "fork"]
    at = lg.threads.get_state("lg-state-1", checkpoint=early)
    assert at["values"]["log"] == ["one"] and at["checkpoint"] == early
    with pytest.raises(UnprocessableEntityError):
        lg.threads.update_state("lg-state-1", {"log": ["x"]}, as_node="no-such-node")
    with pytest.raises(NotFoundError):
        lg.threads.get_state("lg-state-1", checkpoint_id="0" * 32)


def test_a_question_asked_inside_a_subgraph_is_read_with_subgraphs_and_answered(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread_id = lg.threads.create()["thread_id"]
    paused = lg.runs.wait(thread_id, "nested_ask", input={"amount": 4})
    (question,) = paused["__interrupt__"]
    assert question["value"] == {"question": "Approve?", "amount": 4}
    flat = lg.threads.get_state(thread_id)
    (task,) = flat["tasks"]
    assert task["name"] == "sub" and task["state"] is None
    assert task["checkpoint"]["checkpoint_ns"].startswith("sub:")
    deep = lg.threads.get_state(thread_id, subgraphs=True)
    (task,) = deep["tasks"]
    assert task["state"]["values"] == {"amount": 4}
    assert task["state"]["interrupts"] == [question] and task["state"]["next"] == ["ask"]
    done = client(lg_url, bob_token).runs.wait(thread_id, "nested_ask", command={"resume": "ok"})
    assert done["log"] == ["after"] and "__interrupt__" not in done


def test_tokens_act_as_their_user_and_hidden_threads_are_not_found(
    lg_url: str, alice_token: str
) -> None:
    finance = Group.objects.create(name="finance")
    carol = api_user("carol")
    dave = api_user("dave")
    dave.groups.add(finance)
    carol_lg, dave_lg = client(lg_url, token_for(carol)), client(lg_url, token_for(dave))
    dave_lg.threads.create(thread_id="lg-secret")
    dave_lg.runs.wait("lg-secret", "approval", input={"amount": 1})
    assert dave_lg.threads.get("lg-secret")["status"] == "interrupted"
    with pytest.raises(NotFoundError):
        carol_lg.threads.get("lg-secret")
    with pytest.raises(httpx.HTTPStatusError) as refused:  # runs.wait raises httpx's error
        carol_lg.runs.wait("lg-secret", "approval", command={"resume": True})
    assert refused.value.response.status_code == 404
    assert "lg-secret" not in [t["thread_id"] for t in carol_lg.threads.search(limit=100)]

    with httpx.Client(base_url=lg_url) as http:
        assert http.get("/assistants/ask").status_code == 401
        assert http.get("/assistants/ask", headers={"x-api-key": "bw_nope_nope"}).status_code == 401
        bearer = http.get("/assistants/ask", headers={"Authorization": f"Bearer {alice_token}"})
        assert bearer.status_code == 200 and bearer.json()["assistant_id"] == ASK_ID
        assert http.get("/ok").json() == {"ok": True}


def test_a_reviewer_who_sees_a_thread_may_not_change_someone_elses(lg_url: str) -> None:
    # Through the official SDK: the rule of who may cancel a thread's run is the rule of
    # who may change the thread (tests/protocol/test_thread_rights.py has the details).
    owner_lg = client(lg_url, token_for(api_user("olga")))
    other_lg = client(lg_url, token_for(api_user("oscar")))
    owner_lg.threads.create(thread_id="lg-owned")
    owner_lg.runs.wait("lg-owned", "linear", input={"log": []})
    before = owner_lg.threads.get_state("lg-owned")
    assert other_lg.threads.get("lg-owned")["status"] == "idle"  # he sees it
    with pytest.raises(PermissionDeniedError):
        other_lg.threads.update("lg-owned", metadata={"owner": "oscar"})
    with pytest.raises(PermissionDeniedError):
        other_lg.threads.update_state("lg-owned", {"log": ["oscar"]})
    with pytest.raises(PermissionDeniedError):
        other_lg.threads.delete("lg-owned")
    assert owner_lg.threads.get_state("lg-owned")["values"] == before["values"]
    assert "owner" not in owner_lg.threads.get("lg-owned")["metadata"]
    owner_lg.threads.delete("lg-owned")  # its owner may
    with pytest.raises(NotFoundError):
        owner_lg.threads.get("lg-owned")


def test_bad_input_gets_a_clear_4xx_and_changes_nothing(lg_url: str, alice_token: str) -> None:
    threads, runs = Thread.objects.count(), Run.objects.count()
    cases = [
        ("/threads", b"{bad", 422, "Invalid JSON"),
        ("/threads", b'{"thread_id": "has space"}', 422, "not valid"),
        ("/threads", b'{"metadata": []}', 422, "metadata"),
        ("/threads", b"[" * 100 + b"]" * 100, 422, "nested"),
        ("/threads", b'{"metadata": {"k": "' + b"x" * 600_000 + b'"}}', 413, "larger"),
        ("/threads/nope/runs", b'{"assistant_id": "ask"}', 404, "not found"),
        ("/threads/search", b'{"limit": 0}', 422, "limit"),
        ("/runs/wait", b'{"assistant_id": "no-such-graph", "input": {}}', 422, "Invalid assistant"),
        ("/runs/wait", b'{"assistant_id": "ask", "input": 5}', 422, "input"),
        (
            "/runs",
            b'{"assistant_id": "ask", "input": {}, "interrupt_before": ["nope"]}',
            422,
            "nope",
        ),
        (
            "/runs",
            b'{"assistant_id": "ask", "input": {}, "context": {"__bw__": 1}}',
            422,
            "reserved",
        ),
        (
            "/runs",
            b'{"assistant_id": "chat", "input": {"messages": [{"type": "robot"}]}}',
            422,
            "type",
        ),
        (
            "/runs",
            b'{"assistant_id": "ask", "input": {}, "webhook": "http://example.com/h"}',
            422,
            "webhooks are off",
        ),
    ]
    for path, body, status, words in cases:
        got, answer = raw(lg_url, path, method="POST", body=body, token=alice_token)
        assert (got, path) == (status, path), answer
        assert words.lower() in answer["detail"].lower(), (path, answer)
    assert (Thread.objects.count(), Run.objects.count()) == (threads, runs)


def test_an_approval_short_of_the_quorum_is_recorded_and_the_last_one_resumes(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    carol = client(lg_url, token_for(api_user("carol")))
    thread_id = client(lg_url, alice_token).threads.create()["thread_id"]
    client(lg_url, alice_token).runs.wait(thread_id, "tool_review", input={})
    approve = {"resume": {"decisions": [{"type": "approve"}]}}
    first = client(lg_url, bob_token).runs.wait(thread_id, "tool_review", command=approve)
    assert "approval was recorded" in first["detail"]  # answered 202: the run waits
    assert client(lg_url, alice_token).threads.get(thread_id)["status"] == "interrupted"
    done = carol.runs.wait(thread_id, "tool_review", command=approve)
    assert [c["name"] for c in done["executed"]] == ["send_email"]


def test_a_thread_or_run_the_inbox_keeps_records_of_is_not_deleted(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread_id = lg.threads.create()["thread_id"]
    lg.runs.wait(thread_id, "ask", input={"amount": 1})
    with pytest.raises(ConflictError, match="review items"):
        lg.threads.delete(thread_id)
    (run,) = lg.runs.list(thread_id)
    with pytest.raises(ConflictError, match="review items"):
        lg.runs.delete(thread_id, run["run_id"])
    assert lg.threads.get(thread_id)["status"] == "interrupted"
