"""Secrets in tool arguments, model output, reviewer messages and errors never reach the
inbox pages, the audit log and its export, the admin or the logs (reliability.md case 43;
the log filter and error reports themselves are tested in `test_redaction.py`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from django.test import Client

from beamweaver_core.models import Checkpoint, CheckpointBlob, CheckpointWrite, Run, RunEvent
from beamweaver_core.runtime import service
from reviews.http_statuses import http_status
from reviews.models import AuditEvent, Decision, ReviewItem
from reviews.services import decide
from tests.reliability.support import pause_agent, request, run_queued
from tests.reviews.conftest import client_for, make_reviewer

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = {
    "openai": "sk-proj-Zq8xR2mT5vY7wB1nC4kD6fG9hJ0",
    "github": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws": "AKIAIOSFODNN7EXAMPLE",
}


def leaks(text: str) -> list[str]:
    return [name for name, key in KEYS.items() if key in text]


def body(response: object) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    return response.content.decode()  # type: ignore[attr-defined]


def test_secrets_are_redacted_on_every_page_in_the_export_admin_and_logs(
    effects_log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    alice = make_reviewer("alice")
    root = make_reviewer("root", is_staff=True, is_superuser=True)
    email = {
        "to": "ops@example.com",
        "subject": f"rotate {KEYS['openai']}",
        "body": f"github {KEYS['github']}\naws {KEYS['aws']}",
    }
    with caplog.at_level(logging.DEBUG):
        item = pause_agent([{"name": "send_email", "args": email}], thread_id="secrets")
        rejected = decide(
            request(
                item,
                alice,
                {"decisions": [{"type": "reject", "message": f"never send {KEYS['aws']}"}]},
            )
        )
        run_queued()
        service.start_run("explode", {}, thread_id="exploded")
        run_queued()
        reviewer, admin = client_for(alice), client_for(root)
        pages = {
            "inbox": reviewer.get("/?status=all"),
            "item": reviewer.get(f"/items/{item.pk}/"),
            "thread": reviewer.get("/threads/secrets/"),
            "failed thread": reviewer.get("/threads/exploded/"),
            "audit": reviewer.get("/audit/"),
            "audit csv": reviewer.get("/audit/?format=csv"),
        }
        objects = {
            "beamweaver_core/thread": "secrets",
            "beamweaver_core/run": Run.objects.filter(thread_id="exploded").first().pk,  # type: ignore[union-attr]
            "beamweaver_core/checkpoint": Checkpoint.objects.filter(thread_id="secrets").last().pk,  # type: ignore[union-attr]
            "beamweaver_core/checkpointblob": CheckpointBlob.objects.filter(thread_id="secrets")
            .last()
            .pk,  # type: ignore[union-attr]
            "beamweaver_core/checkpointwrite": CheckpointWrite.objects.filter(thread_id="secrets")
            .last()
            .pk,  # type: ignore[union-attr]
            "beamweaver_core/runevent": RunEvent.objects.filter(thread_id="secrets").last().pk,  # type: ignore[union-attr]
            "reviews/reviewitem": item.pk,
            "reviews/decision": Decision.objects.get(item=item).pk,
            "reviews/auditevent": AuditEvent.objects.filter(item=item).first().pk,  # type: ignore[union-attr]
        }
        for model, pk in objects.items():
            pages[f"admin {model} list"] = admin.get(f"/admin/{model}/")
            pages[f"admin {model}"] = admin.get(f"/admin/{model}/{pk}/change/")

    texts = {name: body(response) for name, response in pages.items()}
    assert http_status(rejected) == 200
    assert {name: r.status_code for name, r in pages.items() if r.status_code != 200} == {}
    assert {name: leaks(text) for name, text in texts.items() if leaks(text)} == {}
    assert leaks(caplog.text) == []
    assert "[redacted]" in texts["item"]
    assert ReviewItem.objects.get(pk=item.pk).status == "decided"


def test_a_secret_typed_by_the_reviewer_into_an_edit_is_redacted_in_the_audit_and_diff(
    effects_log: Path,
) -> None:
    """The reviewer's own edit carries a key: it runs (the tool needs it) but the audit log,
    its export and the item page show it redacted."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="typed-secret")
    edited = {"to": "ops@example.com", "subject": "key", "body": f"use {KEYS['openai']}"}
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": edited}}

    assert http_status(decide(request(item, alice, {"decisions": [edit]}))) == 200
    run_queued()
    client = client_for(alice)

    pages = ("/audit/", "/audit/?format=csv", f"/items/{item.pk}/", "/threads/typed-secret/")
    assert {page: leaks(body(client.get(page))) for page in pages} == {page: [] for page in pages}
    assert KEYS["openai"] in effects_log.read_text()  # what runs is not redacted


def test_the_login_page_does_not_echo_a_password(db: object) -> None:
    response = Client().post("/accounts/login/", {"username": "x", "password": KEYS["github"]})

    assert leaks(body(response)) == []
