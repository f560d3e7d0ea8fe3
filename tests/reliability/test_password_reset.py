"""The password-reset flow (issue 13, finding 7; reliability.md, hostile corpus: reset
flow). With no `EMAIL_HOST` mail went to the console backend, so every reset link was
printed where anyone reading the server's output could take over the account, and reset
requests were not limited, so anyone could flood a user with mail.

Now the reset pages answer 404 while mail would not be delivered (console, file or dummy
backend), and reset requests are limited per address and per e-mail address."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.core import mail
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from tests.reviews.conftest import make_reviewer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_counters")]

CONSOLE = "django.core.mail.backends.console.EmailBackend"
RESET_PAGES = [
    "/accounts/password_reset/",
    "/accounts/password_reset/done/",
    "/accounts/reset/done/",
]


@pytest.fixture
def carol() -> User:
    return make_reviewer("carol", email="carol@example.com")


def confirm_url(user: User) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return f"/accounts/reset/{uid}/{default_token_generator.make_token(user)}/"


def reset(email: str, address: str = "192.0.2.1") -> Any:
    return Client(REMOTE_ADDR=address).post("/accounts/password_reset/", {"email": email})


def test_no_reset_link_is_printed_while_mail_goes_to_the_console(
    settings: Any, carol: User, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.EMAIL_BACKEND = CONSOLE

    response = reset("carol@example.com")

    out = capsys.readouterr().out
    assert response.status_code == 404
    assert "/accounts/reset/" not in out and "carol" not in out
    assert "mail is not delivered" in response.content.decode()


@pytest.mark.parametrize(
    "backend",
    [
        CONSOLE,
        "django.core.mail.backends.filebased.EmailBackend",
        "django.core.mail.backends.dummy.EmailBackend",
    ],
)
def test_every_reset_page_is_unmounted_while_mail_is_not_delivered(
    settings: Any, carol: User, backend: str
) -> None:
    settings.EMAIL_BACKEND = backend
    settings.EMAIL_FILE_PATH = "/nonexistent"

    for url in [*RESET_PAGES, confirm_url(carol)]:
        assert Client().get(url).status_code == 404, url


def test_with_mail_delivered_a_reset_sends_one_link_that_works(carol: User) -> None:
    """pytest-django's locmem backend stands for SMTP: mail is delivered."""
    response = reset("carol@example.com")

    assert response.status_code == 302 and len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/accounts/reset/\S+/)", mail.outbox[0].body)
    assert link is not None
    client = Client()
    form = client.get(link.group(1), follow=True)
    assert form.status_code == 200
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a fresh passphrase 42", "new_password2": "a fresh passphrase 42"},
    )
    assert done.status_code == 302
    assert User.objects.get(pk=carol.pk).check_password("a fresh passphrase 42")


def test_one_mailbox_cannot_be_flooded_from_many_addresses(carol: User) -> None:
    statuses = [reset("carol@example.com", f"192.0.2.{i}").status_code for i in range(1, 21)]

    assert statuses[:3] == [302] * 3 and statuses[3:] == [429] * 17
    assert len(mail.outbox) == 3


def test_the_mailbox_limit_ignores_case_and_blanks(carol: User) -> None:
    for i, spelling in enumerate(["carol@example.com", " CAROL@example.com", "Carol@Example.COM "]):
        reset(spelling, f"192.0.2.{i + 1}")

    assert reset("carol@example.com", "192.0.2.99").status_code == 429
    assert len(mail.outbox) == 3


def test_one_address_cannot_request_resets_for_many_mailboxes(carol: User) -> None:
    statuses = [reset(f"user{i}@example.com").status_code for i in range(12)]
    blocked = reset("carol@example.com")

    assert statuses[:10] == [302] * 10 and statuses[10:] == [429] * 2
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) > 0
    assert mail.outbox == []  # none of those addresses has an account, carol was refused
