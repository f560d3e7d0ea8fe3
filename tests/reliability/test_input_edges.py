"""Input edges (issue 13, finding 13; reliability.md, hostile corpus: input edges): a
web decision whose form bytes are not UTF-8, spreadsheet formulas hidden behind leading
blanks in the audit export, and refused attempts on hidden items in the audit log."""

from __future__ import annotations

import csv
import io
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from reviews.models import AuditEvent, Decision, ReviewItem
from reviews.permissions import visible_audit
from tests.reviews.conftest import client_for, make_manager, make_reviewer, pause, use_policies

pytestmark = pytest.mark.django_db


def _form(item: ReviewItem, extra: bytes) -> bytes:
    fields = f"interrupt_id={item.interrupt_id}&digest={item.digest}&client_decision_id={uuid.uuid4().hex}"
    return fields.encode() + b"&" + extra


def test_a_web_decision_with_invalid_utf8_is_refused_like_the_api(alice: User) -> None:
    """Django decodes form bytes with errors="replace": b"\\xff" became U+FFFD and the
    reject message the model read was not what was sent."""
    item = pause()

    response = client_for(alice).post(
        f"/items/{item.pk}/decide/",
        data=_form(item, b"d0-type=reject&d0-message=refund+%FF%FE+now"),
        content_type="application/x-www-form-urlencoded",
    )

    item.refresh_from_db()
    assert response.status_code == 422
    assert "not valid UTF-8" in response.content.decode()
    assert item.status == "pending" and not Decision.objects.filter(item=item).exists()
    refused = AuditEvent.objects.get(item=item, action="refused")
    assert refused.outcome == "invalid" and "not valid UTF-8" in refused.message


