"""The differential suite: the same scenarios through the same `langgraph-sdk` calls against
BeamWeaver's `/lg` (daphne + workers on Postgres) and against LangGraph's own server
(`langgraph dev`, in-memory) running equivalent LangGraph graphs (`langgraph/graphs.py`),
compared after normalising ids and timestamps.

Where the two answer differently, the test asserts what is right and says why: either
LangGraph's server is wrong, or BeamWeaver differs on purpose (docs/protocol.md, "Where
BeamWeaver deliberately differs").

The servers and clients are `conftest.py`'s, the comparison's helpers `comparison.py`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError

from tests.protocol.differential.comparison import events, on_both, without_end
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

STEP_SECONDS = "0.15"  # "steps" runs six steps, ~1 s: long enough to find its thread busy
SERVER_ENV = {"BEAMWEAVER_TEST_STEP_SECONDS": STEP_SECONDS}


def status_of(call: Callable[[], Any]) -> int:
    try:
        call()
    except httpx.HTTPStatusError as error:
        return int(error.response.status_code)
    return 200


def wait_until_running(lg: Any, thread_id: str, run_id: str) -> None:
    wait_for(
        lambda: lg.runs.get(thread_id, run_id)["status"] == "running",
        20,
        "the run to start",
        every=0.03,
    )


def test_a_question_pauses_the_stream_and_a_resume_streams_the_rest(
    both: dict[str, Any],
) -> None:
    modes = ["values", "updates", "custom"]

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        paused = events(lg.runs.stream(thread_id, "ask", input={"amount": 2}, stream_mode=modes))
        thread = lg.threads.get(thread_id)
        state = lg.threads.get_state(thread_id)
        resumed = events(
            lg.runs.stream(thread_id, "ask", command={"resume": "yes"}, stream_mode=modes)
        )
        return {
            "paused": paused,
            "resumed": resumed,
            "status": thread["status"],
            "interrupts": thread["interrupts"],
            "next": state["next"],
            "tasks": [(t["name"], t["interrupts"]) for t in state["tasks"]],
            "values": lg.threads.get_state(thread_id)["values"],
            "after": lg.threads.get(thread_id)["status"],
        }

    ours, theirs = on_both(both, scenario)
    assert ours["paused"][-1][0] == ours["resumed"][-1][0] == "end"
    for key in ("paused", "resumed"):
        ours[key], theirs[key] = without_end(ours[key]), without_end(theirs[key])
    assert ours == theirs
    assert ours["paused"][0] == ["metadata", {"run_id": "<id:1>", "attempt": 1}]
    assert ours["status"] == "interrupted" and ours["after"] == "idle"
    assert ours["values"] == {"amount": 2, "answer": "yes", "log": ["finish"]}


def test_parallel_interrupts_are_resumed_by_a_map_of_their_ids(both: dict[str, Any]) -> None:
    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        paused = lg.runs.wait(thread_id, "parallel", input={})
        ids = {i["value"]: i["id"] for i in paused["__interrupt__"]}
        half = lg.runs.wait(thread_id, "parallel", command={"resume": {ids["left?"]: "L"}})
        left = [i["value"] for i in half["__interrupt__"]]
        done = lg.runs.wait(thread_id, "parallel", command={"resume": {ids["right?"]: "R"}})

        other = lg.threads.create()["thread_id"]
        again = lg.runs.wait(other, "parallel", input={})
        both_ids = {i["value"]: i["id"] for i in again["__interrupt__"]}
        at_once = lg.runs.wait(
            other,
            "parallel",
            command={"resume": {both_ids["left?"]: "L", both_ids["right?"]: "R"}},
        )
        return {
            "asked": sorted(ids),
            "half": {k: v for k, v in half.items() if k != "__interrupt__"},
            "left": left,
            "done": done,
            "at_once": at_once,
        }

    ours, theirs = on_both(both, scenario)
    # Half answered: BeamWeaver's thread values already hold the answered task's write
    # (a step's finished tasks are saved as they finish, docs/architecture.md), where
    # LangGraph's server keeps it as a pending write until the whole step is done. The
    # question left and the final state are the same.
    assert ours.pop("half") == {"left": "L"} and theirs.pop("half") == {}
    assert ours == theirs
    assert ours["asked"] == ["left?", "right?"] and ours["left"] == ["right?"]
    assert ours["done"] == ours["at_once"] == {"left": "L", "right": "R"}


def test_a_single_answer_to_parallel_questions_is_refused_up_front(
    both: dict[str, Any],
) -> None:
    """A bare resume value when two questions wait: both servers refuse it, but LangGraph's
    server only after starting a run, which then fails (`runs.wait` answers 200 with an
    `__error__`, the SDK raises a bare `Exception`) and leaves a failed run on the thread;
    BeamWeaver answers 422 asking for a map of ids and starts nothing, as for any invalid
    answer (a resume is a decision, validated before anything runs)."""

    def ask_both(lg: Any) -> str:
        thread_id = lg.threads.create()["thread_id"]
        lg.runs.wait(thread_id, "parallel", input={})
        return str(thread_id)

    ours, theirs = both["ours"], both["theirs"]
    thread_id = ask_both(ours)
    refused = status_of(lambda: ours.runs.wait(thread_id, "parallel", command={"resume": "x"}))
    assert refused == 422
    assert ours.threads.get(thread_id)["status"] == "interrupted"
    assert len(ours.runs.list(thread_id)) == 1  # nothing started
    thread_id = ask_both(theirs)
    with pytest.raises(Exception, match="multiple pending interrupts"):
        theirs.runs.wait(thread_id, "parallel", command={"resume": "x"})
    assert [r["status"] for r in theirs.runs.list(thread_id)] == ["error", "success"]


def test_a_linear_graph_streams_one_update_per_node(both: dict[str, Any]) -> None:
    def scenario(lg: Any) -> list[list[Any]]:
        thread_id = lg.threads.create()["thread_id"]
        return events(lg.runs.stream(thread_id, "linear", input={"log": []}, stream_mode="updates"))

    ours, theirs = on_both(both, scenario)
    assert ours[-1][0] == "end"
    assert without_end(ours) == without_end(theirs)
    assert [e for e, _ in without_end(ours)] == ["metadata", "updates", "updates", "updates"]
    assert [d for _, d in without_end(ours)[1:]] == [
        {"one": {"log": ["one"]}},
        {"two": {"log": ["two"]}},
        {"three": {"log": ["three"]}},
    ]


STEPS = [0, 1, 2, 3, 4, 5]


def test_a_busy_thread_rejects_enqueues_or_interrupts(both: dict[str, Any]) -> None:
    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        first = lg.runs.create(thread_id, "steps", input={"log": []})
        wait_until_running(lg, thread_id, first["run_id"])
        rejected = status_of(
            lambda: lg.runs.create(
                thread_id, "steps", input={"log": []}, multitask_strategy="reject"
            )
        )
        queued = lg.runs.create(
            thread_id, "steps", input={"log": [100]}, multitask_strategy="enqueue"
        )
        queued_status = lg.runs.get(thread_id, queued["run_id"])["status"]
        enqueued = lg.runs.join(thread_id, queued["run_id"])["log"]

        busy = lg.runs.create(thread_id, "steps", input={"log": [1]})
        wait_until_running(lg, thread_id, busy["run_id"])
        replaced = lg.runs.wait(
            thread_id, "steps", input={"log": [2]}, multitask_strategy="interrupt"
        )
        return {
            "rejected": rejected,
            "queued_status": queued_status,
            "enqueued": enqueued,
            "statuses": [
                lg.runs.get(thread_id, r["run_id"])["status"] for r in (first, queued, busy)
            ],
            "replaced_tail": replaced["log"][-7:],
        }

    ours, theirs = on_both(both, scenario)
    assert ours == theirs
    assert ours["rejected"] == 409 and ours["queued_status"] == "pending"
    assert ours["enqueued"] == [*STEPS, 100, *STEPS]
    assert ours["statuses"] == ["success", "success", "interrupted"]
    assert ours["replaced_tail"] == [2, *STEPS]


def test_rollback_restores_the_state_and_keeps_the_run_as_a_record(
    both: dict[str, Any],
) -> None:
    """Rollback restores the thread's state to where the rolled back run started.
    LangGraph's server then deletes the run (404); BeamWeaver keeps it, cancelled
    (`interrupted`), with its events, because the audit trail keeps every run that touched
    a thread (docs/protocol.md).

    LangGraph's server does not always restore the state, and BeamWeaver must: when nobody
    streams the rolled back run, its `Runs.cancel` deletes the *running* run and its
    checkpoints at once ("Eagerly deleting pending run with rollback action",
    langgraph_runtime_inmem/ops.py) while the run's worker is still executing it. The new
    run may then start at once, and a checkpoint the dying run writes just after the
    delete becomes part of the new run's state (seen in CI on 2026-12-06: `3`, the rolled
    back run's input, kept before `4`). So LangGraph's answer is held to "the restored
    state, or it plus a prefix of the rolled back run's own writes"; ours to the restored
    state exactly (a cancelled run's writes are fenced by its lease)."""

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        lg.runs.wait(thread_id, "steps", input={"log": []})
        before = lg.threads.get_state(thread_id)["values"]
        rolled = lg.runs.create(thread_id, "steps", input={"log": [3]})
        wait_until_running(lg, thread_id, rolled["run_id"])
        after = lg.runs.wait(thread_id, "steps", input={"log": [4]}, multitask_strategy="rollback")
        try:
            kept = lg.runs.get(thread_id, rolled["run_id"])["status"]
        except NotFoundError:
            kept = 404
        return {"before": before, "after": after, "kept": kept}

    ours, theirs = on_both(both, scenario)
    assert ours["after"] == {"log": [*STEPS, 4, *STEPS]}, f"ours: {ours}"
    assert ours["before"] == theirs["before"] == {"log": STEPS}
    log = theirs["after"]["log"]
    assert log[: len(STEPS)] == STEPS and log[-len(STEPS) - 1 :] == [4, *STEPS], theirs
    leaked = log[len(STEPS) : -len(STEPS) - 1]
    assert leaked == [3, *STEPS][: len(leaked)], f"theirs: {theirs}"
    assert ours["kept"] == "interrupted" and theirs["kept"] == 404


def test_background_runs_are_joined_listed_and_cancelled(both: dict[str, Any]) -> None:
    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        run = lg.runs.create(thread_id, "steps", input={"log": []})
        joined = lg.runs.join(thread_id, run["run_id"])
        got = lg.runs.get(thread_id, run["run_id"])
        slow = lg.runs.create(thread_id, "steps", input={"log": []})
        wait_until_running(lg, thread_id, slow["run_id"])
        lg.runs.cancel(thread_id, slow["run_id"], wait=True)
        listed = lg.runs.list(thread_id)
        return {
            "created": {k: run[k] for k in ("status", "thread_id", "assistant_id")},
            "joined": joined,
            "got": {k: got[k] for k in ("run_id", "status", "multitask_strategy")},
            "cancelled": lg.runs.get(thread_id, slow["run_id"])["status"],
            "listed": [(r["run_id"], r["status"]) for r in listed],
            "thread": lg.threads.get(thread_id)["status"],
        }

    ours, theirs = on_both(both, scenario)
    # After the cancel, LangGraph's server shows the thread `interrupted`, the status
    # clients (Agent Inbox) read as "waits for a human"; nothing does: no interrupt is
    # pending. BeamWeaver shows it `idle` (docs/protocol.md: a cancelled *run* is
    # `interrupted`; the thread's status says whether anything waits on it).
    assert ours.pop("thread") == "idle" and theirs.pop("thread") == "interrupted"
    assert ours == theirs
    assert ours["created"]["status"] == "pending" and ours["cancelled"] == "interrupted"
    assert ours["joined"] == {"log": STEPS}
    assert [status for _, status in ours["listed"]] == ["interrupted", "success"]  # newest first


def test_stateless_runs_wait_and_stream(both: dict[str, Any]) -> None:
    def scenario(lg: Any) -> dict[str, Any]:
        waited = lg.runs.wait(None, "linear", input={"log": ["x"]})
        streamed = events(lg.runs.stream(None, "linear", input={"log": []}, stream_mode="values"))
        return {"waited": waited, "streamed": without_end(streamed)[1:]}

    ours, theirs = on_both(both, scenario)
    assert ours == theirs
    assert ours["waited"] == {"log": ["x", "one", "two", "three"]}
    assert ours["streamed"][-1] == ["values", {"log": ["one", "two", "three"]}]


def test_update_state_search_and_history(both: dict[str, Any]) -> None:
    tag = uuid.uuid4().hex  # this test's threads only, on a server other tests use too

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create(metadata={"tag": tag, "n": 1})["thread_id"]
        lg.threads.create(metadata={"tag": tag, "n": 2})
        lg.runs.wait(thread_id, "linear", input={"log": []})
        lg.threads.update_state(thread_id, {"log": ["edited"]}, as_node="three")
        state = lg.threads.get_state(thread_id)
        history = lg.threads.get_history(thread_id)
        limited = lg.threads.get_history(thread_id, limit=2)
        found = lg.threads.search(metadata={"tag": tag})
        idle = lg.threads.search(metadata={"tag": tag, "n": 1}, status="idle")
        return {
            "values": state["values"],
            "next": state["next"],
            "source": state["metadata"]["source"],
            "history": [(h["values"], h["next"]) for h in history],
            "results": [[(t["name"], t["result"]) for t in h["tasks"]] for h in history],
            "limited": [h["checkpoint"]["checkpoint_id"] for h in limited],
            "newest": history[0]["checkpoint"]["checkpoint_id"],
            "parents": [
                h["parent_checkpoint"]["checkpoint_id"] if h["parent_checkpoint"] else None
                for h in history
            ],
            "found": sorted(t["metadata"]["n"] for t in found),
            "idle": [t["thread_id"] for t in idle],
            "thread_id": thread_id,
        }

    ours, theirs = on_both(both, scenario)
    # LangGraph's server keeps one more, oldest checkpoint: the input before the first
    # step (`next: ["__start__"]`). BeamWeaver's first checkpoint is the input applied, at
    # the first node; forking "before the input" is starting a new thread.
    assert theirs["history"][-1] == [{"log": []}, ["__start__"]]
    assert theirs["results"].pop() == [["__start__", {"log": []}]]
    theirs["history"].pop()
    theirs["parents"] = [*theirs["parents"][:-2], None]
    assert ours["values"] == {"log": ["one", "two", "three", "edited"]}
    # Each step's entry shows what its task wrote (`tasks[].result`).
    assert ours["results"] == [
        [],
        [],
        [["three", {"log": ["three"]}]],
        [["two", {"log": ["two"]}]],
        [["one", {"log": ["one"]}]],
    ]
    assert ours["source"] == "update" and ours["next"] == []
    assert len(ours["limited"]) == 2
    assert ours["limited"][0] == ours["newest"]
    assert ours["found"] == [1, 2] and ours["idle"] == [ours["thread_id"]]
    # The checkpoints' ids are numbered in each server's own order of appearance, so
    # compare them as a chain: each checkpoint's parent is the next older one.
    for side in (ours, theirs):
        ids = [side["newest"], *side["parents"][:-1]]
        assert side["parents"][:-1] == ids[1:] and side["parents"][-1] is None
    strip = ("limited", "newest", "parents", "thread_id", "idle")
    assert {k: v for k, v in ours.items() if k not in strip} == {
        k: v for k, v in theirs.items() if k not in strip
    }


def test_unknown_threads_runs_and_assistants_are_404(both: dict[str, Any]) -> None:
    missing = str(uuid.uuid4())

    def scenario(lg: Any) -> dict[str, int]:
        thread_id = lg.threads.create()["thread_id"]
        return {
            "thread": status_of(lambda: lg.threads.get(missing)),
            "state": status_of(lambda: lg.threads.get_state(missing)),
            "history": status_of(lambda: lg.threads.get_history(missing)),
            "delete": status_of(lambda: lg.threads.delete(missing)),
            "run": status_of(lambda: lg.runs.get(thread_id, missing)),
            "cancel": status_of(lambda: lg.runs.cancel(thread_id, missing)),
            "assistant": status_of(lambda: lg.assistants.get("no-such-graph")),
            "run_on_missing_thread": status_of(lambda: lg.runs.create(missing, "linear", input={})),
            "run_of_missing_graph": status_of(
                lambda: lg.runs.create(thread_id, "no-such-graph", input={})
            ),
        }

    ours, theirs = on_both(both, scenario)
    # An unknown assistant: LangGraph's server answers 422 for a name that is neither a
    # graph nor a UUID; BeamWeaver answers 404, as for every unknown thing (the issue's
    # contract: "unknown and forbidden both 404"), which is what a client can act on.
    assert ours.pop("assistant") == 404 and theirs.pop("assistant") == 422
    assert ours == theirs
    assert ours == {
        "thread": 404,
        "state": 404,
        "history": 404,
        "delete": 404,
        "run": 404,
        "cancel": 404,
        "run_on_missing_thread": 404,
        "run_of_missing_graph": 422,  # both: the body names no assistant there is
    }


def test_joining_an_unknown_run_is_404_not_an_error_value(both: dict[str, Any]) -> None:
    """`runs.join` of a run that does not exist: LangGraph's server answers 200 with an
    `__error__` body, which a client reads as the run's (failed) result; BeamWeaver answers
    404, as for every other call on something that is not there (docs/protocol.md)."""
    missing = str(uuid.uuid4())
    ours, theirs = both["ours"], both["theirs"]
    mine = ours.threads.create()["thread_id"]
    assert status_of(lambda: ours.runs.join(mine, missing)) == 404
    joined = theirs.runs.join(theirs.threads.create()["thread_id"], missing)
    assert "__error__" in joined


def test_a_second_answer_to_the_same_question_is_refused(both: dict[str, Any]) -> None:
    """Answering a question that was already answered: LangGraph's server starts a run
    that does nothing new (the thread is idle, so there is nothing to resume); BeamWeaver
    refuses it with 409, because an answer is a decision and each interrupt takes one
    (docs/protocol.md)."""

    def answer_twice(lg: Any) -> Callable[[], Any]:
        thread_id = lg.threads.create()["thread_id"]
        lg.runs.wait(thread_id, "ask", input={"amount": 1})
        lg.runs.wait(thread_id, "ask", command={"resume": "yes"})
        return lambda: lg.runs.wait(thread_id, "ask", command={"resume": "again"})

    assert status_of(answer_twice(both["ours"])) == 409
    assert status_of(answer_twice(both["theirs"])) == 200


SECRET = "sk-test-0123456789abcdefghij"  # in the error the "explode" graphs raise


def test_a_failed_run_shows_its_error_on_the_task_that_raised(both: dict[str, Any]) -> None:
    """Both servers show the failed task still next, with its error as `repr` of the
    exception (LangGraph's ERROR write). The error's text is the node's: BeamWeaver
    withholds the credential in it (docs/protocol.md), LangGraph's server shows it."""

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        failed = lg.runs.wait(thread_id, "explode", input={}, raise_error=False)
        state = lg.threads.get_state(thread_id)
        return {
            "error": failed["__error__"],
            "status": lg.threads.get(thread_id)["status"],
            "next": state["next"],
            "tasks": [(t["name"], t["error"], t["result"]) for t in state["tasks"]],
        }

    ours, theirs = on_both(both, scenario)
    said = "the tool backend is down (api_key={})"
    assert theirs["error"] == {"error": "RuntimeError", "message": said.format(SECRET)}
    assert ours["error"] == {"error": "RuntimeError", "message": said.format("[redacted]")}
    assert theirs["tasks"] == [["explode", f"RuntimeError('{said.format(SECRET)}')", None]]
    assert ours["tasks"] == [["explode", f"RuntimeError('{said.format('[redacted]')}')", None]]
    for side in (ours, theirs):
        del side["error"], side["tasks"]
    assert ours == theirs == {"status": "error", "next": ["explode"]}


def test_an_update_without_an_answer_keeps_the_question_and_goes_with_one(
    both: dict[str, Any],
) -> None:
    """`command.update` with no `resume` on a thread waiting for an answer: both apply it
    and the question still waits, with its id; an answer with an update applies both.

    LangGraph's server runs the waiting node again, so the question is asked anew about
    the new amount; BeamWeaver leaves it waiting as it was asked (the question a reviewer
    sees is the one they answer, docs/engine.md). And LangGraph's server keeps each
    command's update as input of the one step that still waits, so the answer's update of
    the same key is a second value for it in one step: the run fails
    (`InvalidUpdateError`); BeamWeaver applies each command on a checkpoint of its own, so
    the later value stands."""

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        paused = lg.runs.wait(thread_id, "ask", input={"amount": 2})
        changed = lg.runs.wait(thread_id, "ask", command={"update": {"amount": 3}})
        state = lg.threads.get_state(thread_id)
        status = lg.threads.get(thread_id)["status"]
        done = lg.runs.wait(
            thread_id,
            "ask",
            command={"resume": "yes", "update": {"amount": 4}},
            raise_error=False,
        )
        return {
            "paused": paused,
            "changed": changed,
            "state": (state["values"], state["next"], status),
            "done": done,
        }

    ours, theirs = on_both(both, scenario)
    asked = {"question": "Approve?", "amount": 2}
    assert ours["changed"]["__interrupt__"] == [{"id": "<id:1>", "value": asked}]
    assert theirs["changed"]["__interrupt__"] == [{"id": "<id:1>", "value": {**asked, "amount": 3}}]
    assert ours.pop("done") == {"amount": 4, "answer": "yes", "log": ["finish"]}
    assert theirs.pop("done")["__error__"]["error"] == "InvalidUpdateError"
    for side in (ours, theirs):
        del side["changed"]["__interrupt__"]
    assert ours == theirs
    assert ours["changed"] == {"amount": 3}
    assert ours["state"] == [{"amount": 3}, ["ask"], "interrupted"]


def test_a_goto_sends_its_input_to_a_node(both: dict[str, Any]) -> None:
    """`command.goto` takes sends (`{"node", "input"}`, LangGraph's `Send`), one or a list:
    each runs its node once with its input instead of the state.

    A list mixing node names and sends (the SDK's `Sequence[Send | str]`, which LangGraph's
    JS server and its Python server's `map_cmd` both take) is refused by LangGraph's Python
    server's request schema (422); BeamWeaver runs it (docs/protocol.md)."""
    mixed = [{"node": "greet", "input": {"name": "cy"}}, "greet"]

    def scenario(lg: Any) -> dict[str, Any]:
        thread_id = lg.threads.create()["thread_id"]
        started = lg.runs.wait(thread_id, "greeter", input={"log": []})
        one = lg.runs.wait(
            thread_id, "greeter", command={"goto": {"node": "greet", "input": {"name": "ada"}}}
        )
        sends = [{"node": "greet", "input": {"name": "bob"}}, {"node": "greet", "input": None}]
        several = lg.runs.wait(thread_id, "greeter", command={"goto": sends})
        refused = status_of(lambda: lg.runs.wait(thread_id, "greeter", command={"goto": mixed}))
        return {"started": started, "one": one, "several": several, "mixed": refused}

    ours, theirs = on_both(both, scenario)
    assert (ours.pop("mixed"), theirs.pop("mixed")) == (200, 422)
    assert ours == theirs
    assert ours["several"] == {"log": ["start", "hello ada", "hello bob", "hello everyone"]}
