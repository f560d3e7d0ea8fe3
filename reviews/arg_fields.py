"""The inputs of a tool review's edit form, generated from the tool's JSON Schema (one
input per property, JSON text for nested values), and a posted input parsed back into
its JSON value. An edited value left at `[redacted]` keeps the original
(`restore_redacted`), so a reviewer never types a secret back in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from beamweaver_core.redaction import REDACTED
from reviews import payloads

LONG_TEXT = 80
MISSING: Any = object()
"""An argument the posted form leaves out (not the same as JSON null)."""


@dataclass
class ArgField:
    """One input of an edit form (a property of the tool's argument schema)."""

    index: int
    name: str
    widget: str  # text, textarea, number, select, json
    value: str
    required: bool = False
    description: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)
    schema: Mapping[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    step: str = "any"
    initial: str | None = None
    original: Any = None

    def __post_init__(self) -> None:
        if self.initial is None:
            self.initial = self.value


def arg_fields(schema: Mapping[str, Any] | None, args: Mapping[str, Any]) -> list[ArgField]:
    """Inputs for the properties of `schema` (then any argument it does not name)."""
    properties = dict((schema or {}).get("properties") or {})
    required = set((schema or {}).get("required") or ())
    names = list(properties) + [k for k in args if k not in properties]
    fields = []
    for index, name in enumerate(names):
        sub = properties.get(name)
        if not isinstance(sub, Mapping):
            sub = _schema_of(args.get(name))
        value = args.get(name, MISSING)
        arg = _arg_field(index, str(name), sub, value, name in required)
        arg.original = value
        fields.append(arg)
    return fields


def _schema_of(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int | float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {}


def _types(schema: Mapping[str, Any]) -> tuple[set[str], bool]:
    declared = schema.get("type")
    kinds = {declared} if isinstance(declared, str) else set(declared or ())
    return kinds - {"null"}, "null" in kinds


def _arg_field(
    index: int, name: str, schema: Mapping[str, Any], value: Any, required: bool
) -> ArgField:
    kinds, _ = _types(schema)
    description = str(schema.get("description") or "")
    enum = schema.get("enum")
    if enum and all(isinstance(v, str) for v in enum):
        options = [("", "(none)")] if not required else []
        options += [(v, v) for v in enum]
        current = value if isinstance(value, str) else ""
        return ArgField(index, name, "select", current, required, description, options, schema)
    if kinds == {"boolean"}:
        options = [("true", "true"), ("false", "false")]
        if not required:
            options.insert(0, ("", "(not set)"))
        current = "" if value is MISSING or value is None else json.dumps(value)
        return ArgField(index, name, "select", current, required, description, options, schema)
    if kinds and kinds <= {"integer", "number"}:
        current = "" if value is MISSING or value is None else _number_text(value)
        step = "1" if kinds == {"integer"} else "any"
        return ArgField(
            index, name, "number", current, required, description, schema=schema, step=step
        )
    if kinds == {"string"}:
        current = value if isinstance(value, str) else ""
        long = len(current) > LONG_TEXT or "\n" in current or (schema.get("maxLength") or 0) > 200
        widget = "textarea" if long else "text"
        return ArgField(index, name, widget, current, required, description, schema=schema)
    current = "" if value is MISSING else json.dumps(value, indent=2, ensure_ascii=False)
    return ArgField(index, name, "json", current, required, description, schema=schema)


def _number_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


class FieldError(ValueError):
    pass


def parse_arg(arg: ArgField, raw: str) -> Any:
    # Browsers send textarea line breaks as CRLF.
    raw = raw.replace("\r\n", "\n")
    if raw == arg.initial and arg.original is not MISSING:
        return arg.original
    kinds, nullable = _types(arg.schema)
    text = raw.strip()
    if arg.widget == "select" and kinds == {"boolean"}:
        if text == "":
            return MISSING
        return text == "true"
    if arg.widget == "number":
        if text == "":
            return None if nullable and arg.required else MISSING
        try:
            number = float(text)
        except ValueError:
            raise FieldError(f"{arg.name}: '{text[:40]}' is not a number.") from None
        if kinds == {"integer"} or (number.is_integer() and "." not in text and "e" not in text):
            return int(number) if number.is_integer() else number
        return number
    if arg.widget == "json":
        if text == "":
            return MISSING
        try:
            return payloads.parse_json(text, what=f"Field {arg.name}")
        except payloads.PayloadError as exc:
            raise FieldError(str(exc)) from None
    if raw == "" and not arg.required:
        return None if nullable else MISSING
    return raw


def restore_redacted(edited: Any, original: Any) -> Any:
    """`edited` with every value still reading `[redacted]` put back to the original."""
    if edited == REDACTED and original is not MISSING and original != REDACTED:
        return original
    if isinstance(edited, dict) and isinstance(original, Mapping):
        return {k: restore_redacted(v, original.get(k, MISSING)) for k, v in edited.items()}
    if isinstance(edited, list) and isinstance(original, list) and len(edited) == len(original):
        return [restore_redacted(e, o) for e, o in zip(edited, original, strict=True)]
    return edited


__all__ = [
    "LONG_TEXT",
    "MISSING",
    "ArgField",
    "FieldError",
    "arg_fields",
    "parse_arg",
    "restore_redacted",
]
