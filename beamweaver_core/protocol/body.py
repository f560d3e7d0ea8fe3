"""Request bodies and query parameters: parsed within limits, validated against the
request schemas of `protocol.schemas` (the same ones the OpenAPI document publishes).

A body that is not JSON, too large, too deep, or that the schema refuses is a 422 (413
when too large) saying what is wrong, before anything is read or changed."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import best_match

from beamweaver_core import json_input
from beamweaver_core.protocol import schemas
from beamweaver_core.protocol.errors import ProtocolError

MAX_BODY_BYTES = 512 * 1024
"""The largest request body (Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` refuses larger ones)."""


def parse(request: HttpRequest) -> Any:
    """The request's JSON body (`{}` when empty), within the limits."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raw = b"x" * (MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise ProtocolError(413, f"The request body is larger than {MAX_BODY_BYTES // 1024} KiB.")
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(422, "Invalid JSON in request body: it is not UTF-8.") from None
    try:
        return json_input.parse_json(text, what="The request body", max_bytes=MAX_BODY_BYTES)
    except json_input.PayloadError as exc:
        raise ProtocolError(422, f"Invalid JSON in request body: {exc}") from None


def json_body(request: HttpRequest, schema: str) -> dict[str, Any]:
    """The request's JSON object, checked against the named request schema (an object
    schema)."""
    body = parse(request)
    check(body, schema)
    return dict(body)


def check(value: Any, schema: str) -> None:
    """422 naming the first place where `value` breaks the named schema."""
    error = best_match(_validator(schema).iter_errors(value))
    if error is None:
        return
    where = "/".join(str(part) for part in error.absolute_path) or "body"
    message = error.message if len(error.message) <= 300 else error.message[:300] + "…"
    raise ProtocolError(422, f"Invalid request at {where}: {message}")


def _whole_number(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


# JSON Schema counts 2.0 as an integer, and the views slice and count with these: a
# request's "integer" is a number written without a fraction or exponent. Formats
# (`uuid`) are checked, not only annotated.
_Validator: type[Draft202012Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number),
)


@functools.cache
def _validator(schema: str) -> Draft202012Validator:
    return _Validator(
        {**schemas.REQUESTS[schema], "$defs": schemas.DEFS},
        format_checker=_Validator.FORMAT_CHECKER,
    )


def flag(query: Mapping[str, str], name: str, default: bool = False) -> bool:
    """A boolean query parameter (`true`/`false`, `1`/`0`)."""
    value = query.get(name)
    if value in (None, ""):
        return default
    lowered = str(value).lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise ProtocolError(422, f"Query parameter {name!r} must be true or false, got {value[:40]!r}.")


def number(query: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    """A whole-number query parameter between `low` and `high`."""
    value = query.get(name)
    if value in (None, ""):
        return default
    try:
        parsed = int(str(value))
    except ValueError:
        parsed = low - 1
    if not low <= parsed <= high:
        raise ProtocolError(
            422, f"Query parameter {name!r} must be a whole number from {low} to {high}."
        )
    return parsed


__all__ = ["MAX_BODY_BYTES", "check", "flag", "json_body", "number", "parse"]
