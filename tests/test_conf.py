"""beamweaver_core.conf: the BEAMWEAVER settings read when asked, with one default each."""

from __future__ import annotations

from django.conf import settings
from django.test import override_settings

from beamweaver_core.conf import DEFAULTS, conf
from beamweaver_core.runtime.worker import WorkerSettings


def test_a_setting_is_read_when_asked_so_an_override_is_seen() -> None:
    with override_settings(BEAMWEAVER={**settings.BEAMWEAVER, "LEASE_SECONDS": "12.5"}):
        assert conf.lease_seconds == 12.5
        assert WorkerSettings.from_django().lease_seconds == 12.5


def test_a_host_project_without_the_key_gets_the_one_default() -> None:
    with override_settings(BEAMWEAVER={"GRAPHS": {}}):
        assert conf.lease_seconds == DEFAULTS["LEASE_SECONDS"] == 30.0
        assert conf.websocket_max_message == 64 * 1024
        assert conf.base_url == "http://localhost:8000"
        assert conf.lg_poll_seconds(live=False) == 0.5
        assert conf.lg_stream_max_bytes == 4 * 1024 * 1024
        assert conf.send_stall_seconds == 60.0
        assert conf.review_sweep_seconds == 10.0
        assert (conf.notify_max_attempts, conf.notify_backoff_seconds) == (8, 30.0)
        assert conf.graphs == {} and conf.mcp_servers == {}
        assert (conf.metrics_access, conf.metrics_token) == ("private", "")


def test_the_modules_that_read_a_setting_read_it_through_conf() -> None:
    from beamweaver_core.observability import access
    from beamweaver_core.runtime import registry
    from reviews import sweeper
    from reviews.notifications import outbox

    override = {
        "GRAPHS": {"only": "module.path:attribute"},
        "METRICS_ACCESS": "token",
        "REVIEW_SWEEP_SECONDS": 3,
        "NOTIFY_BACKOFF_SECONDS": 2,
    }
    with override_settings(BEAMWEAVER=override):
        assert registry.registered_names() == ["only"]
        assert access.mode() == "token"
        assert sweeper.interval() == 3.0
        assert outbox.backoff(2).total_seconds() == 4.0
