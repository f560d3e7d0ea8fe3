"""The inputs of a tool review's edit form: Django form fields generated from the tool's
JSON Schema (one per property, JSON text for nested values), each rendered by a Django
widget and its posted text parsed back into the JSON value (`ArgField.parse`). The
inputs show the arguments redacted (unless revealed) and keep the originals: a value
posted as it was shown, redacted in whole or in part, and a value left at `[redacted]`,
are the original (`restore_withheld`), so a reviewer never types a secret back in; a
changed value that still holds `[redacted]` is refused by the card
(`placeholders_added`), as the reviewer cannot see what it stood for.

What Django's own fields do not do, and these do: a value posted unchanged is the
original value itself (an integer stays an integer, `1.0` stays a float, a key the schema
does not name is kept), an input left out of the post is not an edit (`MISSING`, unlike
JSON null), a number is finite (JSON has no infinity or NaN), and nothing else is
refused here that the tool's schema would accept: `required`
and bounds are the schema's to check, by the same validation as the agent middleware,
so the field never marks itself required (the label says so) and parses only when the
card's decision is an edit (`reviews.review_form.ActionForm.clean`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.forms.boundfield import BoundField

from reviews import payloads
from reviews.withheld_edits import MISSING

_INTEGER = re.compile(r"[+-]?\d{1,100}")
"""An integer as typed (up to 100 digits; longer ones are read as floats, and refused
when they are not finite)."""
LONG_TEXT = 80
"""An argument the posted form leaves out (not the same as JSON null)."""


class ArgBoundField(BoundField):
    """An argument input as the edit form renders it: with `aria-invalid` and a pointer to
    its error text (`<id>-error`) while it has problems."""

    def as_widget(self, widget: Any = None, attrs: Any = None, only_initial: bool = False) -> Any:
        attrs = dict(attrs or {})
        if self.errors:
            attrs.update({"aria-invalid": "true", "aria-describedby": f"{self.auto_id}-error"})
        return super().as_widget(widget, attrs, only_initial)

    @property
    def arg(self) -> ArgField:
        return self.field  # type: ignore[return-value]


class ArgField(forms.Field):
    """One input of an edit form (a property of the tool's argument schema)."""

    def __init__(
        self,
        index: int,
        name: str,
        kind: str,
        text: str,
        *,
        schema_required: bool = False,
        description: str = "",
        options: Sequence[tuple[str, str]] = (),
        schema: Mapping[str, Any] | None = None,
        step: str = "any",
        original: Any = MISSING,
    ) -> None:
        super().__init__(required=False, initial=text, widget=_widget(kind, options, step))
        self.index = index
        self.arg_name = name
        self.kind = kind
        self.text = text
        self.schema_required = schema_required
        self.description = description
        self.options = list(options)
        self.schema: Mapping[str, Any] = schema or {}
        self.original = original

    def get_bound_field(self, form: forms.BaseForm, field_name: str) -> ArgBoundField:
        return ArgBoundField(form, self, field_name)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # An input the post leaves out shows its proposed value, as it was rendered.
        return initial if data is None else data

    def clean(self, value: Any) -> Any:
        """The text as posted (None: left out); `parse` makes it a JSON value."""
        return value

    def parse(self, raw: str) -> Any:
        """The JSON value of posted text `raw`, `MISSING` for none; `FieldError` says why not."""
        # Browsers send textarea line breaks as CRLF.
        raw = raw.replace("\r\n", "\n")
        if raw == self.text and self.original is not MISSING:
            return self.original
        kinds, nullable = _types(self.schema)
        text = raw.strip()
        if self.kind == "select" and kinds == {"boolean"}:
            if text == "":
                return MISSING
            return text == "true"
        if self.kind == "number":
            if text == "":
                return None if nullable and self.schema_required else MISSING
            if _INTEGER.fullmatch(text):
                return int(text)  # exactly: float() rounds past 2**53
            try:
                number = float(text)
            except ValueError:
                raise FieldError(f"{self.arg_name}: '{text[:40]}' is not a number.") from None
            if not math.isfinite(number):
                # "1e999", "nan", "inf": JSON carries none of them.
                raise FieldError(f"{self.arg_name}: '{text[:40]}' is not a finite number.")
            if kinds == {"integer"} or (
                number.is_integer() and "." not in text and "e" not in text
            ):
                return int(number) if number.is_integer() else number
            return number
        if self.kind == "json":
            if text == "":
                return MISSING
            try:
                return payloads.parse_json(text, what=f"Field {self.arg_name}")
            except payloads.PayloadError as exc:
                raise FieldError(str(exc)) from None
        if raw == "" and not self.schema_required:
            return None if nullable else MISSING
        return raw


def _widget(kind: str, options: Sequence[tuple[str, str]], step: str) -> forms.Widget:
    if kind == "select":
        return forms.Select(choices=list(options))
    if kind == "number":
        return forms.NumberInput(attrs={"step": step})
    if kind == "text":
        return forms.TextInput()
    attrs = {"rows": "4", "class": "json", "spellcheck": "false"} if kind == "json" else {}
    widget = forms.Textarea(attrs=attrs or {"rows": "5"})
    widget.attrs.pop("cols", None)
    return widget


def arg_fields(
    schema: Mapping[str, Any] | None, shown: Mapping[str, Any], original: Mapping[str, Any]
) -> list[ArgField]:
    """Inputs for the properties of `schema` (then any argument it does not name),
    showing the arguments as `shown` (redacted or not) and parsing an input posted as
    shown into its `original` value."""
    properties = dict((schema or {}).get("properties") or {})
    required = set((schema or {}).get("required") or ())
    names = list(properties) + [k for k in shown if k not in properties]
    fields = []
    for index, name in enumerate(names):
        sub = properties.get(name)
        if not isinstance(sub, Mapping):
            sub = _schema_of(shown.get(name))
        value, kept = shown.get(name, MISSING), original.get(name, MISSING)
        fields.append(_arg_field(index, str(name), sub, value, kept, name in required))
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
    index: int, name: str, schema: Mapping[str, Any], value: Any, original: Any, required: bool
) -> ArgField:
    kinds, _ = _types(schema)
    common: dict[str, Any] = {
        "schema_required": required,
        "description": str(schema.get("description") or ""),
        "schema": schema,
        "original": original,
    }
    enum = schema.get("enum")
    if enum and all(isinstance(v, str) for v in enum):
        options = [("", "(none)")] if not required else []
        options += [(v, v) for v in enum]
        current = value if isinstance(value, str) else ""
        return ArgField(index, name, "select", current, options=options, **common)
    if kinds == {"boolean"}:
        options = [("true", "true"), ("false", "false")]
        if not required:
            options.insert(0, ("", "(not set)"))
        current = "" if value is MISSING or value is None else json.dumps(value)
        return ArgField(index, name, "select", current, options=options, **common)
    if kinds and kinds <= {"integer", "number"}:
        current = "" if value is MISSING or value is None else _number_text(value)
        step = "1" if kinds == {"integer"} else "any"
        return ArgField(index, name, "number", current, step=step, **common)
    if kinds == {"string"}:
        current = value if isinstance(value, str) else ""
        long = len(current) > LONG_TEXT or "\n" in current or (schema.get("maxLength") or 0) > 200
        return ArgField(index, name, "textarea" if long else "text", current, **common)
    current = "" if value is MISSING else json.dumps(value, indent=2, ensure_ascii=False)
    return ArgField(index, name, "json", current, **common)


def _number_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


class FieldError(ValueError):
    pass


__all__ = [
    "LONG_TEXT",
    "ArgBoundField",
    "ArgField",
    "FieldError",
    "arg_fields",
]
