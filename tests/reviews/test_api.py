"""The review API: token authentication (never session cookies), the same decisions as the
inbox, and an OpenAPI document that every real response is validated against."""

from __future__ import annotations

import json
import uuid
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern
from jsonschema import Draft202012Validator

from beamweaver_core.models import Run
from reviews.api import urls as api_urls
from reviews.api.openapi import schema
from reviews.models import ApiToken, AuditEvent, Decision, ReviewItem
from tests.reviews.conftest import (
    SECRET,
    SECRET_EMAIL,
    client_for,
    make_manager,
    make_reviewer,
    pause,
    use_policies,
)

pytestmark = pytest.mark.django_db

DOC = schema()


def conforms(response: Any, path: str, method: str) -> Any:
    """Validate `response` against the document's schema for it; return its JSON."""
    operation = DOC["paths"][path][method]
    status = str(response.status_code)
    assert status in operation["responses"], f"{method} {path} answered {status}: undocumented"
    body = json.loads(response.content)
    declared = operation["responses"][status].get("content")
    if declared is not None:
        root = {**declared["application/json"]["schema"], "components": DOC["components"]}
        Draft202012Validator(root).validate(body)
    return body


class Api:
    """A client that sends a bearer token (and nothing else)."""

    def __init__(self, raw: str) -> None:
        self.client = Client(enforce_csrf_checks=True)
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}

    def get(self, url: str, **params: Any) -> Any:
        return self.client.get(url, params, **self.auth)

    def post(self, url: str, body: Any) -> Any:
        data = body if isinstance(body, str) else json.dumps(body)
        return self.client.post(url, data, content_type="application/json", **self.auth)


def api_for(user: User) -> Api:
    return Api(ApiToken.objects.issue(user, "svc")[1])


def decision(item: ReviewItem, answer: Any, **extra: Any) -> dict[str, Any]:
    return {
        "client_decision_id": uuid.uuid4().hex,
        "digest": item.digest,
        "interrupt_id": item.interrupt_id,
        "answer": answer,
        **extra,
    }


def decide_url(item: ReviewItem) -> str:
    return f"/api/v1/items/{item.pk}/decisions/"


DECIDE = "/api/v1/items/{pk}/decisions/"
ITEM = "/api/v1/items/{pk}/"
ITEMS = "/api/v1/items/"


def test_listing_pending_items(alice: User) -> None:
    first, second = pause(), pause()
    api = api_for(alice)

    body = conforms(api.get(ITEMS), ITEMS, "get")

    assert [i["id"] for i in body["items"]] == [first.pk, second.pk]
    assert body["items"][0]["digest"] == first.digest
    assert body["items"][0]["url"] == f"http://localhost:8000/items/{first.pk}/"
    assert body["next"] is None


def test_listing_pages_with_after(alice: User) -> None:
    items = [pause() for _ in range(3)]
    api = api_for(alice)

    page1 = conforms(api.get(ITEMS, limit=2), ITEMS, "get")
    page2 = conforms(api.client.get(page1["next"], **api.auth), ITEMS, "get")

    assert [i["id"] for i in page1["items"]] == [items[0].pk, items[1].pk]
    assert [i["id"] for i in page2["items"]] == [items[2].pk]
    assert page2["next"] is None


def test_an_invalid_query_is_a_422(alice: User) -> None:
    api = api_for(alice)

    body = conforms(api.get(ITEMS, limit=500), ITEMS, "get")

    assert body["code"] == "invalid"


def test_fetching_one_item_with_its_payload(alice: User) -> None:
    item = pause()

    body = conforms(api_for(alice).get(f"/api/v1/items/{item.pk}/"), ITEM, "get")

    assert body["payload"]["action_requests"][0]["name"] == "send_email"
    assert body["decision"] is None


