"""Run webhooks under the webhook URL rule (`beamweaver_core.webhook_urls`), in-process: a
URL the rule refuses is a 422 and no run, even on a host the operator listed; one it
allows is called back. Found by review: a run's webhook could name any port of a listed
host, or a listed name or address inside the network, so an API client could make this
server POST to internal services."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import webhooks
from beamweaver_core.protocol.models import ProtocolRun
from tests.protocol.conftest import api_user, token_for
from tests.reviews.conftest import run_next

pytestmark = pytest.mark.usefixtures("protocol_graphs")

PRIVATE = (
    "is not a public address ({kind}): webhooks go to public addresses only unless "
    "BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES is set."
)


@pytest.fixture
def run_webhooks(settings: Any) -> None:
    """Run webhooks on, to hosts the operator listed (addresses inside the network too)."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "LG_WEBHOOK_SECRET": "whsec-webhook-rule",
        "LG_WEBHOOK_HOSTS": ["hooks.example", "*.hooks.example", "127.0.0.1", "localhost",
                             "10.1.2.3", "169.254.169.254"],
    }  # fmt: skip


def start(webhook: str) -> tuple[int, dict[str, Any]]:
    client = Client(HTTP_X_API_KEY=token_for(api_user("alice")))
    body = {"assistant_id": "linear", "input": {"log": []}, "webhook": webhook}
    response = client.post("/lg/runs", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


@pytest.mark.django_db
@pytest.mark.usefixtures("run_webhooks")
@pytest.mark.parametrize(
    ("url", "detail"),
    [
        (
            "https://hooks.example:6379/x",
            "Webhook port 6379 is not allowed; allowed: 80, 443 (BEAMWEAVER_WEBHOOK_PORTS).",
        ),
        ("http://127.0.0.1/x", "Webhook host '127.0.0.1' " + PRIVATE.format(kind="loopback")),
        ("http://10.1.2.3/x", "Webhook host '10.1.2.3' " + PRIVATE.format(kind="private")),
        (
            "http://169.254.169.254/latest/meta-data/",
            "Webhook host '169.254.169.254' " + PRIVATE.format(kind="link-local"),
        ),
    ],
)
def test_a_run_webhook_the_rule_refuses_is_a_422_and_no_run(url: str, detail: str) -> None:
    threads, runs = Thread.objects.count(), Run.objects.count()

    assert start(url) == (422, {"detail": detail})
    assert (Thread.objects.count(), Run.objects.count()) == (threads, runs)


@pytest.mark.django_db
@pytest.mark.usefixtures("run_webhooks")
def test_a_listed_name_is_refused_by_where_it_leads() -> None:
    status, answer = start("http://localhost/x")

    assert status == 422
    assert re.fullmatch(
        r"Webhook host 'localhost' \((127\.0\.0\.1|::1)\) "
        + re.escape(PRIVATE.format(kind="loopback")),
        answer["detail"],
    )
    assert not Run.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("run_webhooks")
def test_https_only_refuses_a_plain_http_webhook(settings: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "WEBHOOK_HTTPS_ONLY": True}

    assert start("http://hooks.example/x") == (
        422,
        {
            "detail": "A webhook URL must start with https:// on this server "
            "(BEAMWEAVER_WEBHOOK_HTTPS_ONLY)."
        },
    )


class _Hooks(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        self.received.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver(settings: Any, run_webhooks: None) -> Iterator[tuple[str, list[bytes]]]:
    """A receiver on this machine, allowed explicitly: private addresses and its port."""
    _Hooks.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hooks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "WEBHOOK_PRIVATE_ADDRESSES": True,
        "WEBHOOK_PORTS": [server.server_port],
    }
    yield f"http://127.0.0.1:{server.server_port}/hook", _Hooks.received
    server.shutdown()


@pytest.mark.django_db
def test_a_run_webhook_the_operator_allowed_is_called_back(receiver: Any) -> None:
    url, received = receiver

    status, run = start(url)
    assert status == 200 and ProtocolRun.objects.get(run_id=run["run_id"]).webhook == url
    assert run_next().status == Run.Status.SUCCEEDED

    assert webhooks.deliver(run["run_id"]) is True
    [body] = received
    assert (json.loads(body)["run_id"], json.loads(body)["status"]) == (run["run_id"], "success")


@pytest.mark.django_db
def test_a_webhook_the_rule_refuses_by_the_time_it_is_sent_is_not_sent(
    settings: Any, receiver: Any
) -> None:
    url, received = receiver
    status, run = start(url)
    assert status == 200
    assert run_next().status == Run.Status.SUCCEEDED
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "WEBHOOK_PRIVATE_ADDRESSES": False}

    assert webhooks.deliver(run["run_id"]) is False

    assert received == []
    record = ProtocolRun.objects.get(run_id=run["run_id"])
    assert (record.webhook_attempts, record.webhook_sent_at) == (1, None)
