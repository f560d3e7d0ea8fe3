"""Notifications: queued in the Postgres outbox with the change they announce, delivered by
email and signed webhooks with a deep link to the item, retried with exponential backoff,
and filtered by each reviewer's preferences."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews import checks
from reviews.claims import claim, reassign
from reviews.models import NotificationPreference, OutboxMessage
from reviews.notifications import notify, outbox
from reviews.notifications.dispatch import audience
from reviews.notifications.webhooks import sign, verify_signature
from reviews.outcomes import Code
from tests.reviews.conftest import (
    approve_as,
    client_for,
    make_manager,
    make_reviewer,
    pause,
    use_policies,
)
from tests.reviews.test_api import api_for

pytestmark = pytest.mark.django_db

SECRET = "a-long-shared-webhook-secret"


class Receiver:
    """A local webhook endpoint: records requests, answers with `status`."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.gets: list[str] = []
        self.status = 204
        self.location = ""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                self.send_response(receiver.status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.end_headers()

            def do_GET(self) -> None:
                receiver.gets.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def local_webhook(settings: Any, url: str, name: str = "ops") -> None:
    """Configure one review webhook to `url` on this machine, which the webhook URL rule
    refuses unless told: private addresses allowed, and the URL's own port."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "REVIEW_WEBHOOKS": [{"name": name, "url": url, "secret": SECRET, "events": []}],
        "WEBHOOK_PRIVATE_ADDRESSES": True,
        "WEBHOOK_PORTS": [urlsplit(url).port],
    }


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    hook = Receiver()
    local_webhook(settings, hook.url)
    yield hook
    hook.server.shutdown()


def test_a_new_item_queues_a_webhook_in_the_same_transaction(receiver: Receiver) -> None:
    item = pause()

    queued = OutboxMessage.objects.get(event="review.created")

    assert (queued.channel, queued.target, queued.status, queued.item) == (
        "webhook",
        "ops",
        "pending",
        item,
    )
    assert queued.payload["item"]["url"] == f"http://localhost:8000/items/{item.pk}/"


def test_a_webhook_describes_the_item_as_the_api_does(receiver: Receiver) -> None:
    item = pause()

    queued = OutboxMessage.objects.get(event="review.created")
    api = api_for(make_reviewer("api-reader")).get(f"/api/v1/items/{item.pk}/")

    sent = queued.payload["item"]
    assert set(sent) == {
        "id", "url", "thread_id", "graph", "kind", "tools", "status", "created_at", "due_at",
        "required_approvals", "policy_version",
    }  # fmt: skip
    assert api.status_code == 200
    assert {key: api.json()[key] for key in sent} == sent


def test_a_rolled_back_change_queues_nothing(receiver: Receiver) -> None:
    item = pause()
    OutboxMessage.objects.all().delete()

    with pytest.raises(RuntimeError), transaction.atomic():
        notify("review.reminder", item)
        raise RuntimeError("the change failed")

    assert not OutboxMessage.objects.exists()


def test_a_webhook_is_signed_over_timestamp_and_body(receiver: Receiver) -> None:
    item = pause()

    report = outbox.deliver_due()

    assert report.to_dict() == {"sent": 1, "retrying": 0, "dead": 0}
    headers, body = receiver.requests[0]
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == "BeamWeaver-Webhooks/1"
    assert headers["X-BeamWeaver-Event"] == "review.created"
    delivery = OutboxMessage.objects.get()
    assert headers["X-BeamWeaver-Delivery"] == str(delivery.pk)
    assert verify_signature(
        SECRET, headers["X-BeamWeaver-Timestamp"], body, headers["X-BeamWeaver-Signature"]
    )
    assert not verify_signature(
        "another-secret-entirely",
        headers["X-BeamWeaver-Timestamp"],
        body,
        headers["X-BeamWeaver-Signature"],
    )
    sent = json.loads(body)
    assert sent["delivery"] == delivery.pk
    assert sent["item"]["url"].endswith(f"/items/{item.pk}/")
    assert "args" not in body.decode()
    assert delivery.status == "sent" and delivery.sent_at is not None


def test_an_old_timestamp_fails_verification() -> None:
    body = b"{}"
    signature = sign(SECRET, 1_000, body)

    assert verify_signature(SECRET, "1000", body, signature, now=1_100)
    assert not verify_signature(SECRET, "1000", body, signature, now=1_000 + 301)


def test_a_failing_webhook_is_retried_with_exponential_backoff_then_given_up(
    settings: Any, receiver: Receiver
) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "NOTIFY_MAX_ATTEMPTS": 3}
    receiver.status = 500
    pause()
    now = timezone.now()

    first = outbox.deliver_due(now=now)
    message = OutboxMessage.objects.get()
    assert first.retrying == 1
    assert (message.attempts, message.next_attempt_at) == (1, now + timedelta(seconds=30))
    assert message.last_error == "HTTP 500 from ops"
    assert outbox.deliver_due(now=now + timedelta(seconds=29)).to_dict()["retrying"] == 0

    outbox.deliver_due(now=now + timedelta(seconds=30))
    message.refresh_from_db()
    assert message.next_attempt_at == now + timedelta(seconds=30 + 60)

    last = outbox.deliver_due(now=now + timedelta(seconds=90))
    message.refresh_from_db()
    assert (last.dead, message.status, message.attempts) == (1, "dead", 3)
    assert len(receiver.requests) == 3


def test_a_webhook_recovers_after_a_failure(receiver: Receiver) -> None:
    receiver.status = 503
    pause()
    now = timezone.now()
    outbox.deliver_due(now=now)

    receiver.status = 200
    report = outbox.deliver_due(now=now + timedelta(seconds=30))

    assert report.sent == 1
    assert OutboxMessage.objects.get().status == "sent"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_the_webhook_is_retried(
    receiver: Receiver, status: int
) -> None:
    inside = Receiver()  # an address inside the network, say, that the endpoint points to
    receiver.status = status
    receiver.location = f"{inside.url}?from=webhook"
    pause()

    report = outbox.deliver_due()

    inside.server.shutdown()
    assert (report.sent, report.retrying) == (0, 1)
    assert OutboxMessage.objects.get().last_error == f"HTTP {status} from ops"
    assert len(receiver.requests) == 1
    assert inside.requests == [] and inside.gets == []


def test_an_unreachable_webhook_is_retried(settings: Any) -> None:
    local_webhook(settings, "http://127.0.0.1:9/", name="down")
    pause()

    report = outbox.deliver_due()

    assert report.retrying == 1
    assert OutboxMessage.objects.get().last_error.startswith("down unreachable: ")


PRIVATE = (
    "is not a public address (loopback): webhooks go to public addresses only unless "
    "BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES is set."
)


@pytest.mark.parametrize(
    ("private", "own_port", "problem"),
    [
        (False, True, f"Webhook host '127.0.0.1' {PRIVATE}"),
        (
            True,
            False,
            "Webhook port {port} is not allowed; allowed: 80, 443 (BEAMWEAVER_WEBHOOK_PORTS).",
        ),
    ],
)
def test_a_review_webhook_the_url_rule_refuses_is_not_notified_and_fails_the_check(
    settings: Any, receiver: Receiver, private: bool, own_port: bool, problem: str
) -> None:
    port = urlsplit(receiver.url).port
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "WEBHOOK_PRIVATE_ADDRESSES": private,
        "WEBHOOK_PORTS": [port] if own_port else [80, 443],
    }

    pause()
    outbox.deliver_due()

    assert not OutboxMessage.objects.filter(channel="webhook").exists()
    assert receiver.requests == []
    [error] = checks.check_webhooks(None)
    assert (error.id, error.msg) == (
        "beamweaver.E024",
        "BEAMWEAVER['REVIEW_WEBHOOKS'][0] has a 'url' webhooks may not go to: "
        f"{problem.format(port=port)}",
    )


def test_a_queued_review_webhook_the_rule_refuses_by_the_time_it_is_sent_is_not_sent(
    settings: Any, receiver: Receiver
) -> None:
    pause()
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "WEBHOOK_PRIVATE_ADDRESSES": False}

    report = outbox.deliver_due()

    assert (report.sent, report.retrying) == (0, 1)
    assert receiver.requests == []
    assert (
        OutboxMessage.objects.get().last_error == f"ops refused: Webhook host '127.0.0.1' {PRIVATE}"
    )


def test_a_review_webhook_to_a_name_is_refused_by_where_it_leads(
    settings: Any, receiver: Receiver
) -> None:
    local_webhook(settings, receiver.url.replace("127.0.0.1", "localhost"))
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "WEBHOOK_PRIVATE_ADDRESSES": False}
    pause()

    report = outbox.deliver_due()

    assert (report.sent, report.retrying) == (0, 1)
    assert receiver.requests == []
    error = OutboxMessage.objects.get().last_error
    assert error.startswith("ops refused: Webhook host 'localhost' (") and error.endswith(PRIVATE)


def test_email_goes_to_reviewers_who_want_the_event_with_a_deep_link(settings: Any) -> None:
    use_policies(settings, {"name": "p", "assignee": "anna"})
    anna = make_reviewer("anna", email="anna@example.com")
    make_reviewer("quiet", email="quiet@example.com")
    NotificationPreference.objects.create(
        user=make_reviewer("keen", email="keen@example.com"),
        email_events=["review.created"],
    )

    item = pause()
    outbox.deliver_due()

    sent = sorted((m.to[0], m.subject) for m in mail.outbox)
    assert sent == [
        ("anna@example.com", f"[BeamWeaver] Assigned to you: item #{item.pk} send_email"),
        ("keen@example.com", f"[BeamWeaver] Review needed: item #{item.pk} send_email"),
    ]
    assert f"http://localhost:8000/items/{item.pk}/" in mail.outbox[0].body
    assert anna.email


def test_a_reviewer_who_turned_email_off_gets_none(settings: Any) -> None:
    use_policies(settings, {"name": "p", "assignee": "anna"})
    anna = make_reviewer("anna", email="anna@example.com")
    NotificationPreference.objects.create(user=anna, email_enabled=False)

    pause()

    assert not OutboxMessage.objects.filter(channel="email").exists()


def test_nobody_is_emailed_about_an_item_they_may_not_see(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    NotificationPreference.objects.create(
        user=make_reviewer("outsider", email="o@example.com"), email_events=["review.created"]
    )

    pause()

    assert not OutboxMessage.objects.filter(channel="email").exists()


def test_a_decision_is_emailed_to_whoever_requested_the_run() -> None:
    rita = make_reviewer("rita", email="rita@example.com")
    NotificationPreference.objects.create(user=rita, email_events=["review.decided"])
    item = pause(user=rita)

    approve_as(make_reviewer("dora"), item)

    decided = OutboxMessage.objects.get(event="review.decided")
    assert (decided.channel, decided.target) == ("email", "rita@example.com")


def test_whoever_decides_is_not_told_of_their_own_decision() -> None:
    """The holder who decides hears nothing of it; the requester still does. Before the
    actor was left out, dora, holding the item, was emailed about her own decision."""
    rita = make_reviewer("rita", email="rita@example.com")
    dora = make_reviewer("dora", email="dora@example.com")
    for user in (rita, dora):
        NotificationPreference.objects.create(user=user, email_events=["review.decided"])
    item = pause(user=rita)
    assert claim(item.pk, dora).code == Code.CLAIM_TAKEN

    approve_as(dora, item)

    targets = OutboxMessage.objects.filter(event="review.decided").values_list("target")
    assert list(targets) == [("rita@example.com",)]


def test_a_requester_answering_their_own_question_reads_no_reviewer() -> None:
    """An item naming only the one who decides it has no audience, and none is read."""
    rita = make_reviewer("rita", email="rita@example.com")
    NotificationPreference.objects.create(user=rita, email_events=["review.decided"])
    item = pause(user=rita)

    with CaptureQueriesContext(connection) as reads:
        assert audience("review.decided", item, actor=rita) == []

    assert reads.captured_queries == []


def test_a_manager_assigning_an_item_to_themselves_is_not_told_of_it() -> None:
    boss = make_manager("boss")
    boss.email = "boss@example.com"
    boss.save(update_fields=["email"])
    NotificationPreference.objects.create(user=boss, email_events=["review.assigned"])
    item = pause()

    assert reassign(item.pk, boss, "boss").code == Code.REASSIGNED

    assert not OutboxMessage.objects.filter(event="review.assigned").exists()


def test_a_decision_nobody_requested_held_or_was_assigned_reads_no_reviewer() -> None:
    """`review.decided` goes to the users the item names: naming none, its audience is
    known to be empty without reading the reviewers."""
    NotificationPreference.objects.create(
        user=make_reviewer("keen", email="keen@example.com"), email_events=["review.decided"]
    )
    item = pause()

    with CaptureQueriesContext(connection) as reads:
        assert audience("review.decided", item) == []

    assert reads.captured_queries == []


def test_with_no_channel_that_addresses_reviewers_none_is_read(
    receiver: Receiver, settings: Any
) -> None:
    """Webhooks go to the operator's endpoints, not to reviewers: with only them
    configured, an event reads no audience, and is queued as before."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "REVIEW_NOTIFICATION_CHANNELS": {
            "webhook": "reviews.notifications.webhooks.WebhookChannel"
        },
    }
    make_reviewer("anna", email="anna@example.com")
    item = pause()
    OutboxMessage.objects.all().delete()

    with CaptureQueriesContext(connection) as statements:
        assert notify("review.created", item) == 1

    assert [q["sql"].split()[:3] for q in statements.captured_queries] == [
        ["INSERT", "INTO", '"bw_review_outbox"']
    ]