def test_items_outside_the_users_policy_are_404(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    outsider = make_reviewer("outsider")
    item = pause()
    api = api_for(outsider)

    assert conforms(api.get(f"/api/v1/items/{item.pk}/"), ITEM, "get")["code"] == "not_found"
    assert conforms(api.get(ITEMS), ITEMS, "get")["items"] == []
    refused = api.post(decide_url(item), decision(item, [{"type": "approve"}]))
    assert conforms(refused, DECIDE, "post")["code"] == "not_found"


def test_a_decision_through_the_api_is_the_same_as_through_the_inbox(alice: User) -> None:
    item = pause()
    api = api_for(alice)
    sent = decision(item, [{"type": "approve"}], note="Checked with the customer.")

    response = api.post(decide_url(item), sent)

    body = conforms(response, DECIDE, "post")
    assert (response.status_code, body["code"], body["replayed"]) == (200, "accepted", False)
    stored = Decision.objects.get()
    assert (stored.source, stored.user, stored.note) == ("api", alice, "Checked with the customer.")
    assert stored.answer["decisions"][0]["binding"]
    assert Run.objects.filter(kind="resume").count() == 1
    assert AuditEvent.objects.get(action="decided").source == "api"

    again = api.post(decide_url(item), sent)
    assert conforms(again, DECIDE, "post")["replayed"] is True
    other = api.post(decide_url(item), decision(item, [{"type": "reject"}]))
    assert (other.status_code, conforms(other, DECIDE, "post")["code"]) == (409, "already_decided")
    fetched = conforms(api.get(f"/api/v1/items/{item.pk}/"), ITEM, "get")
    assert fetched["decision"]["by"] == "alice" and fetched["decision"]["types"] == ["approve"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("{not json", "body"),
        ("[1, 2]", "body"),
        ({"digest": "x"}, "client_decision_id"),
    ],
)
def test_a_malformed_body_is_a_422_with_problems(alice: User, body: Any, field: str) -> None:
    item = pause()

    response = api_for(alice).post(decide_url(item), body)

    data = conforms(response, DECIDE, "post")
    assert response.status_code == 422
    assert field in [p["field"] for p in data["problems"]]


def test_an_invalid_edit_is_a_422_naming_the_field(alice: User) -> None:
    item = pause()
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": 5}}}

    response = api_for(alice).post(decide_url(item), decision(item, [edit]))

    data = conforms(response, DECIDE, "post")
    assert data["code"] == "invalid"
    assert any(p["field"].startswith("edited_action.args") for p in data["problems"])


@pytest.mark.parametrize("answer", ["yes", 0, False, {"approved": True}])
def test_a_value_for_a_breakpoint_is_a_422_and_nothing_is_consumed(
    alice: User, answer: Any
) -> None:
    """A breakpoint asks no question (issue 12, point 5, on the product's edge): a value
    sent for it would be discarded, so it is refused; null continues it."""
    item = pause("checkpointed")
    api = api_for(alice)

    response = api.post(decide_url(item), decision(item, answer))

    data = conforms(response, DECIDE, "post")
    assert (data["code"], data["problems"][0]["field"]) == ("invalid", "answer")
    assert "A breakpoint takes no answer" in data["problems"][0]["message"]
    assert not Run.objects.filter(kind="resume").exists()
    assert api.post(decide_url(item), decision(item, None)).status_code == 200
    assert Run.objects.get(kind="resume").input == {item.interrupt_id: None}


def test_a_stale_digest_is_a_409(alice: User) -> None:
    item = pause()

    response = api_for(alice).post(
        decide_url(item), {**decision(item, [{"type": "approve"}]), "digest": "0" * 64}
    )

    assert conforms(response, DECIDE, "post")["code"] == "payload_changed"


def test_self_approval_and_quorum_through_the_api(settings: Any) -> None:
    use_policies(settings, {"name": "two", "approvals": 2})
    requester, ann, ben = make_reviewer("req"), make_reviewer("ann"), make_reviewer("ben")
    item = pause(user=requester)

    own = api_for(requester).post(decide_url(item), decision(item, [{"type": "approve"}]))
    first = api_for(ann).post(decide_url(item), decision(item, [{"type": "approve"}]))
    twice = api_for(ann).post(decide_url(item), decision(item, [{"type": "approve"}]))
    second = api_for(ben).post(decide_url(item), decision(item, [{"type": "approve"}]))

    assert (own.status_code, conforms(own, DECIDE, "post")["code"]) == (403, "self_approval")
    first_body = conforms(first, DECIDE, "post")
    assert (first.status_code, first_body["item"]["approvals"]) == (202, 1)
    assert conforms(twice, DECIDE, "post")["code"] == "already_approved"
    assert (second.status_code, conforms(second, DECIDE, "post")["code"]) == (200, "accepted")