def test_a_web_decision_in_valid_utf8_still_goes_through(alice: User) -> None:
    item = pause()

    response = client_for(alice).post(
        f"/items/{item.pk}/decide/",
        data=_form(item, "d0-type=reject&d0-message=Nein, Grüße ✓".encode()),
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 302
    assert Decision.objects.get(item=item).answer["decisions"][0]["message"] == "Nein, Grüße ✓"


def test_a_batch_with_invalid_utf8_decides_nothing(alice: User) -> None:
    item = pause()

    response = client_for(alice).post(
        "/batch/",
        data=f"items={item.pk}:{item.digest}&action=reject&message=".encode() + b"%C3%28",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 422
    assert "not valid UTF-8" in response.content.decode()
    assert not Decision.objects.filter(item=item).exists()


FORMULAS = [
    '\n=HYPERLINK("http://evil.example/","x")',
    " =1+1",
    "\t=1+1",
    "\u3000=1+1",
    "\u200b=1+1",
    "\uff1d1+1",  # fullwidth equals sign
    "\ufe66cmd",  # small equals sign
    "\uff0b1",  # fullwidth plus
    "\uff20SUM(A1)",  # fullwidth commercial at
    "\r\n-2+3",
    "@SUM(A1:A9)",
]


def test_formula_triggers_behind_blanks_are_neutralised_in_the_csv(alice: User) -> None:
    for text in FORMULAS:
        AuditEvent.objects.create(action="refused", actor=alice, actor_name="alice", message=text)
    AuditEvent.objects.create(
        action="refused", actor=alice, actor_name="alice", message="plain 1+1"
    )

    response = client_for(alice).get("/audit/?format=csv")

    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    cells = {row["message"].lstrip("'"): row["message"] for row in rows}
    assert {text: cells[text].startswith("'") for text in FORMULAS} == dict.fromkeys(FORMULAS, True)
    assert cells["plain 1+1"] == "plain 1+1"


@pytest.fixture
def finance_item(settings: Any) -> ReviewItem:
    use_policies(settings, {"name": "finance", "groups": ["finance"]})
    return pause()


def test_an_attempt_on_a_hidden_item_is_audited_for_those_who_may_see_it(
    finance_item: ReviewItem,
) -> None:
    finance = Group.objects.get(name="finance")
    carol = make_reviewer("carol")
    carol.groups.add(finance)
    mallory, bob, boss = make_reviewer("mallory"), make_reviewer("bob"), make_manager("boss")

    response = client_for(mallory).post(
        f"/items/{finance_item.pk}/decide/",
        {"d0-type": "approve", "digest": "0" * 64, "client_decision_id": "probe-1"},
    )

    assert response.status_code == 404
    attempt = AuditEvent.objects.get(client_decision_id="probe-1")
    assert attempt.item_id == finance_item.pk and attempt.outcome == "not_found"
    readers = {
        user.username: visible_audit(user, AuditEvent.objects.filter(pk=attempt.pk)).exists()
        for user in (mallory, bob, carol, boss)
    }
    assert readers == {"mallory": False, "bob": False, "carol": True, "boss": True}
    assert "probe-1" not in client_for(bob).get("/audit/?format=csv").getvalue().decode()
    assert "probe-1" in client_for(boss).get("/audit/?format=csv").getvalue().decode()


def test_an_attempt_on_a_missing_item_is_read_by_its_author_and_managers(alice: User) -> None:
    bob, boss = make_reviewer("bob"), make_manager("boss")

    assert (
        client_for(alice)
        .post("/items/987654/decide/", {"client_decision_id": "miss-1"})
        .status_code
        == 404
    )

    attempt = AuditEvent.objects.get(client_decision_id="miss-1")
    assert attempt.item_id is None
    readers = {
        user.username: visible_audit(user, AuditEvent.objects.filter(pk=attempt.pk)).exists()
        for user in (alice, bob, boss)
    }
    assert readers == {"alice": True, "bob": False, "boss": True}


@pytest.fixture
def alice(db: Any) -> User:
    return make_reviewer("alice")


def test_a_multipart_decision_with_invalid_utf8_is_refused(alice: User) -> None:
    item = pause()
    boundary = "bwboundary"
    parts = {
        "interrupt_id": item.interrupt_id.encode(),
        "digest": item.digest.encode(),
        "client_decision_id": b"multi-1",
        "d0-type": b"reject",
        "d0-message": b"stop \xff\xfe now",
    }
    body = (
        b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value
            + b"\r\n"
            for name, value in parts.items()
        )
        + f"--{boundary}--\r\n".encode()
    )

    response = client_for(alice, enforce_csrf_checks=False).post(
        f"/items/{item.pk}/decide/",
        data=body,
        content_type=f"multipart/form-data; boundary={boundary}",
    )

    assert response.status_code == 422
    assert not Decision.objects.filter(item=item).exists()


# Thread ids (finding 12)

VALID_IDS = [
    "approval-1",
    "hitl-review-1",
    "4e8389c05a87494385c7fab703aa531c",  # a uuid4 hex, fixed so every collection agrees
    "da8025de-1554-4071-8e53-c90f85ab9594",
    "tenant:42.order_7",
    "x" * 128,
]
INVALID_IDS = [
    "/../../admin/",
    "..",
    ".hidden",
    "a/b",
    "a b",
    "a%2Fb",
    "\u202egpj.exe",
    "caf\u00e9",
    "x" * 129,
    "a\x00b",
    "-lead",
]


@pytest.mark.parametrize("thread_id", VALID_IDS)
def test_valid_thread_ids_start_runs(thread_id: str) -> None:
    from beamweaver_core.runtime import service

    assert service.start_run("tool_review", {}, thread_id=thread_id).thread_id == thread_id


@pytest.mark.parametrize("thread_id", INVALID_IDS)
def test_thread_ids_outside_the_rule_are_refused_where_they_enter(thread_id: str) -> None:
    from beamweaver_core.models import Thread
    from beamweaver_core.runtime import service
    from beamweaver_core.runtime.thread_ids import InvalidThreadIdError

    with pytest.raises(InvalidThreadIdError, match="is not valid: use 1 to 128 ASCII letters"):
        service.start_run("tool_review", {}, thread_id=thread_id)
    assert not Thread.objects.exists()


def test_run_graph_refuses_a_thread_id_that_climbs_out_of_its_path() -> None:
    from django.core.management import CommandError, call_command

    from beamweaver_core.models import Thread

    with pytest.raises(CommandError, match=r"Thread id '/\.\./\.\./admin/' is not valid"):
        call_command("run_graph", "tool_review", "--input", "{}", "--thread", "/../../admin/")
    assert not Thread.objects.exists()


def _resolved(page: str, href: str) -> str:
    from urllib.parse import urljoin, urlsplit

    return urlsplit(urljoin(f"http://testserver{page}", href)).path


def test_links_to_an_old_thread_id_stay_on_its_thread_page(alice: User) -> None:
    """A thread id from before the rule (or written by the checkpointer): every link to
    it stays under /threads/ (it made /threads//../../admin//, which a browser resolves
    to /admin//) and opens that thread."""
    import re as regex

    from tests.support.legacy import unchecked_thread_ids

    with unchecked_thread_ids():
        item = pause(thread_id="/../../admin/")
    client = client_for(alice)
    pages = {f"/items/{item.pk}/": "item", "/audit/": "audit"}
    client.post(f"/items/{item.pk}/decide/", {"client_decision_id": "c-1"})  # an audit row

    for page in pages:
        html = client.get(page).content.decode()
        hrefs = regex.findall(r'href="([^"]*threads[^"]*)"', html)
        assert hrefs, page
        for href in hrefs:
            path = _resolved(page, href.replace("&amp;", "&"))
            assert path.startswith("/threads/") and "/admin" not in path, (page, href, path)
            from urllib.parse import unquote

            response = client.get(unquote(path))
            assert response.status_code == 200, (page, href)
            assert (
                'Thread <code class="thread-id">/../../admin/</code>' in response.content.decode()
            )


def test_an_rtl_override_in_a_thread_id_is_marked_in_tooltips_and_titles(alice: User) -> None:
    from tests.support.legacy import unchecked_thread_ids

    with unchecked_thread_ids():
        item = pause(thread_id="invoice-\u202egpj.exe")
    client = client_for(alice)

    inbox = client.get("/").content.decode()
    thread = client.get(
        _resolved("/", regex_href(client.get(f"/items/{item.pk}/").content.decode()))
    ).content.decode()

    assert "\u202e" not in inbox and "\u202e" not in thread
    assert 'title="invoice-[U+202E]gpj.exe"' in inbox
    assert "<title>Thread invoice-[U+202E]gpj.exe" in thread


def regex_href(html: str) -> str:
    import re as regex
    from urllib.parse import unquote

    return unquote(regex.search(r'<a href="(/threads/[^"]+)">', html).group(1))  # type: ignore[union-attr]
