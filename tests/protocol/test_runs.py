"""Runs over `/lg` with the official Python SDK against a live server: background runs,
waits, joins, cancels and deletes; stateless runs; resumes through the decision service;
commands, config, context, forks and breakpoints; busy-thread strategies; webhooks; and a
run started over `/lg` decided in the inbox, its continuation seen by a joined stream."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from django.utils import timezone
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError
from langgraph_sdk.schema import Send

from beamweaver_core.models import Run, RunEvent, Thread
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.protocol.receivers import STATELESS_GRACE, delete_stateless_threads
from beamweaver_core.signatures import verify_signature
from reviews.models import AuditEvent, Decision, ReviewItem
from tests.browser.conftest import _free_port
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

WEBHOOK_SECRET = "whsec-protocol-tests"
HOOK_PORT = _free_port()
SERVER_ENV = {
    "BEAMWEAVER_TEST_STEP_SECONDS": "0.15",  # the "steps" graph runs ~1 s: a busy thread
    "BEAMWEAVER_LG_WEBHOOK_SECRET": WEBHOOK_SECRET,
    "BEAMWEAVER_LG_WEBHOOK_HOSTS": "127.0.0.1",
    # The receiver of `hooks` listens on this machine, on a port of its own.
    "BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES": "1",
    "BEAMWEAVER_WEBHOOK_PORTS": str(HOOK_PORT),
}


def client(url: str, token: str) -> Any:
    return get_sync_client(url=url, api_key=token)


def status_of(error: pytest.ExceptionInfo[Any]) -> int:
    return int(error.value.response.status_code)


def test_a_background_run_is_created_joined_listed_and_deleted(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create()
    run = lg.runs.create(
        thread["thread_id"], "linear", input={"log": []}, metadata={"origin": "test"}
    )
    assert run["status"] == "pending" and run["metadata"] == {"origin": "test"}
    assert run["assistant_id"] == lg.assistants.get("linear")["assistant_id"]
    assert lg.runs.join(thread["thread_id"], run["run_id"]) == {"log": ["one", "two", "three"]}
    assert lg.runs.get(thread["thread_id"], run["run_id"])["status"] == "success"
    second = lg.runs.create(thread["thread_id"], "linear", input={"log": []})
    lg.runs.join(thread["thread_id"], second["run_id"])
    listed = lg.runs.list(thread["thread_id"])
    assert [r["run_id"] for r in listed] == [second["run_id"], run["run_id"]]
    assert [r["run_id"] for r in lg.runs.list(thread["thread_id"], limit=1, offset=1)] == [
        run["run_id"]
    ]
    assert lg.runs.list(thread["thread_id"], status="error") == []
    lg.runs.delete(thread["thread_id"], run["run_id"])
    with pytest.raises(NotFoundError):
        lg.runs.get(thread["thread_id"], run["run_id"])
    with pytest.raises(NotFoundError):
        lg.runs.get(thread["thread_id"], "00000000-0000-0000-0000-000000000000")


def test_a_failed_run_answers_its_error_and_the_thread_shows_it(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create()
    failed = lg.runs.wait(thread["thread_id"], "explode", input={}, raise_error=False)
    assert failed["__error__"]["error"] == "RuntimeError"
    assert "tool backend is down" in failed["__error__"]["message"]
    assert "sk-test" not in json.dumps(failed)  # the runtime redacted the secret
    with pytest.raises(Exception, match="RuntimeError"):
        lg.runs.wait(thread["thread_id"], "explode", input={})
    assert lg.threads.get(thread["thread_id"])["status"] == "error"
    assert lg.runs.list(thread["thread_id"])[0]["status"] == "error"
    # The task that raised is still next, with its error (redacted, as the run's).
    state = lg.threads.get_state(thread["thread_id"])
    assert state["next"] == ["explode"]
    assert [(t["name"], t["error"]) for t in state["tasks"]] == [
        ("explode", "RuntimeError('the tool backend is down (api_key=[redacted])')")
    ]


def test_stateless_runs_have_threads_of_their_own(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    assert lg.runs.wait(None, "linear", input={"log": []}) == {"log": ["one", "two", "three"]}
    kept = lg.runs.create(None, "linear", input={"log": ["k"]}, on_completion="keep")
    assert lg.runs.join(kept["thread_id"], kept["run_id"])["log"][0] == "k"
    (record,) = ProtocolRun.objects.filter(run_id=kept["run_id"])
    assert (record.stateless, record.on_completion) == (True, "keep")
    assert [
        r["run_id"]
        for r in lg.runs.create_batch([{"assistant_id": "linear", "input": {"log": []}}] * 2)
    ]
    # A finished stateless run's thread goes once the grace period is over (unless kept).
    wait_for(lambda: Run.objects.filter(status="succeeded").count() == 4)
    Run.objects.update(finished_at=timezone.now() - STATELESS_GRACE * 2)
    delete_stateless_threads()  # as the workers' tick does (the server's may be at it too)
    wait_for(lambda: list(Thread.objects.values_list("id", flat=True)) == [kept["thread_id"]])


def test_a_resume_is_a_decision_of_the_decision_service(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    alice, bob = client(lg_url, alice_token), client(lg_url, bob_token)
    thread = alice.threads.create()
    paused = alice.runs.wait(
        thread["thread_id"], "mailer", input={"messages": [{"type": "human", "content": "mail a"}]}
    )
    (review,) = paused["__interrupt__"]
    assert review["value"]["action_requests"][0]["name"] == "send_email"
    assert review["value"]["review_configs"][0]["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]
    item = ReviewItem.objects.get(thread_id=thread["thread_id"])
    assert item.status == "pending" and item.kind == "tool_review"  # it is in the inbox

    with pytest.raises(httpx.HTTPStatusError) as own:
        alice.runs.wait(
            thread["thread_id"], "mailer", command={"resume": {"decisions": [{"type": "approve"}]}}
        )
    assert status_of(own) == 403 and "started this run" in own.value.response.text
    with pytest.raises(httpx.HTTPStatusError) as invalid:
        bob.runs.wait(
            thread["thread_id"], "mailer", command={"resume": {"decisions": [{"type": "teleport"}]}}
        )
    assert status_of(invalid) == 422
    item.refresh_from_db()
    assert item.status == "pending"

    done = bob.runs.wait(
        thread["thread_id"], "mailer", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert (
        done["messages"][-1]["type"] == "ai"
        and done["messages"][-1]["content"] == "Done: sent to a@example.com"
    )
    assert [m["type"] for m in done["messages"]] == ["human", "ai", "tool", "ai"]
    decision = Decision.objects.get(item__thread_id=thread["thread_id"])
    assert (decision.user.username, decision.source, decision.summary) == ("bob", "api", "approve")
    refusals = AuditEvent.objects.filter(thread_ref=thread["thread_id"], action="refused")
    assert sorted(refusals.values_list("summary", flat=True)) == ["invalid", "self_approval"]
    with pytest.raises(httpx.HTTPStatusError) as again:
        bob.runs.wait(
            thread["thread_id"], "mailer", command={"resume": {"decisions": [{"type": "approve"}]}}
        )
    assert status_of(again) == 409


def test_parallel_interrupts_are_answered_by_id_and_a_stale_id_is_refused(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create()
    paused = lg.runs.wait(thread["thread_id"], "parallel", input={})
    by_value = {i["value"]: i["id"] for i in paused["__interrupt__"]}
    assert set(by_value) == {"left?", "right?"}
    with pytest.raises(httpx.HTTPStatusError) as ambiguous:
        lg.runs.wait(thread["thread_id"], "parallel", command={"resume": "both"})
    assert status_of(ambiguous) == 422 and "map" in ambiguous.value.response.text

    half = lg.runs.wait(
        thread["thread_id"], "parallel", command={"resume": {by_value["left?"]: "L"}}
    )
    assert half["left"] == "L" and [i["id"] for i in half["__interrupt__"]] == [by_value["right?"]]
    with pytest.raises(httpx.HTTPStatusError) as stale:
        lg.runs.wait(
            thread["thread_id"], "parallel", command={"resume": {by_value["left?"]: "again"}}
        )
    assert status_of(stale) == 409

    thread2 = lg.threads.create()
    both = lg.runs.wait(thread2["thread_id"], "parallel", input={})
    ids = {i["value"]: i["id"] for i in both["__interrupt__"]}
    done = lg.runs.wait(
        thread2["thread_id"],
        "parallel",
        command={"resume": {ids["left?"]: "L", ids["right?"]: "R"}},
    )
    assert done == {"left": "L", "right": "R"}
    assert Run.objects.filter(thread_id=thread2["thread_id"], kind="resume").count() == 1


def test_commands_config_context_and_forks_reach_the_run(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create()
    seen = lg.runs.wait(
        thread["thread_id"],
        "configured",
        input={},
        config={"configurable": {"model": "m1", "thread_id": "spoofed"}},
        context={"tenant": "t1", "user_id": 999},
    )
    assert seen["seen"]["configurable"]["model"] == "m1"
    assert seen["seen"]["context"]["tenant"] == "t1"
    assert seen["seen"]["context"]["user_id"] != 999  # the requester is set from the token

    linear = lg.threads.create()
    lg.runs.wait(linear["thread_id"], "linear", input={"log": []})
    early = lg.threads.get_history(linear["thread_id"])[-2]  # after "one"
    forked = lg.runs.wait(
        linear["thread_id"], "linear", input={"log": ["fork"]}, checkpoint=early["checkpoint"]
    )
    assert forked["log"][:2] == ["one", "fork"]
    moved = lg.runs.wait(
        linear["thread_id"], "linear", command={"goto": "three", "update": {"log": ["jump"]}}
    )
    assert moved["log"][-2:] == ["jump", "three"]
    with pytest.raises(Exception, match="Recursion limit"):
        lg.runs.wait(
            linear["thread_id"], "linear", input={"log": []}, config={"recursion_limit": 1}
        )


def test_a_command_changes_a_thread_waiting_for_an_answer_or_goes_with_the_answer(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create()["thread_id"]
    paused = lg.runs.wait(thread, "ask", input={"amount": 2})

    changed = lg.runs.wait(thread, "ask", command={"update": {"amount": 3}, "goto": "finish"})

    assert changed == {"amount": 3, "log": ["finish"], "__interrupt__": paused["__interrupt__"]}
    assert lg.threads.get(thread)["status"] == "interrupted"
    done = lg.runs.wait(thread, "ask", command={"resume": "yes", "update": {"amount": 4}})
    assert done == {"amount": 4, "answer": "yes", "log": ["finish"]}
    decision = Decision.objects.get(item__thread_id=thread)
    assert (decision.user.username, decision.source) == ("alice", "api")
    with pytest.raises(httpx.HTTPStatusError) as unknown:
        lg.runs.wait(thread, "ask", command={"goto": "nowhere"})
    assert status_of(unknown) == 422


def test_a_goto_sends_input_to_a_node_as_langgraphs_send_does(
    lg_url: str, alice_token: str
) -> None:
    lg = client(lg_url, alice_token)
    thread = lg.threads.create()["thread_id"]
    lg.runs.wait(thread, "greeter", input={"log": []})
    send: Send = {"node": "greet", "input": {"name": "ada"}}

    done = lg.runs.wait(thread, "greeter", command={"goto": [send, "greet"]})

    assert done == {"log": ["start", "hello ada", "hello everyone"]}
    with pytest.raises(httpx.HTTPStatusError) as unknown:
        lg.runs.wait(thread, "greeter", command={"goto": {"node": "nowhere", "input": None}})
    assert status_of(unknown) == 422


def test_breakpoints_pause_the_run_and_another_user_continues_it(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    alice, bob = client(lg_url, alice_token), client(lg_url, bob_token)
    thread = alice.threads.create()
    paused = alice.runs.wait(
        thread["thread_id"], "linear", input={"log": []}, interrupt_before=["two"]
    )
    assert paused == {"log": ["one"]}  # no questions: a breakpoint is not an interrupt
    state = alice.threads.get_state(thread["thread_id"])
    assert (
        state["next"],
        state["interrupts"],
        alice.threads.get(thread["thread_id"])["status"],
    ) == (["two"], [], "interrupted")
    assert ReviewItem.objects.get(thread_id=thread["thread_id"]).kind == "breakpoint"
    with pytest.raises(httpx.HTTPStatusError) as own:
        alice.runs.wait(thread["thread_id"], "linear", input=None)
    assert status_of(own) == 403  # continuing lets the run proceed: not the starter
    assert bob.runs.wait(thread["thread_id"], "linear") == {"log": ["one", "two", "three"]}

    after = alice.threads.create()
    assert alice.runs.wait(
        after["thread_id"], "linear", input={"log": []}, interrupt_after=["one"]
    ) == {"log": ["one"]}
    assert alice.threads.get_state(after["thread_id"])["next"] == ["two"]


def test_a_missing_thread_is_created_on_request(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    with pytest.raises(httpx.HTTPStatusError) as missing:
        lg.runs.wait("lg-new-1", "linear", input={"log": []})
    assert status_of(missing) == 404
    assert lg.runs.wait("lg-new-1", "linear", input={"log": []}, if_not_exists="create")["log"] == [
        "one",
        "two",
        "three",
    ]
    assert lg.threads.get("lg-new-1")["metadata"]["graph_id"] == "linear"


def _running(thread_id: str) -> Run:
    return wait_for(lambda: Run.objects.filter(thread_id=thread_id, status="running").first())


def test_a_busy_thread_follows_the_multitask_strategy(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    thread_id = lg.threads.create()["thread_id"]
    first = lg.runs.create(thread_id, "steps", input={"log": []})
    _running(thread_id)
    with pytest.raises(ConflictError, match="already running"):
        lg.runs.create(thread_id, "steps", input={"log": []}, multitask_strategy="reject")
    queued = lg.runs.create(thread_id, "steps", input={"log": [100]}, multitask_strategy="enqueue")
    later = lg.runs.create(thread_id, "steps", input={"log": [200]})  # enqueue is the default
    assert lg.runs.get(thread_id, later["run_id"])["status"] == "pending"
    log = lg.runs.join(thread_id, later["run_id"])["log"]
    steps = [0, 1, 2, 3, 4, 5]
    assert log == [*steps, 100, *steps, 200, *steps]  # one after the other, in order
    assert [lg.runs.get(thread_id, r["run_id"])["status"] for r in (first, queued, later)] == [
        "success"
    ] * 3

    busy = lg.runs.create(thread_id, "steps", input={"log": [1]})
    _running(thread_id)
    replaced = lg.runs.wait(thread_id, "steps", input={"log": [2]}, multitask_strategy="interrupt")
    assert replaced["log"][-7:] == [2, *steps]
    assert lg.runs.get(thread_id, busy["run_id"])["status"] == "interrupted"

    before = lg.threads.get_state(thread_id)["values"]["log"]
    rolled = lg.runs.create(thread_id, "steps", input={"log": [3]})
    _running(thread_id)
    after = lg.runs.wait(thread_id, "steps", input={"log": [4]}, multitask_strategy="rollback")
    assert lg.runs.get(thread_id, rolled["run_id"])["status"] == "interrupted"
    assert after["log"] == [*before, 4, *steps]  # as if the rolled back run never ran


def test_a_run_is_cancelled_or_rolled_back(lg_url: str, alice_token: str) -> None:
    lg = client(lg_url, alice_token)
    thread_id = lg.threads.create()["thread_id"]
    lg.runs.wait(thread_id, "steps", input={"log": []})
    before = lg.threads.get_state(thread_id)["values"]
    run = lg.runs.create(thread_id, "steps", input={"log": [9]})
    _running(thread_id)
    with pytest.raises(ConflictError, match="cancel it"):
        lg.runs.delete(thread_id, run["run_id"])
    lg.runs.cancel(thread_id, run["run_id"], action="rollback")
    assert lg.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    assert lg.threads.get_state(thread_id)["values"] == before

    other = lg.runs.create(thread_id, "steps", input={"log": [8]})
    _running(thread_id)
    lg.runs.cancel(thread_id, other["run_id"], wait=True)
    assert lg.runs.get(thread_id, other["run_id"])["status"] == "interrupted"
    with pytest.raises(ConflictError):
        lg.runs.cancel(thread_id, other["run_id"])


class _Hooks(BaseHTTPRequestHandler):
    received: list[tuple[Any, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.headers, body))  # looked up case-insensitively
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hooks() -> Iterator[tuple[str, list[tuple[Any, bytes]]]]:
    _Hooks.received = []
    server = ThreadingHTTPServer(("127.0.0.1", HOOK_PORT), _Hooks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{HOOK_PORT}/hook", _Hooks.received
    server.shutdown()


def test_a_runs_webhook_is_posted_signed_when_it_ends(
    lg_url: str, alice_token: str, hooks: Any
) -> None:
    url, received = hooks
    lg = client(lg_url, alice_token)
    run = lg.runs.create(None, "linear", input={"log": []}, webhook=url, on_completion="keep")
    wait_for(lambda: received)
    ((headers, body),) = received
    assert (headers["Content-Type"], headers["User-Agent"]) == (
        "application/json",
        "BeamWeaver-Webhooks/1",
    )
    assert headers["X-BeamWeaver-Event"] == "run.succeeded"
    assert headers["X-BeamWeaver-Delivery"] == f"{run['run_id']}:succeeded"
    assert verify_signature(
        WEBHOOK_SECRET, headers["X-BeamWeaver-Timestamp"], body, headers["X-BeamWeaver-Signature"]
    )
    sent = json.loads(body)
    assert (sent["run_id"], sent["status"], sent["values"]) == (
        run["run_id"],
        "success",
        {"log": ["one", "two", "three"]},
    )
    with pytest.raises(httpx.HTTPStatusError) as elsewhere:
        lg.runs.wait(None, "linear", input={}, webhook="http://169.254.169.254/latest")
    assert status_of(elsewhere) == 422 and "not allowed" in elsewhere.value.response.text


def test_a_threads_stream_answers_at_once_on_a_quiet_thread(lg_url: str, alice_token: str) -> None:
    """Its status and headers come at once, as on LangGraph's server, not with its first
    event or heartbeat: daphne sends the headers with the body's first bytes, so a client
    joined to a quiet thread saw no answer for the heartbeat's 5 s (found by
    tests/protocol/test_fuzz.py)."""
    thread_id = client(lg_url, alice_token).threads.create()["thread_id"]
    with (
        httpx.Client(base_url=lg_url, timeout=httpx.Timeout(10, read=3)) as http,
        http.stream(
            "GET", f"/threads/{thread_id}/stream", headers={"x-api-key": alice_token}
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert next(response.iter_bytes()).startswith(b":")


def test_a_run_started_over_lg_is_decided_in_the_inbox_and_a_joined_stream_sees_it_continue(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    alice = client(lg_url, alice_token)
    thread_id = alice.threads.create()["thread_id"]
    started = alice.runs.create(
        thread_id, "ask", input={"amount": 3}, stream_mode=["values", "updates"]
    )
    alice.runs.join(thread_id, started["run_id"])
    item = ReviewItem.objects.get(thread_id=thread_id, status="pending")
    seen: list[Any] = []
    # Resume the thread's stream from its last stored event: whenever the stream connects,
    # it misses nothing of what comes after.
    last = RunEvent.objects.filter(thread_id=thread_id).order_by("-id").first()
    assert last is not None

    def join() -> None:
        for part in alice.threads.join_stream(thread_id, last_event_id=f"{last.id}-999"):
            seen.append(part)
            if part.event == "metadata" and (part.data or {}).get("status") == "run_done":
                return

    joined = threading.Thread(target=join, daemon=True)
    joined.start()
    with httpx.Client(base_url=lg_url.removesuffix("/lg")) as http:
        decided = http.post(
            f"/api/v1/items/{item.pk}/decisions/",
            headers={"Authorization": f"Bearer {bob_token}"},
            json={"client_decision_id": "inbox-1", "digest": item.digest, "answer": True},
        )
    assert decided.status_code == 200, decided.text
    joined.join(20)
    events = [(p.event, p.data) for p in seen]
    resume = Run.objects.get(thread_id=thread_id, kind="resume")
    assert events[0] == ("metadata", {"run_id": str(resume.id), "attempt": 1})
    assert ("updates", {"ask": {"answer": True}}) in events
    assert ("values", {"amount": 3, "answer": True, "log": ["finish"]}) in events
    assert events[-1] == ("metadata", {"status": "run_done", "run_id": str(resume.id)})
    assert alice.threads.get(thread_id)["status"] == "idle"


def test_a_client_that_leaves_cancels_its_run_when_it_asked_to(
    lg_url: str, alice_token: str
) -> None:
    thread_id = client(lg_url, alice_token).threads.create()["thread_id"]
    body = {"assistant_id": "steps", "input": {"log": []}, "on_disconnect": "cancel"}
    http = httpx.Client(base_url=lg_url, headers={"x-api-key": alice_token}, timeout=30)
    with http, http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
        next(response.iter_lines())  # the metadata event: the run is queued
    run = wait_for(lambda: Run.objects.filter(thread_id=thread_id, status="cancelled").first())
    assert run.error.startswith("Cancelled")


def test_only_those_the_inbox_lets_cancel_a_run_may_cancel_it_over_lg(
    lg_url: str, alice_token: str, bob_token: str
) -> None:
    alice, bob = client(lg_url, alice_token), client(lg_url, bob_token)
    thread_id = alice.threads.create()["thread_id"]
    run = alice.runs.create(thread_id, "steps", input={"log": []})
    _running(thread_id)
    with pytest.raises(httpx.HTTPStatusError) as refused:  # not the requester, no reviews
        bob.runs.cancel(thread_id, run["run_id"])
    assert status_of(refused) == 403
    with pytest.raises(httpx.HTTPStatusError) as strategy:
        bob.runs.create(thread_id, "steps", input={"log": []}, multitask_strategy="interrupt")
    assert status_of(strategy) == 403
    alice.runs.cancel(thread_id, run["run_id"])  # the requester may
    assert alice.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
