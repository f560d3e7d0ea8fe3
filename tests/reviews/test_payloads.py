"""Canonical JSON, digests and hostile-input limits; showing untrusted text honestly."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from beamweaver_core.messages import Message
from beamweaver_core.redaction import redact
from reviews.arg_fields import arg_fields
from reviews.diffs import args_diff
from reviews.payloads import PayloadError, canonical, check_value, digest, parse_json
from reviews.templatetags.reviews import age, visible
from reviews.withheld_edits import placeholders_added, restore_withheld


def test_canonical_json_sorts_keys_and_keeps_unicode() -> None:
    assert canonical({"b": 1, "a": ["é", 1.5]}) == '{"a": ["é", 1.5], "b": 1}'


def test_engine_objects_become_plain_data() -> None:
    assert canonical({"m": Message.user("hi"), "t": (1, 2)}) == (
        '{"m": {"content": "hi", "role": "user"}, "t": [1, 2]}'
    )


def test_the_digest_is_the_sha256_of_the_canonical_text() -> None:
    text = canonical({"x": 1})

    assert digest(text) == hashlib.sha256(b'{"x": 1}').hexdigest()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 1000 + "]" * 1000, "nested more than 32 levels deep"),
        ("1" * 5000, "more than 40 digits"),
        ("1e400", "too large for JSON"),
        ("NaN", "NaN is not valid JSON"),
        ("-Infinity", "-Infinity is not valid JSON"),
        ('"a\\u0000b"', "NUL character"),
        ('"\\ud800"', "lone surrogate"),
        ('{"k": 1', "is not valid JSON: Expecting ',' delimiter (line 1, column 8)"),
        ('"' + "x" * 70_000 + '"', "larger than 64 KiB"),
        ("[" + ",".join(["0"] * 10_001) + "]", "more than 10000 values"),
    ],
)
def test_hostile_json_is_refused_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(PayloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_json(text)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert parse_json('{"a": "' + "[" * 100 + '"}') == {"a": "[" * 100}


def test_deserialization_shaped_data_stays_plain_data() -> None:
    shaped = '{"lc": 2, "type": "constructor", "id": ["os", "system"], "kwargs": {"command": "touch pwned"}}'

    assert parse_json(shaped) == {
        "lc": 2,
        "type": "constructor",
        "id": ["os", "system"],
        "kwargs": {"command": "touch pwned"},
    }


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_accepted_json_round_trips_through_the_canonical_form(value: Any) -> None:
    try:
        check_value(value)
    except PayloadError:
        return
    assert parse_json(canonical(value)) == value


def test_invisible_and_direction_changing_characters_are_shown() -> None:
    html = visible("pay\u202egpj.exe<b>\u200b\n")

    assert html == (
        'pay<mark class="ctl" title="RIGHT-TO-LEFT OVERRIDE">[U+202E]</mark>gpj.exe&lt;b&gt;'
        '<mark class="ctl" title="ZERO WIDTH SPACE">[U+200B]</mark>\n'
    )


def test_field_level_diff() -> None:
    before = {"to": "a", "cc": ["x"], "opts": {"high": False, "tags": 1}}
    after = {"to": "b", "opts": {"high": True, "tags": 1}, "bcc": "y"}

    assert args_diff(before, after) == [
        {"field": "bcc", "change": "added", "before": None, "after": '"y"'},
        {"field": "cc", "change": "removed", "before": '["x"]', "after": None},
        {"field": "opts.high", "change": "changed", "before": "false", "after": "true"},
        {"field": "to", "change": "changed", "before": '"a"', "after": '"b"'},
    ]


def test_values_left_as_shown_or_at_redacted_in_an_edit_keep_the_original() -> None:
    secret = "sk-live0123456789abcdefXYZ"
    original = {
        "token": "sk-real",
        "nested": {"password": "hunter2", "note": f"use {secret} please", "n": 1},
        "to": "a",
        "list": [f"key {secret}", 2],
    }
    shown = redact(original)
    assert shown["nested"]["note"] == "use [redacted] please"
    edited = {
        "token": "[redacted]",
        "nested": {"password": "[redacted]", "note": "use [redacted] please", "n": 2},
        "to": "b",
        "list": ["key [redacted]", 3],
    }

    assert restore_withheld(edited, shown, original) == {
        "token": "sk-real",
        "nested": {"password": "hunter2", "note": f"use {secret} please", "n": 2},
        "to": "b",
        "list": [f"key {secret}", 3],
    }


def test_a_value_left_as_shown_keeps_its_type() -> None:
    """`true` is not `1`, nor `1.0` `1`: only the same JSON counts as left as shown."""
    assert restore_withheld({"n": True}, {"n": 1}, {"n": 1}) == {"n": True}
    assert restore_withheld({"n": 1.0}, {"n": 1}, {"n": 1}) == {"n": 1.0}


def test_placeholders_added_counts_only_new_ones() -> None:
    assert placeholders_added("please use [redacted] now", "use sk-x please")
    assert not placeholders_added("quoted [redacted] text", "a [redacted] text")
    assert not placeholders_added("plain", "use sk-x please")


def test_ages_are_compact() -> None:
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    assert [age(now - timedelta(seconds=s)) for s in (5, 125, 7300, 200_000)] == [
        "5s",
        "2m",
        "2h",
        "2d",
    ]


@pytest.mark.parametrize("text", ["9007199254740993", "-12345678901234567890", "+7"])
def test_an_integer_typed_in_a_number_field_is_read_exactly(text: str) -> None:
    """Read through float(), 9007199254740993 became 9007199254740992."""
    (field,) = arg_fields({"properties": {"n": {"type": "integer"}}}, {"n": 1}, {"n": 1})

    assert field.parse(text) == int(text)
    assert field.parse("2.5") == 2.5 and field.parse("3") == 3
