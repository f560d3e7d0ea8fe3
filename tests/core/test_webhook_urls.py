"""The webhook URL rule (`beamweaver_core.webhook_urls`) and the system checks of its
settings. The protocol's and the review inbox's own tests show both kinds of webhook under
it (`tests/protocol/test_webhooks.py`, `tests/reviews/test_notifications.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core import checks
from beamweaver_core.webhook_urls import (
    MAX_URL_CHARS,
    WebhookUrlError,
    check_destination,
    check_url,
)

NOT_PUBLIC = (
    "is not a public address ({kind}): webhooks go to public addresses only unless "
    "BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES is set."
)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://hooks.example/a b", "A webhook URL must be ASCII with no spaces or control characters: percent-encode its path and write an international host name in its xn-- form."),
        ("https://hooks.example/a\r\nX-Evil: 1", "A webhook URL must be ASCII with no spaces or control characters: percent-encode its path and write an international host name in its xn-- form."),
        ("https://bücher.example/hook", "A webhook URL must be ASCII with no spaces or control characters: percent-encode its path and write an international host name in its xn-- form."),
        ("https://xn--bcher-kva.example/h%20ook", None),
        ("ftp://hooks.example/x", "A webhook URL must start with http:// or https://."),
        ("file:///etc/passwd", "A webhook URL must start with http:// or https://."),
        ("https:///x", "A webhook URL needs a host, and no user name or password."),
        ("https://me:pw@hooks.example/", "A webhook URL needs a host, and no user name or password."),
        ("https://hooks.example:99999/", "A webhook URL's port must be a number from 1 to 65535."),
        ("https://hooks.example:8443/", "Webhook port 8443 is not allowed; allowed: 80, 443 (BEAMWEAVER_WEBHOOK_PORTS)."),
        ("http://hooks.example:443/", None),
        ("http://127.0.0.1/", "Webhook host '127.0.0.1' " + NOT_PUBLIC.format(kind="loopback")),
        ("http://127.1/", "Webhook host '127.1' (127.0.0.1) " + NOT_PUBLIC.format(kind="loopback")),
        ("http://2130706433/", "Webhook host '2130706433' (127.0.0.1) " + NOT_PUBLIC.format(kind="loopback")),
        ("http://0x7f.0.0.1/", "Webhook host '0x7f.0.0.1' (127.0.0.1) " + NOT_PUBLIC.format(kind="loopback")),
        ("http://[::1]/", "Webhook host '::1' " + NOT_PUBLIC.format(kind="loopback")),
        ("http://[::ffff:10.0.0.1]/", "Webhook host '::ffff:10.0.0.1' (10.0.0.1) " + NOT_PUBLIC.format(kind="private")),
        ("http://[64:ff9b::a00:1]/", "Webhook host '64:ff9b::a00:1' (10.0.0.1) " + NOT_PUBLIC.format(kind="private")),
        ("http://[2002:7f00:1::]/", "Webhook host '2002:7f00:1::' (127.0.0.1) " + NOT_PUBLIC.format(kind="loopback")),
        ("http://[64:ff9b:1::a00:1]/", "Webhook host '64:ff9b:1::a00:1' " + NOT_PUBLIC.format(kind="non-public")),
        ("https://[64:ff9b::5db8:d70e]/hook", None),
        ("http://192.168.1.20/", "Webhook host '192.168.1.20' " + NOT_PUBLIC.format(kind="private")),
        ("http://169.254.169.254/", "Webhook host '169.254.169.254' " + NOT_PUBLIC.format(kind="link-local")),
        ("http://100.64.0.1/", "Webhook host '100.64.0.1' " + NOT_PUBLIC.format(kind="non-public")),
        ("http://0.0.0.0/", "Webhook host '0.0.0.0' " + NOT_PUBLIC.format(kind="unspecified")),
        ("http://224.0.0.1/", "Webhook host '224.0.0.1' " + NOT_PUBLIC.format(kind="multicast")),
        ("https://93.184.215.14/hook", None),
        ("https://[2606:4700::1111]/hook", None),
    ],
)  # fmt: skip
def test_what_a_url_says_is_checked(url: str, message: str | None) -> None:
    if message is None:
        assert check_url(url) == url
    else:
        with pytest.raises(WebhookUrlError) as refused:
            check_url(url)
        assert str(refused.value) == message


def test_a_url_past_the_length_limit_is_refused() -> None:
    url = "https://hooks.example/" + "x" * MAX_URL_CHARS

    with pytest.raises(WebhookUrlError, match=f"at most {MAX_URL_CHARS} characters"):
        check_url(url)


def test_a_url_from_an_api_client_must_name_a_listed_host() -> None:
    hosts = ["hooks.example", "*.ops.example"]

    assert check_url("https://HOOKS.example/x", hosts=hosts) == "https://HOOKS.example/x"
    assert check_url("https://a.b.ops.example/x", hosts=hosts) == "https://a.b.ops.example/x"
    for url in ("https://ops.example/", "https://evilops.example/", "https://hooks.example.evil/"):
        with pytest.raises(WebhookUrlError) as refused:
            check_url(url, hosts=hosts)
        assert str(refused.value).endswith(
            "is not allowed; allowed: hooks.example, *.ops.example (BEAMWEAVER_LG_WEBHOOK_HOSTS)."
        )


def test_the_operator_loosens_or_tightens_the_rule_in_settings(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "WEBHOOK_PORTS": [8080],
        "WEBHOOK_PRIVATE_ADDRESSES": True,
        "WEBHOOK_HTTPS_ONLY": True,
    }

    assert check_url("https://127.0.0.1:8080/hook") == "https://127.0.0.1:8080/hook"
    check_destination("https://localhost:8080/hook")
    with pytest.raises(WebhookUrlError, match="must start with https://"):
        check_url("http://127.0.0.1:8080/hook")
    with pytest.raises(WebhookUrlError, match="Webhook port 443 is not allowed"):
        check_url("https://hooks.example/hook")


def test_a_name_is_checked_by_where_it_leads() -> None:
    assert check_url("http://localhost/hook") == "http://localhost/hook"  # a name, unresolved

    with pytest.raises(WebhookUrlError, match=r"^Webhook host 'localhost' \((127\.0\.0\.1|::1)\)"):
        check_destination("http://localhost/hook")
    check_destination("https://hooks.example/")  # does not resolve: the request would fail


@pytest.mark.parametrize(
    ("key", "value", "error_id"),
    [
        ("WEBHOOK_PORTS", [], "E060"),
        ("WEBHOOK_PORTS", ["443"], "E060"),
        ("WEBHOOK_PORTS", [0, 443], "E060"),
        ("WEBHOOK_PORTS", [True], "E060"),
        ("WEBHOOK_PRIVATE_ADDRESSES", "false", "E061"),
        ("WEBHOOK_HTTPS_ONLY", 1, "E061"),
        ("LG_WEBHOOK_HOSTS", "hooks.example", "E062"),
        ("LG_WEBHOOK_HOSTS", ["hooks.example", ""], "E062"),
    ],
)
def test_a_malformed_webhook_setting_is_a_system_check_error(
    settings: Any, key: str, value: Any, error_id: str
) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, key: value}

    assert [e.id for e in checks.check_webhook_settings(None)] == [f"beamweaver.{error_id}"]


def test_the_default_webhook_settings_pass_the_checks() -> None:
    assert checks.check_webhook_settings(None) == []
