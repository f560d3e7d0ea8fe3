"""An inbox row says what is asked: the item's one-line summary (`reviews.summaries`),
written when the item is created or its payload changes, redacted, bounded, escaped."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from beamweaver_core.agent.hitl import DEFAULT_DESCRIPTION_PREFIX
from beamweaver_core.models import Run
from beamweaver_core.types import Interrupt
from reviews.models import ReviewItem
from reviews.receivers import on_run_paused
from reviews.summaries import MAX_CHARS, summarize
from tests.reviews.conftest import client_for, pause


def _review(*actions: dict[str, Any]) -> dict[str, Any]:
    return {"action_requests": list(actions), "review_configs": []}


def test_a_tool_review_says_the_first_line_of_each_description() -> None:
    value = _review(
        {
            "name": "issue_refund",
            "args": {"order_id": "1234", "amount": 250},
            "description": "Refund $250.00 on order 1234 (Ada, total $300.00).\nReason: damaged",
        },
        {"name": "send_email", "args": {}, "description": "\n  Tell Ada it is done  \n"},
    )

    assert summarize("tool_review", value) == (
        "Refund $250.00 on order 1234 (Ada, total $300.00).; Tell Ada it is done"
    )


def test_the_middlewares_generated_description_becomes_a_summary_of_the_arguments() -> None:
    generated = f'{DEFAULT_DESCRIPTION_PREFIX}\n\nTool: issue_refund\nArgs: {{"amount":250}}'
    value = _review(
        {
            "name": "issue_refund",
            "args": {
                "order_id": "1234",
                "amount": 250.0,
                "note": "x" * 100,
                "items": [1, 2],
                "meta": {"a": 1},
            },
            "description": generated,
        },
        {"name": "ping", "args": {}, "description": ""},
    )

    assert summarize("tool_review", value) == (
        'issue_refund(amount=250.0, items=[2 items], meta={…}, note="' + "x" * 39 + '…", …); ping()'
    )


def test_a_secret_in_the_arguments_is_redacted_in_the_summary() -> None:
    key = "sk-" + "A" * 40
    value = _review({"name": "call_api", "args": {"api_key": key, "q": "hi"}, "description": ""})

    text = summarize("tool_review", value)

    assert key not in text
    assert text == 'call_api(api_key="[redacted]", q="hi")'
    assert key not in summarize("interrupt", f"Use {key} for the call?")


def test_a_question_says_its_text_and_a_breakpoint_nothing() -> None:
    assert summarize("interrupt", "Which  warehouse?\nA or B") == "Which warehouse? A or B"
    assert summarize("interrupt", {"question": "Ship it?", "options": [1]}) == "Ship it?"
    assert summarize("interrupt", {"sku": "X1", "qty": 2}) == 'qty=2, sku="X1"'
    assert summarize("interrupt", [1, 2, 3]) == "[3 items]"
    assert summarize("breakpoint", None) == ""


def test_a_summary_is_one_line_of_at_most_the_columns_size() -> None:
    text = summarize("interrupt", "word " * 1000)

    assert len(text) == MAX_CHARS
    assert text.endswith("…")
    assert "\n" not in summarize("interrupt", "a\nb\r\nc\u2028d")
    field = ReviewItem._meta.get_field("summary")
    assert field.max_length == MAX_CHARS


@pytest.mark.django_db
def test_an_item_stores_its_summary_and_a_changed_payload_rewrites_it() -> None:
    item = pause()
    assert item.summary == "Run send_email as proposed?"

    changed = {
        **item.payload,
        "action_requests": [
            {"name": "send_email", "args": {"to": "b@c.d"}, "description": "Email b@c.d instead"}
        ],
    }
    on_run_paused(
        Run,
        run=item.run,
        interrupts=(Interrupt(id=item.interrupt_id, value=changed, node="propose"),),
    )

    assert ReviewItem.objects.get(pk=item.pk).summary == "Email b@c.d instead"


@pytest.mark.django_db
def test_the_inbox_row_shows_the_summary_escaped(alice: Any) -> None:
    item = pause()
    hostile = {
        **item.payload,
        "action_requests": [
            {"name": "send_email", "args": {}, "description": "<img src=x onerror=alert(1)> Pay"}
        ],
    }
    on_run_paused(
        Run,
        run=item.run,
        interrupts=(Interrupt(id=item.interrupt_id, value=hostile, node="propose"),),
    )

    page = client_for(alice).get("/").content.decode()

    assert '<span class="row-summary">&lt;img src=x onerror=alert(1)&gt; Pay</span>' in page
    assert "<img src=x" not in page


@pytest.mark.django_db
def test_the_migration_fills_in_the_summaries_of_existing_items() -> None:
    first, second = pause(), pause()
    ReviewItem.objects.filter(pk__in=[first.pk, second.pk]).update(summary="")
    migration = importlib.import_module("reviews.migrations.0006_item_summary")

    migration.fill_summaries(apps, SimpleNamespace(connection=connection))

    assert set(ReviewItem.objects.values_list("summary", flat=True)) == {
        "Run send_email as proposed?"
    }
