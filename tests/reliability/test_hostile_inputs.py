"""Hostile inputs (reliability.md cases 28 to 31): schema-violating edits generated from
the tool's schema, payload bombs, deep nesting and huge numbers, and values Postgres or
JSON cannot carry, on every decision surface: the decision service, the item page (raw
JSON edit and plain answers), the `resume` command and the JSON API. The rule: a refusal
(413 or 422 with a message), never a 500, the item still pending, nothing executed."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from beamweaver_core.runtime import service
from bench.hostile.agents import EMAIL_SCHEMA, agent_input
from reviews.http_statuses import http_status
from reviews.models import ApiToken, Decision, ReviewItem
from reviews.services import DecisionOutcome, decide
from tests.reliability.support import pause, pause_agent, request, run_queued
from tests.reviews.conftest import client_for, make_reviewer

pytestmark = pytest.mark.django_db

EXAMPLES = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def object_from_schema(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects valid for a flat object schema, each property drawn by
    `hypothesis_jsonschema.from_schema`. (Its own object strategy fails with this
    Hypothesis version: `'many' object has no attribute 'more'`.)"""
    properties = {name: from_schema(sub) for name, sub in schema["properties"].items()}
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {k: v for k, v in properties.items() if k in required},
        optional={k: v for k, v in properties.items() if k not in required},
    )


VALID_EMAIL = object_from_schema(EMAIL_SCHEMA)


def storable(value: Any) -> bool:
    text = json.dumps(value)
    return "\\u0000" not in text and not re.search(r"\\ud[89a-f]", text)


