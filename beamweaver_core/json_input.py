"""JSON that comes from outside (a reviewer, an API client, a command line), parsed
within limits.

`parse_json` enforces size, nesting depth and number limits before or while parsing (so a
5,000-level array is a refusal, never a `RecursionError`) and refuses an object with a key
twice (parsers disagree on which value wins); `check_value` then refuses what Postgres
cannot store (NUL, lone surrogates) and what JSON cannot carry (NaN, infinities). Every
refusal is a `PayloadError` whose message says what is wrong and what to do. The review
API, the inbox's forms, `manage.py resume` and `manage.py run_graph` all parse with it.

Hand-written around the standard `json` module: its hooks cover duplicate keys and
numbers, but it has no depth or size limit, and the depth must be bounded before the
recursive C parser runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

MAX_ANSWER_BYTES = 64 * 1024
"""Edited arguments or a JSON answer, encoded: larger ones are refused."""

MAX_DEPTH = 32
"""Nesting of arrays and objects in an answer."""

MAX_NODES = 10_000
"""Values (scalars and containers) in one answer."""

MAX_INT_DIGITS = 40


class PayloadError(ValueError):
    """JSON from outside is not acceptable; the message says why and what to do, and
    `path` where in the value (dotted keys and indexes; empty for the whole value)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def _scan_depth(text: str, limit: int, what: str) -> None:
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                raise PayloadError(f"{what} is nested more than {limit} levels deep; flatten it.")
        elif char in "]}":
            depth -= 1


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise PayloadError(
            f"A number has more than {MAX_INT_DIGITS} digits; send it as a string instead."
        )
    return int(text)


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise PayloadError(f"The number {text[:40]} is too large for JSON (it overflows).")
    return number


def _parse_constant(name: str) -> Any:
    raise PayloadError(f"{name} is not valid JSON; send a finite number or a string.")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise PayloadError(
                f"The key {key[:40]!r} appears twice in one object; which value was meant is "
                "ambiguous. Keep one."
            )
        seen.add(key)
    return dict(pairs)


def parse_json(text: str, *, what: str = "The answer", max_bytes: int = MAX_ANSWER_BYTES) -> Any:
    """Parse JSON from outside within the limits; `PayloadError` says what is wrong
    (each message starts with `what`)."""
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise PayloadError(f"{what} is larger than {max_bytes // 1024} KiB; shorten it.")
    _scan_depth(text, MAX_DEPTH, what)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except PayloadError:
        raise
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except (ValueError, RecursionError) as exc:
        raise PayloadError(f"{what} is not acceptable JSON: {exc}.") from None
    check_value(value, what=what)
    return value


def _string_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (an invalid \\ud800-\\udfff escape)"
    return None


def check_value(value: Any, *, what: str = "The answer") -> None:
    """Refuse values Postgres or JSON cannot carry, and values beyond the size limits."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    nodes = 0
    while stack:
        item, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise PayloadError(f"{what} has more than {MAX_NODES} values; send less data.")
        if depth > MAX_DEPTH:
            raise PayloadError(f"{what} is nested more than {MAX_DEPTH} levels deep; flatten it.")
        where = f" at {path}" if path else ""
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                raise PayloadError(f"{what}{where} {problem}.", path)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise PayloadError(f"{what}{where} is not a finite number (NaN or infinity).", path)
        elif isinstance(item, bool | int) or item is None:
            continue
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise PayloadError(f"{what}{where} has a non-string key {key!r}.", path)
                problem = _string_problem(key)
                if problem:
                    raise PayloadError(f"{what}{where} has a key that {problem}.", path)
                stack.append((child, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(item, list | tuple):
            for index, child in enumerate(item):
                stack.append((child, depth + 1, f"{path}.{index}" if path else str(index)))
        else:
            raise PayloadError(f"{what}{where} is not JSON data ({type(item).__name__}).")


__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "PayloadError",
    "check_value",
    "parse_json",
]
