"""Review payloads and answers as JSON: one canonical form, its digest, and hostile-input
limits.

A review item stores the interrupt value once, in canonical JSON (sorted keys, no NaN),
and its digest is the SHA-256 of that text: what the reviewer saw. Everything a reviewer
sends back (edited arguments, a JSON answer) is parsed by `parse_json` and checked by
`check_value`, with the limits of `beamweaver_core.untrusted_json` (size, depth, number
of values; no duplicate keys, NUL, lone surrogates, NaN or infinities).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from beamweaver_core import untrusted_json
from beamweaver_core.agent.canonical import canonical_json

MAX_ANSWER_BYTES = 64 * 1024
"""Edited arguments or a JSON answer, encoded: larger ones are refused."""

MAX_DEPTH = untrusted_json.MAX_DEPTH
"""Nesting of arrays and objects in an answer."""

MAX_NODES = untrusted_json.MAX_NODES
"""Values (scalars and containers) in one answer."""

PayloadError = untrusted_json.UntrustedJSONError
"""A reviewer's JSON is not acceptable; the message says why and what to do."""


def plain(value: Any) -> Any:
    """`value` as plain JSON data: engine objects become their dicts, tuples lists."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return plain(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return repr(value)


def canonical(value: Any) -> str:
    """The one canonical JSON text of `value` (sorted keys; refuses NaN)."""
    return canonical_json(plain(value))


def digest(text: str) -> str:
    """SHA-256 (hex) of canonical JSON text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def parse_json(text: str, *, what: str = "The answer", max_bytes: int = MAX_ANSWER_BYTES) -> Any:
    """Parse a reviewer's JSON within the limits; `PayloadError` says what is wrong."""
    return untrusted_json.parse_json(text, what=what, max_bytes=max_bytes)


def check_value(value: Any, *, what: str = "The answer") -> None:
    """Refuse values Postgres or JSON cannot carry, and values beyond the size limits."""
    untrusted_json.check_value(value, what=what)


__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "PayloadError",
    "canonical",
    "check_value",
    "digest",
    "parse_json",
    "plain",
]