def test_a_policy_refusal_is_a_403_outcome(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    manager = make_manager("manager")
    item = pause()

    response = api_for(manager).post(decide_url(item), decision(item, [{"type": "approve"}]))

    assert (response.status_code, conforms(response, DECIDE, "post")["code"]) == (
        403,
        "not_allowed",
    )


def test_a_gone_item_is_a_410(alice: User) -> None:
    item = pause()
    ReviewItem.objects.filter(pk=item.pk).update(status="cancelled", status_reason="superseded")

    response = api_for(alice).post(decide_url(item), decision(item, [{"type": "approve"}]))

    assert (response.status_code, conforms(response, DECIDE, "post")["code"]) == (410, "gone")


def test_no_token_is_a_401_even_with_a_logged_in_session(alice: User) -> None:
    item = pause()
    browser = client_for(alice)

    listed = browser.get(ITEMS)
    posted = browser.post(
        decide_url(item),
        json.dumps(decision(item, [{"type": "approve"}])),
        content_type="application/json",
    )

    assert listed.status_code == posted.status_code == 401
    assert listed["WWW-Authenticate"] == 'Bearer realm="beamweaver"'
    conforms(listed, ITEMS, "get")
    conforms(posted, DECIDE, "post")
    assert not Decision.objects.exists()


def test_a_revoked_or_unknown_token_is_a_401(alice: User) -> None:
    token, raw = ApiToken.objects.issue(alice, "svc")
    token.revoke()

    for secret in (raw, "bw_deadbeef_nope", "garbage"):
        response = Api(secret).get(ITEMS)
        assert conforms(response, ITEMS, "get")["code"] == "unauthenticated"


def test_a_token_of_a_non_reviewer_is_a_403() -> None:
    outsider = make_reviewer("outsider", reviewer=False)

    response = api_for(outsider).get(ITEMS)

    assert (response.status_code, conforms(response, ITEMS, "get")["code"]) == (403, "forbidden")


def test_the_api_needs_no_csrf_token(alice: User) -> None:
    """The test client enforces CSRF checks; a bearer token is enough."""
    item = pause()

    response = api_for(alice).post(decide_url(item), decision(item, [{"type": "approve"}]))

    assert response.status_code == 200


def test_the_schema_is_served_and_lists_exactly_the_apis_routes() -> None:
    served = Client().get("/api/v1/openapi.json")

    assert served.status_code == 200
    document = json.loads(served.content)
    assert document["openapi"] == "3.1.0"
    documented = {path.removeprefix("/api/v1/") for path in document["paths"]}
    declared = {
        str(p.pattern).replace("<int:pk>", "{pk}").replace("<path:thread_id>", "{thread_id}")
        for p in api_urls.urlpatterns
        if isinstance(p, URLPattern)
    }
    assert documented == declared


def test_the_api_token_command_creates_lists_and_revokes(alice: User) -> None:
    out = StringIO()
    call_command("api_token", "create", "--user", "alice", "--name", "ci", "--json", stdout=out)
    created = json.loads(out.getvalue())
    assert Api(created["token"]).get(ITEMS).status_code == 200

    listed = StringIO()
    call_command("api_token", "list", "--json", stdout=listed)
    assert [t["name"] for t in json.loads(listed.getvalue())] == ["ci"]

    call_command("api_token", "revoke", created["key"], stdout=StringIO())
    assert Api(created["token"]).get(ITEMS).status_code == 401


def test_an_api_edit_sent_back_as_shown_keeps_the_withheld_secret(alice: User) -> None:
    """The API shows the arguments redacted to a reviewer who may not reveal secrets; an
    edit that sends the body back as shown stored "use [redacted] please" in place of the
    secret (the item page's form restored it, the API did not)."""
    item = pause(input=SECRET_EMAIL)
    api = api_for(alice)
    shown = api.get(ITEM.format(pk=item.pk)).json()["payload"]["action_requests"][0]["args"]
    assert shown["body"] == "use [redacted] please"
    edited = {"type": "edit", "edited_action": {"name": "send_email", "args": {**shown}}}

    changed = api.post(
        decide_url(item),
        decision(
            item,
            {
                "decisions": [
                    {
                        **edited,
                        "edited_action": {
                            "name": "send_email",
                            "args": {**shown, "body": "now [redacted] here"},
                        },
                    }
                ]
            },
        ),
    )
    assert changed.status_code == 422 and "still hold [redacted]" in changed.content.decode()
    edited["edited_action"]["args"]["subject"] = "new subject"
    kept = api.post(decide_url(item), decision(item, {"decisions": [edited]}))

    assert kept.status_code == 200, kept.content
    args = Decision.objects.get().answer["decisions"][0]["edited_action"]["args"]
    assert args == {
        "to": "ops@example.com",
        "subject": "new subject",
        "body": f"use {SECRET} please",
    }
