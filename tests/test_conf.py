"""beamweaver_core.conf: the BEAMWEAVER settings read when asked, with one default each."""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_the_review_settings_are_read_through_reviews_conf() -> None:
    from beamweaver_core import ratelimit
    from beamweaver_core.protocol import webhooks as run_webhooks
    from reviews import policies, reasons
    from reviews.conf import DEFAULTS as REVIEW_DEFAULTS
    from reviews.notifications import channels, webhooks

    hook = {"name": "ops", "url": "https://ops.example", "secret": "s" * 16, "events": []}
    override = {
        "REVIEW_POLICIES": [{"name": "refunds", "tool": "issue_refund"}],
        "REVIEW_WEBHOOKS": [hook],
        "REVIEW_NOTIFICATION_CHANNELS": {"email": "reviews.notifications.email.EmailChannel"},
        "REVIEW_REJECTION_REASONS": [{"code": "c", "label": "L", "message": "M"}],
        "RATE_DECISIONS": "7/3",
        "LG_WEBHOOK_SECRET": "run-secret",
        "LG_WEBHOOK_HOSTS": ["hooks.example"],
    }
    with override_settings(BEAMWEAVER=override):
        assert [p.name for p in policies.settings_policies()] == ["refunds"]
        assert list(webhooks.endpoints()) == ["ops"]
        assert list(channels.configured()) == ["email"]
        assert [r.code for r in reasons.rejection_reasons()] == ["c"]
        assert ratelimit.configured("RATE_DECISIONS") == ratelimit.Limit(7, 3)
        assert run_webhooks.checked_url("https://hooks.example/x") == "https://hooks.example/x"

    with override_settings(BEAMWEAVER={"GRAPHS": {}}):
        assert policies.settings_policies() == [] and webhooks.endpoints() == {}
        assert list(channels.configured()) == ["email", "webhook"]
        defaults = [r["code"] for r in REVIEW_DEFAULTS["REVIEW_REJECTION_REASONS"]]
        assert [r.code for r in reasons.rejection_reasons()] == defaults
        assert ratelimit.configured("LOGIN_LOCKOUT") == ratelimit.Limit(5, 900)
    # An empty channel mapping is the default one, as before; an empty reason list is none.
    with override_settings(
        BEAMWEAVER={"REVIEW_NOTIFICATION_CHANNELS": {}, "REVIEW_REJECTION_REASONS": []}
    ):
        assert list(channels.configured()) == ["email", "webhook"]
        assert reasons.rejection_reasons() == []


def _reads_beamweaver_settings(tree: ast.AST) -> list[int]:
    """Lines of `tree` that read `settings.BEAMWEAVER` (a write, `settings.BEAMWEAVER[k] =
    ...`, is not a read) or `getattr(settings, "BEAMWEAVER", ...)`."""
    written = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
    }
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "BEAMWEAVER"
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
            and id(node) not in written
        ):
            lines.append(node.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "BEAMWEAVER"
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_product_module_but_the_conf_modules_reads_the_settings_dict() -> None:
    root = Path(__file__).resolve().parent.parent
    allowed = {
        "beamweaver_core/conf.py",
        "reviews/conf.py",
        # Where the dict is built: the project's settings and a host project's.
        "beamweaver_core/settings.py",
        "beamweaver_core/embed/settings.py",
    }
    readers = []
    for package in ("beamweaver_core", "reviews"):
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name in allowed:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            readers += [f"{name}:{line}" for line in _reads_beamweaver_settings(tree)]
    assert readers == []


def test_the_scan_finds_a_read_and_passes_over_a_write() -> None:
    code = (
        "x = settings.BEAMWEAVER.get('A')\n"
        "settings.BEAMWEAVER['B'] = 1\n"
        "y = getattr(settings, 'BEAMWEAVER', {})\n"
    )
    assert _reads_beamweaver_settings(ast.parse(code)) == [1, 3]
