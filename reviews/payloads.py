"""Review payloads and answers as JSON: one canonical form, its digest, and hostile-input
limits.

A review item stores the interrupt value once, in canonical JSON (sorted keys, no NaN),
and its digest is the SHA-256 of that text: what the reviewer saw. Everything a reviewer
sends back (edited arguments, a JSON answer) is parsed by `parse_json`, which enforces
size, nesting depth and number limits before or while parsing (so a 1,000-level array is
a refusal, never a `RecursionError`) and refuses an object with a key twice (parsers
disagree on which value wins), then checked by `check_value` for what Postgres cannot
store (NUL, lone surrogates) and what JSON cannot carry (NaN, infinities). The parser and
its limits live in `beamweaver_core.json_input` (the command line parses with them too)
and are importable from here as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.json_input import (
    MAX_ANSWER_BYTES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    PayloadError,
    check_value,
    parse_json,
)
from beamweaver_core.redaction import redact


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


def searchable(value: Any) -> str:
    """The canonical JSON text of `value` as the pages show it (`redact`ed): what the
    inbox search matches, so a search never tells whether a withheld secret holds a
    guessed text."""
    return canonical(redact(plain(value)))


def digest(text: str) -> str:
    """SHA-256 (hex) of canonical JSON text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "PayloadError",
    "canonical",
    "check_value",
    "digest",
    "parse_json",
    "plain",
    "searchable",
]
