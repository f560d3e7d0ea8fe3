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
