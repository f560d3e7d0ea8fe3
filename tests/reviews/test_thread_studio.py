"""The thread page as a studio, through the Django test client: the graph drawn with the
paused node marked, what is pending at the top, the timeline with readable changes, and
replaying or forking from a checkpoint for who may change the thread only, audited, as a
new run on a branch."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.utils.html import escape

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry, service
from reviews.models import AuditEvent
from reviews.thread_rights import NOT_ALLOWED
from reviews.timeline import state_diff
from tests.reviews.conftest import client_for, make_reviewer, pause, run_next

pytestmark = pytest.mark.django_db


def finished_steps(thread_id: str, user: User | None = None) -> list[Any]:
    service.start_run("steps", {"log": []}, thread_id=thread_id, user=user)
    assert run_next().status == "succeeded"
    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    return list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))


def checkpoint_id(snapshot: Any) -> str:
    return str(snapshot.config["configurable"]["checkpoint_id"])


def test_a_paused_thread_shows_its_graph_its_paused_node_and_what_it_waits_for(
    alice: User,
) -> None:
    item = pause()

    html = client_for(alice).get(f"/threads/{item.thread_id}/").content.decode()

    assert '<svg xmlns="http://www.w3.org/2000/svg" class="graph-drawing" id="graph-root"' in html
    assert re.search(r'<g class="node is-paused on-path" data-node="propose">', html)
    assert "⏸ review of send_email" in html
    pending = html[html.index('id="thread-items"') : html.index("All review items")]
    assert f'href="/items/{item.pk}/">review item #{item.pk}</a>' in pending
    assert "waits for any reviewer" in pending
    assert html.index('id="thread-items"') < html.index('id="thread-state"')


def test_the_graph_shows_a_question_asked_as_text_redacted(alice: User) -> None:
    """The paused node's note redacted only questions that were not plain text."""
    secret = "sk-live0123456789abcdefXYZ"
    item = pause("text_question", {"question": f"Deploy with key {secret} now?"})

    html = client_for(alice).get(f"/threads/{item.thread_id}/").content.decode()

    assert secret not in html
    assert "<title>ask: paused, Deploy with key [redacted] now?</title>" in html


def test_the_timeline_says_what_caused_each_step_and_what_changed(alice: User) -> None:
    finished_steps("studio-1")

    html = client_for(alice).get("/threads/studio-1/").content.decode()

    timeline = html[html.index('id="thread-history"') :]
    assert "Ran s2" in timeline and "Input" in timeline
    assert re.search(r"<code>log</code> appended\s*<ins>2</ins>", timeline)
    assert "Replay from here" not in timeline  # alice may not change the thread


def test_a_state_diff_lists_appended_items_and_changed_fields() -> None:
    before = {"messages": [{"role": "user", "content": "hi"}], "n": 1, "gone": True}
    after = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "n": 2,
        "new": {"a": 1},
    }

    assert state_diff(before, after) == [
        {"field": "gone", "change": "removed", "before": "true", "after": None},
        {"field": "messages", "change": "appended", "before": None, "after": "assistant: hello"},
        {"field": "n", "change": "changed", "before": "1", "after": "2"},
        {"field": "new", "change": "added", "before": None, "after": '{"a": 1}'},
    ]


def test_forking_someone_elses_thread_follows_the_rule_of_who_may_change_it(db: Any) -> None:
    """A replay or fork is a change of the thread, as over `/lg` (`reviews.thread_rights`):
    for whoever started its work, a reviewer who may reject every review it waits for, or
    a holder of "Can cancel any run"; not for every reviewer who sees it."""
    alice, carol = make_reviewer("alice"), make_reviewer("carol")
    snapshots = finished_steps("studio-5", alice)
    at = checkpoint_id(snapshots[3])
    client = client_for(carol)

    page = client.get(f"/fork/{at}/studio-5/")
    post = client.post(f"/fork/{at}/studio-5/", {"checkpoint_id": at, "mode": "replay"})
    thread_page = client.get("/threads/studio-5/").content.decode()

    assert page.status_code == post.status_code == 403
    assert _card(page.content.decode()) == (
        f"You may not replay or fork this thread {NOT_ALLOWED} You are signed in as carol: "
        "ask one of them to do it, or an administrator for “Can cancel any run”. "
        "Back to the thread"
    )
    assert _card(post.content.decode()) == _card(page.content.decode())
    assert Run.objects.filter(thread_id="studio-5").count() == 1
    assert not AuditEvent.objects.filter(action="forked").exists()
    assert "Replay from here" not in thread_page[thread_page.index('id="thread-history"') :]
    carol.user_permissions.add(Permission.objects.get(codename="cancel_run"))
    operator = client_for(User.objects.get(pk=carol.pk))
    replayed = operator.post(f"/fork/{at}/studio-5/", {"checkpoint_id": at, "mode": "replay"})
    assert replayed.status_code == 302
    assert Run.objects.filter(thread_id="studio-5").count() == 2