def test_the_preferences_page_saves_a_reviewers_choices(alice: User) -> None:
    client = client_for(alice)

    page = client.get("/notifications/")
    saved = client.post(
        "/notifications/", {"email_enabled": "on", "email_events": ["review.reminder"]}
    )

    assert page.status_code == 200 and "Email me about" in page.content.decode()
    assert saved.status_code == 302
    preference = NotificationPreference.objects.get(user=alice)
    assert (preference.email_enabled, preference.email_events) == (True, ["review.reminder"])


class ChatChannel:
    """A third channel, as an operator would plug one in: it records what it sends."""

    sent: list[tuple[str, str, str]] = []

    def targets(self, event: str, item: Any, users: Any) -> list[str]:
        return [f"#reviews ({len(users)} concerned)"]

    def send(self, message: OutboxMessage) -> None:
        ChatChannel.sent.append((message.event, message.target, message.payload["item"]["url"]))


def test_a_third_channel_is_plugged_in_through_the_settings(settings: Any) -> None:
    ChatChannel.sent.clear()
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "REVIEW_NOTIFICATION_CHANNELS": {"chat": f"{__name__}.ChatChannel"},
    }
    make_reviewer("anna")

    item = pause()
    report = outbox.deliver_due()

    assert report.to_dict() == {"sent": 1, "retrying": 0, "dead": 0}
    url = f"http://localhost:8000/items/{item.pk}/"
    assert ChatChannel.sent == [("review.created", "#reviews (1 concerned)", url)]
    assert OutboxMessage.objects.get().channel == "chat"


def test_the_audience_of_an_item_costs_the_same_queries_for_one_or_many_reviewers(
    settings: Any,
) -> None:
    """Every reviewer in the audience already holds the permission: the policy decides,
    with no permission queries per reviewer (they ran in the pause's transaction)."""
    make_reviewer("first")
    item = pause()
    with CaptureQueriesContext(connection) as one:
        assert [u.username for u in audience("review.created", item)] == ["first"]
    for n in range(6):
        make_reviewer(f"more-{n}")
    with CaptureQueriesContext(connection) as seven:
        assert len(audience("review.created", item)) == 7
    assert len(seven.captured_queries) == len(one.captured_queries) <= 3
