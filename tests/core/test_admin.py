"""The admin: threads, runs and storage rows for staff, readable and redacted."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beamweaver_core.admin.display import pretty_json
from beamweaver_core.models import Checkpoint, CheckpointBlob, Run
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run, finish_run

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture
def paused_run() -> Run:
    service.start_run(
        "approval",
        {"amount": 5, "api_key": SECRET, "note": f"key {SECRET}"},
        thread_id="admin-thread",
    )
    claim = claim_next_run("admin-test", 30)
    assert claim is not None
    execute(claim)
    return Run.objects.get(id=claim.run_id)


@pytest.mark.parametrize(
    "model", ["thread", "run", "checkpoint", "checkpointblob", "checkpointwrite", "runevent"]
)
def test_every_list_page_loads_and_searches_by_thread_id(
    staff: Client, paused_run: Run, model: str
) -> None:
    response = staff.get(f"/admin/beamweaver_core/{model}/", {"q": "admin-thread"})
    assert response.status_code == 200
    assert "admin-thread" in response.content.decode()


def test_list_filters_by_graph_and_status(staff: Client, paused_run: Run) -> None:
    assert (
        "admin-thread"
        in staff.get(
            "/admin/beamweaver_core/run/", {"graph": "approval", "status__exact": "interrupted"}
        ).content.decode()
    )
    assert (
        "admin-thread"
        not in staff.get(
            "/admin/beamweaver_core/run/", {"status__exact": "failed"}
        ).content.decode()
    )


def test_json_is_pretty_and_secrets_are_redacted(staff: Client, paused_run: Run) -> None:
    run_page = staff.get(f"/admin/beamweaver_core/run/{paused_run.id}/change/").content.decode()
    blob = CheckpointBlob.objects.filter(thread_id="admin-thread").first()
    checkpoint = Checkpoint.objects.filter(thread_id="admin-thread").first()
    assert checkpoint is not None
    checkpoint_page = staff.get(
        f"/admin/beamweaver_core/checkpoint/{checkpoint.pk}/change/"
    ).content.decode()
    pages = [run_page, checkpoint_page]
    if blob is not None:
        pages.append(
            staff.get(f"/admin/beamweaver_core/checkpointblob/{blob.pk}/change/").content.decode()
        )
    for page in pages:
        assert SECRET not in page
    assert "[redacted]" in run_page
    assert "&quot;amount&quot;: 5" in run_page


def test_stored_text_that_is_not_json_is_shown_redacted_and_escaped() -> None:
    shown = pretty_json(f"<b>not JSON</b> {SECRET}")
    assert SECRET not in shown
    assert "[redacted]" in shown
    assert "&lt;b&gt;" in shown


def test_storage_rows_are_read_only(staff: Client, paused_run: Run) -> None:
    checkpoint = Checkpoint.objects.filter(thread_id="admin-thread").first()
    assert checkpoint is not None
    assert staff.get("/admin/beamweaver_core/checkpoint/add/").status_code == 403
    response = staff.post(
        f"/admin/beamweaver_core/checkpoint/{checkpoint.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 403
    assert Checkpoint.objects.filter(pk=checkpoint.pk).exists()


def test_cancel_and_requeue_actions(staff: Client, paused_run: Run) -> None:
    response = staff.post(
        "/admin/beamweaver_core/run/",
        {"action": "cancel_runs", "_selected_action": [str(paused_run.id)]},
        follow=True,
    )
    assert "1 run(s) cancelled." in response.content.decode()
    assert Run.objects.get(id=paused_run.id).status == "cancelled"

    service.start_run("approval", {}, thread_id="admin-failed")
    claim = claim_next_run("admin-test", 30)
    assert claim is not None
    finish_run(claim, "failed", error="boom")
    response = staff.post(
        "/admin/beamweaver_core/run/",
        {"action": "requeue_runs", "_selected_action": [str(claim.run_id)]},
        follow=True,
    )
    assert "1 run(s) re-queued." in response.content.decode()
    assert Run.objects.get(id=claim.run_id).status == "queued"

    response = staff.post(
        "/admin/beamweaver_core/run/",
        {"action": "requeue_runs", "_selected_action": [str(paused_run.id)]},
        follow=True,
    )
    assert "only failed runs can be re-queued" in response.content.decode()


def test_the_admin_is_for_staff_only(paused_run: Any) -> None:
    user = User.objects.create_user("reviewer", password="pw-reviewer-123")
    client = Client()
    client.force_login(user)
    response = client.get("/admin/beamweaver_core/run/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_checkpoints_messages_are_redacted_in_its_values_and_pending_writes(
    staff: Client,
) -> None:
    """Engine objects in a checkpoint (messages, their tool calls) are shown as data, so
    the redaction policy reaches inside them: a credential in a message's text and a
    secret-named tool argument are withheld, in the decoded values and in the pending
    writes of a paused step's finished sibling."""
    import operator

    from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
    from beamweaver_core.graph import START, Graph, interrupt
    from beamweaver_core.messages import Message, ToolCall

    plain = "plainvalue0123456789"  # not credential-shaped text: withheld for its key only
    call = ToolCall(id="call-1", name="deploy", args={"api_key": plain, "region": "eu"})
    graph = (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("say", lambda s: {"messages": [Message.assistant(f"key {SECRET}", [call])]})
        .add_node("note", lambda s: {"messages": [Message.user(f"again {SECRET}")]})
        .add_node("ask", lambda s: {"answer": interrupt("Deploy?")})
        .add_edge(START, "say")
        .add_edge("say", "note")
        .add_edge("say", "ask")
        .compile(checkpointer=PostgresCheckpointer())
    )
    config = {"configurable": {"thread_id": "admin-messages"}}
    graph.invoke({"messages": []}, config)
    checkpoint = Checkpoint.objects.filter(thread_id="admin-messages").order_by("-seq").first()
    assert checkpoint is not None
    page = staff.get(f"/admin/beamweaver_core/checkpoint/{checkpoint.pk}/change/")
    shown = page.content.decode()
    assert "deploy" in shown and "again" in shown  # the message and the sibling's write
    assert SECRET not in shown
    assert plain not in shown