def test_a_replay_by_an_operator_carries_on_the_requesters_work(db: Any) -> None:
    """The replay's run is the operator's to have queued (its creator, the audit) but the
    work stays alice's: it runs in her run's context, naming her, and she may still
    change her thread, which the operator's replay used to take from her."""
    alice, carol = make_reviewer("alice"), make_reviewer("carol")
    carol.user_permissions.add(Permission.objects.get(codename="cancel_run"))
    service.start_run("steps", {"log": []}, thread_id="studio-6", user=alice, context={"a": 1})
    assert run_next().status == "succeeded"
    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    at = checkpoint_id(
        list(graph.get_state_history({"configurable": {"thread_id": "studio-6"}}))[3]
    )

    replayed = client_for(User.objects.get(pk=carol.pk)).post(
        f"/fork/{at}/studio-6/", {"checkpoint_id": at, "mode": "replay"}
    )

    assert replayed.status_code == 302
    run = Run.objects.get(thread_id="studio-6", status="queued")
    assert (run.created_by, run.requester_id()) == (carol, alice.pk)
    assert run.context == {"a": 1, "user_id": alice.pk, "username": "alice"}
    assert client_for(alice).get(f"/fork/{at}/studio-6/").status_code == 200


def _card(html: str) -> str:
    """The text of the page's card, tags dropped and spaces folded."""
    card = html[html.index('<section class="card narrow">') : html.index("</section>")]
    return " ".join(re.sub(r"<[^>]+>", " ", card).split())


def test_whoever_started_a_threads_work_may_fork_it_with_no_other_permission(db: Any) -> None:
    alice = make_reviewer("alice")
    at = checkpoint_id(finished_steps("studio-2", alice)[3])

    response = client_for(alice).post(
        f"/fork/{at}/studio-2/", {"checkpoint_id": at, "mode": "replay"}
    )

    assert response.status_code == 302
    assert Run.objects.filter(thread_id="studio-2", status="queued").count() == 1


def test_a_fork_with_an_edited_value_is_audited_and_runs_as_a_branch(db: Any) -> None:
    carol = make_reviewer("carol")
    snapshots = finished_steps("studio-3", carol)
    at = checkpoint_id(next(s for s in snapshots if s.values.get("log") == [0, 1, 2]))
    client = client_for(carol)
    form = client.get(f"/fork/{at}/studio-3/").content.decode()
    assert 'name="value_0"' in form and "<code>log</code>" in form
    assert "Merged by the key&#x27;s reducer: what you enter is added to [0, 1, 2]" in form

    bad = client.post(
        f"/fork/{at}/studio-3/", {"checkpoint_id": at, "mode": "fork", "value_0": "[1,"}
    )
    unchanged = client.post(
        f"/fork/{at}/studio-3/", {"checkpoint_id": at, "mode": "fork", "value_0": ""}
    )
    done = client.post(
        f"/fork/{at}/studio-3/",
        {"checkpoint_id": at, "mode": "fork", "value_0": "[7]", "as_node": "s2"},
    )

    assert bad.status_code == unchanged.status_code == 422
    assert "Not JSON" in bad.content.decode()
    assert "Nothing was changed" in unchanged.content.decode()
    assert done.status_code == 302 and done["Location"] == "/threads/studio-3/"
    run = Run.objects.get(thread_id="studio-3", status="queued")
    event = AuditEvent.objects.get(action="forked")
    assert (event.actor_name, event.thread_ref, event.decision["from_checkpoint"]) == (
        "carol",
        "studio-3",
        at,
    )
    assert event.decision["edited"] == ["log"] and event.decision["run_id"] == str(run.id)
    assert run_next().status == "succeeded"
    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    latest = graph.get_state({"configurable": {"thread_id": "studio-3"}})
    assert latest.values["log"] == [0, 1, 2, 7, 3, 4, 5]
    html = client.get("/threads/studio-3/").content.decode()
    timeline = html[html.index('id="thread-history"') :]
    assert "carol edited the state (fork as s2)" in timeline
    assert "branch 1" in timeline and "forked from" in timeline
    assert "Replay from here" in timeline


