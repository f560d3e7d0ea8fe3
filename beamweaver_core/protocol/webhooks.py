"""Run webhooks: when a run started with `webhook=URL` ends (or pauses), the run as JSON,
with its thread's values, is POSTed to the URL as the review webhooks are
(`beamweaver_core.webhook_requests`), signed with `LG_WEBHOOK_SECRET`; its own headers are
the event, `run.<status>`, and the delivery id, the run id and its status.

The URL comes from an API client, so it is checked when the run is created, and again
before each attempt, against the webhook URL rule (`beamweaver_core.webhook_urls`: ports,
public addresses, and a host listed in `LG_WEBHOOK_HOSTS`); a URL it refuses is a 422 and
no run. With no host listed or no secret set, webhooks are off: refused (422) rather than
sent unsigned or anywhere, and none is sent, not even one a run asked for while they were
on. Redirects are not followed (`beamweaver_core.webhook_requests`).

Delivery is attempted when the run's outcome is committed, and retried by the workers'
periodic tick (`MAX_ATTEMPTS` in all, the first ones quickly): at least once, receivers
dedupe on `X-BeamWeaver-Delivery`.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta
from typing import Any

from django.db import close_old_connections, transaction
from django.utils import timezone

from beamweaver_core import webhook_urls
from beamweaver_core.conf import conf
from beamweaver_core.protocol import representations
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.protocol.outcome import result
from beamweaver_core.webhook_requests import post

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
RETRY_AFTER = timedelta(seconds=30)


def _conf() -> tuple[str, list[str]]:
    return conf.lg_webhook_secret, conf.lg_webhook_hosts


def enabled() -> bool:
    """Whether run webhooks are on: a signing secret and at least one allowed host."""
    secret, hosts = _conf()
    return bool(secret and hosts)


def checked_url(url: str) -> str:
    """`url` if runs may call it back; 422 saying what to change otherwise."""
    if not enabled():
        raise ProtocolError(
            422,
            "Run webhooks are off on this server: set BEAMWEAVER_LG_WEBHOOK_SECRET (the "
            "signing secret) and BEAMWEAVER_LG_WEBHOOK_HOSTS (the hosts webhooks may call).",
        )
    _, hosts = _conf()
    try:
        webhook_urls.check_url(url, hosts=hosts)
        webhook_urls.check_destination(url)
    except webhook_urls.WebhookUrlError as exc:
        raise ProtocolError(422, str(exc)) from None
    return url


def payload(record: ProtocolRun) -> dict[str, Any]:
    """The webhook body: the run, its status, the thread's values (and its error)."""
    run = record.run
    body = representations.run(run, record)
    answer = result(run)
    body["values"] = None if "__error__" in answer else answer
    if "__error__" in answer:
        body["error"] = answer["__error__"]
    body["run_started_at"] = representations.time(run.started_at)
    body["run_ended_at"] = representations.time(run.finished_at)
    body["webhook_sent_at"] = timezone.now().isoformat()
    return body


def deliver(run_id: Any) -> bool:
    """Send the run's webhook once if it is still due; whether it was delivered. The
    attempt is counted first (in its own short transaction), then the request is sent
    outside any transaction."""
    with transaction.atomic():
        record = (
            ProtocolRun.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("run")
            .filter(run_id=run_id, webhook_sent_at__isnull=True, webhook_attempts__lt=MAX_ATTEMPTS)
            .exclude(webhook="")
            .first()
        )
        if record is None:
            return False
        record.webhook_attempts += 1
        record.save(update_fields=["webhook_attempts"])
    body = json.dumps(payload(record), ensure_ascii=False, default=str).encode()
    secret, hosts = _conf()
    status = record.run.status
    try:
        answer = post(
            record.webhook,
            body,
            event=f"run.{status}",
            delivery=f"{record.run_id}:{status}",
            secret=secret,
            hosts=hosts,
        )
        ok = 200 <= answer < 300
    except (OSError, webhook_urls.WebhookUrlError) as exc:
        logger.warning("Webhook of run %s failed: %s", record.run_id, exc)
        ok = False
    if ok:
        ProtocolRun.objects.filter(pk=record.pk).update(webhook_sent_at=timezone.now())
    return ok


def deliver_soon(run_id: Any) -> None:
    """Deliver from a thread of its own (after the run's outcome is committed)."""

    def send() -> None:
        try:
            deliver(run_id)
        except Exception:
            logger.exception("Webhook of run %s could not be sent", run_id)
        finally:
            close_old_connections()

    threading.Thread(target=send, name=f"beamweaver-webhook-{run_id}", daemon=True).start()


def retry_due() -> int:
    """Send again, from threads of their own, the webhooks whose earlier attempts failed,
    each after `RETRY_AFTER` doubled per attempt since its run ended (from the workers'
    tick, which must stay quick); how many were started. None while webhooks are off."""
    if not enabled():
        return 0
    now = timezone.now()
    failed = (
        ProtocolRun.objects.filter(
            webhook_sent_at__isnull=True, webhook_attempts__gt=0, webhook_attempts__lt=MAX_ATTEMPTS
        )
        .exclude(webhook="")
        .values_list("run_id", "webhook_attempts", "run__finished_at")[:100]
    )
    due = [
        run_id
        for run_id, attempts, ended in failed
        if ended is not None and now - ended >= RETRY_AFTER * 2 ** (attempts - 1)
    ]
    for run_id in due:
        deliver_soon(run_id)
    return len(due)


__all__ = [
    "MAX_ATTEMPTS",
    "checked_url",
    "deliver",
    "deliver_soon",
    "enabled",
    "payload",
    "retry_due",
]
