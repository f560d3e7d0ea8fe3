"""/healthz, /readyz and who may read /metrics, through Django's test client; the
system checks of the metrics settings."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from beamweaver_core.observability import health
from beamweaver_core.runtime import service

pytestmark = pytest.mark.django_db

TOKEN = "t" * 40


def _metrics(settings: Any, **access: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, **access}


def test_healthz_answers_without_login_or_database(django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(0):
        response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_checks_database_channel_layer_and_migrations() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ok",
        "checks": {"channel_layer": "ok", "database": "ok", "migrations": "ok"},
    }


def test_readyz_is_503_when_the_channel_layer_is_unreachable(settings: Any) -> None:
    from channels.layers import channel_layers

    # A Redis that refuses connections (nothing listens on port 1).
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }
    channel_layers.backends.clear()
    try:
        response = Client().get("/readyz")
    finally:
        channel_layers.backends.clear()
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failed"
    assert body["checks"] == {"channel_layer": "failed", "database": "ok", "migrations": "ok"}
    assert "127.0.0.1" not in response.content.decode()  # reasons go to the log only


def test_unapplied_migrations_are_not_ready(django_db_blocker: Any) -> None:
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.recorder import MigrationRecorder

    health._migrated.clear()
    # The app's latest migration (a leaf: un-applying an earlier one plans nothing).
    (latest,) = (
        name
        for app, name in MigrationLoader(connection).graph.leaf_nodes()
        if app == "beamweaver_core"
    )
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.get(app="beamweaver_core", name=latest).delete()
    try:
        problem = health.migrations_problem()
    finally:
        recorder.record_applied("beamweaver_core", latest)
    assert problem is not None and f"beamweaver_core.{latest}" in problem and "migrate" in problem
    assert health.migrations_problem() is None


def test_metrics_private_mode_serves_direct_private_clients_only(settings: Any) -> None:
    _metrics(settings, METRICS_ACCESS="private")
    service.start_run("approval", {})
    response = Client(REMOTE_ADDR="10.1.2.3").get("/metrics")
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    queued = [s for s in families["beamweaver_queue_depth"].samples]
    assert [(s.labels, s.value) for s in queued] == [({"graph": "approval"}, 1.0)]
    assert families["beamweaver_database_up"].samples[0].value == 1.0

    public = Client(REMOTE_ADDR="8.8.8.8").get("/metrics")
    assert public.status_code == 403 and b"private addresses" in public.content
    proxied = Client(REMOTE_ADDR="127.0.0.1").get("/metrics", HTTP_X_FORWARDED_FOR="10.0.0.1")
    assert proxied.status_code == 403 and b"proxy" in proxied.content


def test_metrics_token_mode(settings: Any) -> None:
    _metrics(settings, METRICS_ACCESS="token", METRICS_TOKEN=TOKEN)
    client = Client(REMOTE_ADDR="8.8.8.8")
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {'x' * 40}").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    ok = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert ok.status_code == 200 and b"beamweaver_database_up 1.0" in ok.content


def test_metrics_off(settings: Any) -> None:
    _metrics(settings, METRICS_ACCESS="off")
    assert Client().get("/metrics").status_code == 404


@pytest.mark.parametrize(
    ("access", "error"),
    [
        ({"METRICS_ACCESS": "public"}, "beamweaver.E050"),
        ({"METRICS_ACCESS": "token", "METRICS_TOKEN": ""}, "beamweaver.E051"),
        ({"METRICS_ACCESS": "token", "METRICS_TOKEN": "short"}, "beamweaver.E051"),
        ({"TRACE_TOOL_ARGUMENTS": "false"}, "beamweaver.E052"),
        ({"METRICS_ACCESS": "token", "METRICS_TOKEN": TOKEN}, None),
        ({"METRICS_ACCESS": "private"}, None),
    ],
)
def test_system_checks_refuse_bad_operations_settings(
    settings: Any, access: dict[str, Any], error: str | None
) -> None:
    _metrics(settings, **access)
    ids = {m.id for m in checks.run_checks() if m.id and m.id.startswith("beamweaver.E05")}
    assert ids == ({error} if error else set())