def test_a_replay_from_the_timeline_is_a_new_run(db: Any) -> None:
    carol = make_reviewer("carol")
    snapshots = finished_steps("studio-4", carol)
    at = checkpoint_id(snapshots[2])

    response = client_for(carol).post(
        f"/fork/{at}/studio-4/", {"checkpoint_id": at, "mode": "replay"}
    )

    assert response.status_code == 302
    assert Run.objects.filter(thread_id="studio-4", status="queued").count() == 1
    assert AuditEvent.objects.get(action="forked").summary == f"Replayed from checkpoint {at[:12]}"
    assert client_for(carol).get("/fork/nope/studio-4/").status_code == 404


def test_a_replay_where_a_question_is_still_open_is_refused_as_over_lg(db: Any) -> None:
    """A run from a step that waits on a question would ask it again, unanswered: the page
    refuses it (409, the runtime's `QuestionPendingError`, as `/lg` answers a run without
    input there) and queues nothing. It used to queue the replay."""
    alice = make_reviewer("alice")
    item = pause(user=alice)
    graph = registry.compiled_graph("tool_review", PostgresCheckpointer())
    at = checkpoint_id(graph.get_state({"configurable": {"thread_id": item.thread_id}}))
    runs = Run.objects.filter(thread_id=item.thread_id).count()

    response = client_for(alice).post(
        f"/fork/{at}/{item.thread_id}/", {"checkpoint_id": at, "mode": "replay"}
    )

    assert response.status_code == 409
    refusal = f"Thread {item.thread_id!r} waits for answers to interrupt(s) {item.interrupt_id}"
    assert escape(refusal) in response.content.decode()
    assert Run.objects.filter(thread_id=item.thread_id).count() == runs
    assert not AuditEvent.objects.filter(action="forked").exists()


def test_the_demos_threads_show_their_graph_and_history(alice: User) -> None:
    from beamweaver_core.management.commands.demo import DEMO_REQUESTS

    service.start_run(
        "ops_assistant", {"messages": [{"role": "user", "content": DEMO_REQUESTS[0]}]}
    )
    run = run_next()
    assert run.status == "interrupted", run.error

    html = client_for(alice).get(f"/threads/{run.thread_id}/").content.decode()

    assert re.search(r'<g class="node[^"]*" data-node="model">', html)
    assert re.search(r'<g class="node[^"]*" data-node="tools">', html)
    assert re.search(r'class="edge edge-conditional[^"]*"', html)
    assert "is-paused" in html
    timeline = html[html.index('id="thread-history"') :]
    assert "Input" in timeline and "Ran model" in timeline
    assert "appended" in timeline and "assistant:" in timeline


def test_a_fork_cannot_write_a_redacted_secret_back_as_its_placeholder() -> None:
    """The form shows values redacted; an edit next to a secret would have written the
    secret as the text "[redacted]"."""
    from beamweaver_core.redaction import REDACTED, redact
    from reviews.forking import FORK, ForkForm

    current = redact({"settings": {"api_key": "sk-live-123", "limit": 1}, "log": [0]})
    assert current["settings"]["api_key"] == REDACTED
    edited = json.dumps({"api_key": REDACTED, "limit": 2})
    form = ForkForm(
        {"checkpoint_id": "c1", "mode": FORK, "value_0": "[0]", "value_1": edited},
        keys=["log", "settings"],
        nodes=["s0"],
        current=current,
    )
    assert not form.is_valid()
    assert "cannot be edited here" in str(form.errors["value_1"])

    untouched = ForkForm(
        {"checkpoint_id": "c1", "mode": FORK, "value_0": "[0, 9]", "value_1": ""},
        keys=["log", "settings"],
        nodes=["s0"],
        current=current,
    )
    assert untouched.is_valid(), untouched.errors
    assert untouched.cleaned_data["edits"] == {"log": [0, 9]}
