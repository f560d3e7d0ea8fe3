"""Run webhooks while they are off (no signing secret or no allowed host): none is sent,
not even one a run asked for while they were on, so a run's outcome looks none up and the
workers' tick retries none."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import receivers, webhooks
from beamweaver_core.protocol.models import ProtocolRun

pytestmark = pytest.mark.django_db

ON = {
    **settings.BEAMWEAVER,
    "LG_WEBHOOK_SECRET": "run-secret",
    "LG_WEBHOOK_HOSTS": ["hooks.example"],
}


def ended_with_a_webhook(attempts: int = 0) -> Run:
    """A run that asked for a webhook (while webhooks were on) and has ended."""
    thread = Thread.objects.create(id="hooked", graph="ask")
    run = Run.objects.create(
        thread=thread,
        graph="ask",
        status=Run.Status.SUCCEEDED,
        finished_at=timezone.now() - timedelta(hours=1),
    )
    ProtocolRun.objects.create(
        run=run, assistant_id="ask", webhook="https://hooks.example/h", webhook_attempts=attempts
    )
    return run


def test_while_webhooks_are_off_a_runs_outcome_looks_up_no_webhook_and_sends_none(
    django_assert_num_queries: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = ended_with_a_webhook()
    with django_assert_num_queries(0), django_capture_on_commit_callbacks() as off:
        receivers.on_run_ended(sender=Run, run=run)
    with override_settings(BEAMWEAVER=ON), django_capture_on_commit_callbacks() as on:
        receivers.on_run_ended(sender=Run, run=run)
    assert (len(off), len(on)) == (0, 1)


def test_while_webhooks_are_off_a_failed_webhook_is_not_retried(
    django_assert_num_queries: Any,
) -> None:
    ended_with_a_webhook(attempts=1)
    with django_assert_num_queries(0):
        assert webhooks.retry_due() == 0
