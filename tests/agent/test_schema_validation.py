"""Checking arguments against a schema from outside: every pattern on RE2, one dialect, no
reference followed out of the schema, and a bounded amount of work.

The hostile patterns are matched against `"a" * 40 + "!"`: `^(a+)+$` takes a backtracking
engine days on it, far past the suite's per-test timeout (no time is asserted).
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from beamweaver_core.agent.schema_validation import MAX_STEPS, check_schema, schema_problems

HOSTILE = "^(a+)+$"
SLOW_KEY = "a" * 40 + "!"


def problems(schema: dict[str, Any], instance: Any) -> list[tuple[str, str]]:
    return schema_problems(check_schema(schema, "tool 't'"), instance)


UNEXPECTED = f"Unevaluated properties are not allowed ({SLOW_KEY!r} was unexpected)"


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(lambda pp: pp, id="beside"),
        pytest.param(lambda pp: {"allOf": [pp]}, id="allOf"),
        pytest.param(lambda pp: {"anyOf": [pp, {"required": ["nothing"]}]}, id="anyOf"),
        pytest.param(lambda pp: {"$defs": {"names": pp}, "$ref": "#/$defs/names"}, id="$ref"),
        pytest.param(lambda pp: {"dependentSchemas": {"aa": pp}}, id="dependentSchemas"),
        pytest.param(lambda pp: {"if": {"required": ["aa"]}, "then": pp}, id="then"),
    ],
)
def test_unevaluated_properties_match_pattern_properties_on_re2(where: Any) -> None:
    schema = {
        "type": "object",
        **where({"patternProperties": {HOSTILE: {"type": "integer"}}}),
        "unevaluatedProperties": False,
    }

    assert problems(schema, {"aa": 1, SLOW_KEY: 2}) == [("", UNEXPECTED)]
    assert problems(schema, {"aa": 1, "aaa": 2}) == []


def test_unevaluated_properties_under_a_schema_list_the_refused_names() -> None:
    schema = {
        "type": "object",
        "patternProperties": {HOSTILE: {}},
        "unevaluatedProperties": {"type": "string"},
    }

    assert problems(schema, {SLOW_KEY: 1, "b!": "text", "aaa": 3}) == [
        (
            "",
            "Unevaluated properties are not valid under the given schema "
            f"({SLOW_KEY!r} was unevaluated and invalid)",
        )
    ]


SAFE_SCHEMAS: list[dict[str, Any]] = [
    {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
    {"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
    {"anyOf": [{"properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False},
    {"oneOf": [{"patternProperties": {"^x": {}}}, {"required": ["z"]}], "unevaluatedProperties": False},
    {"if": {"required": ["a"]}, "then": {"properties": {"b": {}}}, "else": {"properties": {"c": {}}},
     "properties": {"a": {}}, "unevaluatedProperties": False},
    {"dependentSchemas": {"a": {"properties": {"b": {}}}}, "properties": {"a": {}},
     "unevaluatedProperties": {"type": "integer"}},
    {"$defs": {"x": {"patternProperties": {"^x": {"type": "integer"}}}}, "$ref": "#/$defs/x",
     "unevaluatedProperties": False},
    {"additionalProperties": {"type": "integer"}, "unevaluatedProperties": False},
    {"properties": {"n": {"properties": {"a": {}}, "unevaluatedProperties": False}},
     "unevaluatedProperties": False},
]  # fmt: skip
INSTANCES: list[dict[str, Any]] = [
    {},
    {"a": 1},
    {"a": "one", "b": 2},
    {"c": 3, "xy": 4},
    {"xy": "four", "z": 5},
    {"b": 1, "n": {"a": 1, "b": 2}},
]


@pytest.mark.parametrize("schema", SAFE_SCHEMAS)
def test_unevaluated_properties_accept_what_jsonschema_accepts(
    schema: dict[str, Any],
) -> None:
    """Moving the keyword to RE2 changed where patterns run, not what is accepted."""
    stock = Draft202012Validator(schema)
    for instance in INSTANCES:
        expected = sorted(
            (".".join(str(p) for p in e.absolute_path), e.message)
            for e in stock.iter_errors(instance)
        )
        assert problems(schema, instance) == expected, instance


def test_a_subschemas_dollar_schema_does_not_switch_to_another_drafts_validator() -> None:
    # MCP servers commonly send draft-07 schemas; `$ref: "#"` enters the root, and with it
    # its `$schema`, where jsonschema would switch to its draft-07 validator (and `re`).
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": HOSTILE}, "child": {"$ref": "#"}},
    }

    assert problems(schema, {"child": {"code": SLOW_KEY}}) == [
        ("child.code", f"{SLOW_KEY!r} does not match {HOSTILE!r}")
    ]
    assert problems(schema, {"child": {"code": "aaa"}}) == []


def test_a_reference_loop_is_a_problem_not_a_crash() -> None:
    assert problems({"$ref": "#"}, {}) == [
        ("", "the schema refers to itself too deeply to check these arguments")
    ]


def test_a_schema_whose_work_doubles_at_each_level_is_cut_off() -> None:
    # 40 levels of `allOf` over two references to the next level: 2**40 applications.
    levels = {f"l{i}": {"allOf": [{"$ref": f"#/$defs/l{i + 1}"}] * 2} for i in range(40)}
    schema = {"$defs": {**levels, "l40": {"type": "string"}}, "$ref": "#/$defs/l0"}

    # Valid or not, arguments that cannot be checked within bounds are refused.
    assert problems(schema, "text") == [
        ("", f"checking these arguments would apply more than {MAX_STEPS} subschemas")
    ]
    assert problems({"$defs": schema["$defs"], "$ref": "#/$defs/l30"}, "text") == []