def slug(name: str) -> str:
    """`name` as a valid thread id part."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def edit(args: Any) -> dict[str, Any]:
    return {"decisions": [{"type": "edit", "edited_action": {"name": "send_email", "args": args}}]}


def attempt(item: ReviewItem, user: User, answer: Any) -> DecisionOutcome:
    """Decide inside a savepoint that is rolled back: the item stays pending."""
    with transaction.atomic():
        outcome = decide(request(item, user, answer))
        transaction.set_rollback(True)
    return outcome


def reviewer_and_item() -> tuple[User, ReviewItem]:
    user = User.objects.filter(username="alice").first() or make_reviewer("alice")
    item = ReviewItem.objects.filter(thread_id="hostile").first() or pause_agent(
        thread_id="hostile"
    )
    return user, item


@EXAMPLES
@given(args=VALID_EMAIL.filter(storable))
def test_every_edit_the_schema_allows_is_accepted(args: dict[str, Any]) -> None:
    """Case 28, the control: generated valid arguments are accepted as an edit."""
    user, item = reviewer_and_item()

    outcome = attempt(item, user, edit(args))

    assert http_status(outcome) == 200, outcome.problems


def break_schema(args: dict[str, Any], how: str, junk: Any) -> Any:
    broken = dict(args)
    if how == "wrong type":
        broken["to"] = junk
    elif how == "missing required":
        broken.pop("subject")
    elif how == "extra field":
        broken["bcc"] = "everyone@example.com"
    elif how == "too long":
        broken["subject"] = "s" * 201
    elif how == "out of range":
        broken["priority"] = junk
    else:
        return junk
    return broken


JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
OUT_OF_RANGE = st.one_of(
    st.integers(max_value=0),
    st.integers(min_value=6),
    # Not 2.0, 3.0 or 4.0: JSON Schema counts a float with no fraction as an integer, so
    # those are in range (a CI find: 2.0 was accepted, rightly, and the test expected 422).
    st.floats(1.1, 4.9).filter(lambda x: not x.is_integer()),
    st.text(max_size=3),
)


@EXAMPLES
@given(
    args=VALID_EMAIL.filter(storable),
    how=st.sampled_from(
        [
            "wrong type",
            "missing required",
            "extra field",
            "too long",
            "out of range",
            "not an object",
        ]
    ),
    junk=JUNK,
    number=OUT_OF_RANGE,
)
# CI's find: a NUL in a field came back as the answer's problem, not the field's.
@example(args={"to": "", "subject": "", "body": ""}, how="out of range", junk=None, number="\x00")
def test_every_edit_that_breaks_the_schema_is_refused_with_field_errors(
    args: dict[str, Any], how: str, junk: Any, number: Any
) -> None:
    """Case 28: wrong types, missing required fields, extra fields, strings over
    maxLength, numbers out of range, args that are not an object: 422 with field-level
    problems; the item stays pending."""
    user, item = reviewer_and_item()
    if how == "wrong type" and isinstance(junk, str):
        junk = None
    if how == "not an object" and isinstance(junk, dict):
        junk = [junk]
    broken = break_schema(args, how, number if how == "out of range" else junk)

    outcome = attempt(item, user, edit(broken))

    assert http_status(outcome) == 422, (how, broken)
    assert all(p["field"].startswith("edited_action") for p in outcome.problems), outcome.problems
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


def test_field_errors_quoting_hostile_text_are_escaped(alice: User) -> None:
    """Case 28: a refused edit whose error message quotes the reviewer's text shows it
    escaped."""
    item = pause_agent(thread_id="escaped-errors")
    client = client_for(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', page))
    hostile = {"to": "<img src=x onerror=alert(1)>", "subject": 5, "body": "b", "<script>": 1}

    response = client.post(
        f"/items/{item.pk}/decide/",
        {**fields, "d0-type": "edit", "d0-mode": "json", "d0-json": json.dumps(hostile)},
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert "<img src=x" not in html and "<script>:" not in html
    assert "&lt;script&gt;" in html


BOMBS = {
    "deep nesting": "[" * 1000 + "]" * 1000,
    "deep objects": '{"a":' * 1000 + "1" + "}" * 1000,
    "5,000-digit integer": "9" * 5000,
    "1e400": "1e400",
    "-1e400": "-1e400",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "NUL escape": '"a\\u0000b"',
    "lone surrogate escape": '"a\\ud800b"',
    "100,000 elements": "[" + ",".join(["0"] * 100_000) + "]",
    "1 MB string": json.dumps("x" * 1_000_000),
}


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_hostile_json_edit_through_the_page_is_refused_not_a_500(bomb: str, alice: User) -> None:
    """Cases 29 to 31 through the item page's raw JSON edit (as the value of `body`)."""
    item = pause_agent(thread_id=f"page-{slug(bomb)}")
    client = client_for(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', page))
    text = '{"to": "a@b", "subject": "s", "body": ' + BOMBS[bomb] + "}"

    response = client.post(
        f"/items/{item.pk}/decide/",
        {**fields, "d0-type": "edit", "d0-mode": "json", "d0-json": text},
    )

    assert response.status_code in (413, 422)
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_hostile_json_answer_to_a_question_is_refused_not_a_500(bomb: str, alice: User) -> None:
    """The same bombs as the answer to a plain `interrupt()` question, by page and by
    the `resume` command."""
    item = pause("approval", {"amount": 5}, thread_id=f"question-{slug(bomb)}")
    client = client_for(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', page))

    response = client.post(
        f"/items/{item.pk}/decide/", {**fields, "answer": BOMBS[bomb], "answer_format": "json"}
    )
    with pytest.raises(CommandError, match="HTTP 422"):
        call_command("resume", item.thread_id, f"--value={BOMBS[bomb]}", "--user", "alice")

    assert response.status_code in (413, 422)
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_hostile_json_body_to_the_api_is_refused_not_a_500(bomb: str, alice: User) -> None:
    """The same bombs inside the JSON API's decision body."""
    item = pause_agent(thread_id=f"api-{slug(bomb)}")
    _, secret = ApiToken.objects.issue(alice, "hostile")
    args = '{"to": "a", "subject": "s", "body": ' + BOMBS[bomb] + "}"
    body = (
        f'{{"client_decision_id": "api-1", "digest": "{item.digest}", "answer": [{{"type": '
        f'"edit", "edited_action": {{"name": "send_email", "args": {args}}}}}]}}'
    )

    response = Client().post(
        f"/api/v1/items/{item.pk}/decisions/",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )

    assert response.status_code in (413, 422), response.content[:300]
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.parametrize(
    "value",
    [
        "a\x00b",
        "a\ud800b",
        math.nan,
        math.inf,
        -math.inf,
        [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
        10**50,
    ],
    ids=["nul", "surrogate", "nan", "inf", "-inf", "deep", "huge-int"],
)
def test_a_hostile_python_value_handed_to_the_service_is_refused(value: Any, alice: User) -> None:
    """Case 31 for callers of the service itself (commands, the API, other code)."""
    item = pause_agent(thread_id=f"service-{hashlib.sha256(repr(value).encode()).hexdigest()[:12]}")

    outcome = attempt(item, alice, edit({"to": "a", "subject": "s", "body": value}))

    assert http_status(outcome) == 422
    assert not Decision.objects.filter(item=item).exists()


def test_a_decision_body_over_the_upload_limit_is_413(alice: User) -> None:
    """Case 29: a 10 MB decision body is refused by size before it is parsed."""
    item = pause_agent(thread_id="ten-megabytes")

    response = client_for(alice).post(f"/items/{item.pk}/decide/", {"d0-json": "x" * 10_000_000})

    assert response.status_code == 413


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("say", "args"),
    [
        ("\x00", None),
        (None, {"to": "a", "subject": "s", "body": "x", "priority": math.nan}),
        ("\ud800", None),
    ],
    ids=["nul", "nan", "surrogate"],
)
def test_model_output_postgres_cannot_store_fails_the_run_cleanly(
    say: str | None, args: Any, effects_log: Any
) -> None:
    """Case 31: the model (here, the plan) produces a NUL, a lone surrogate or NaN. The
    checkpoint is not written with it; the run fails with a message saying why, and the
    worker goes on to the next run (nothing wedged)."""
    calls = [{"name": "send_email", "args": args}] if args else []
    bad = service.start_run("ledger_agent", agent_input(calls, say=say), thread_id="unstorable")
    after = service.start_run("ledger_agent", agent_input([], say="fine"), thread_id="after")

    run_queued()

    bad.refresh_from_db()
    after.refresh_from_db()
    assert bad.status == "failed" and "cannot" in bad.error.lower()
    assert after.status == "succeeded"
