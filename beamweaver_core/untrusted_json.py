"""Parsing untrusted JSON (reviewer answers, API request bodies) within limits.

`parse_json` enforces size, nesting depth and number limits before or while parsing (so a
1,000-level array is a refusal, never a `RecursionError`) and refuses an object with a
key twice (parsers disagree on which value wins); `check_value` refuses what Postgres
cannot store (NUL, lone surrogates) and what JSON cannot carry (NaN, infinities).
Hand-written on the standard `json` module: no maintained parser enforces these limits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 32
"""Nesting of arrays and objects (the default limit)."""

MAX_NODES = 10_000
"""Values (scalars and containers) in one document (the default limit)."""

MAX_INT_DIGITS = 40


class UntrustedJSONError(ValueError):
    """JSON from outside is not acceptable; the message says why and what to do."""


def _scan_depth(text: str, limit: int) -> None:
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
                raise UntrustedJSONError(
                    f"The JSON is nested more than {limit} levels deep; flatten it."
                )
        elif char in "]}":
            depth -= 1


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise UntrustedJSONError(
            f"A number has more than {MAX_INT_DIGITS} digits; send it as a string instead."
        )
    return int(text)


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise UntrustedJSONError(f"The number {text[:40]} is too large for JSON (it overflows).")
    return number


def _parse_constant(name: str) -> Any:
    raise UntrustedJSONError(f"{name} is not valid JSON; send a finite number or a string.")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise UntrustedJSONError(
                f"The key {key[:40]!r} appears twice in one object; which value was meant is "
                "ambiguous. Keep one."
            )
        seen.add(key)
    return dict(pairs)


def parse_json(
    text: str,
    *,
    what: str,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> Any:
    """Parse `text` within the limits; `UntrustedJSONError` says what is wrong."""
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise UntrustedJSONError(f"{what} is larger than {max_bytes // 1024} KiB; shorten it.")
    _scan_depth(text, max_depth)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except UntrustedJSONError:
        raise
    except json.JSONDecodeError as exc:
        raise UntrustedJSONError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except (ValueError, RecursionError) as exc:
        raise UntrustedJSONError(f"{what} is not acceptable JSON: {exc}.") from None
    check_value(value, what=what, max_depth=max_depth, max_nodes=max_nodes)
    return value


def _string_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (an invalid \\ud800-\\udfff escape)"
    return None


def check_value(
    value: Any, *, what: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> None:
    """Refuse values Postgres or JSON cannot carry, and values beyond the size limits."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    nodes = 0
    while stack:
        item, depth, path = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise UntrustedJSONError(f"{what} has more than {max_nodes} values; send less data.")
        if depth > max_depth:
            raise UntrustedJSONError(
                f"{what} is nested more than {max_depth} levels deep; flatten it."
            )
        where = f" at {path}" if path else ""
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                raise UntrustedJSONError(f"{what}{where} {problem}.")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise UntrustedJSONError(f"{what}{where} is not a finite number (NaN or infinity).")
        elif isinstance(item, bool | int) or item is None:
            continue
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise UntrustedJSONError(f"{what}{where} has a non-string key {key!r}.")
                problem = _string_problem(key)
                if problem:
                    raise UntrustedJSONError(f"{what}{where} has a key that {problem}.")
                stack.append((child, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(item, list | tuple):
            for index, child in enumerate(item):
                stack.append((child, depth + 1, f"{path}.{index}" if path else str(index)))
        else:
            raise UntrustedJSONError(f"{what}{where} is not JSON data ({type(item).__name__}).")


__all__ = ["MAX_DEPTH", "MAX_NODES", "UntrustedJSONError", "check_value", "parse_json"]
