"""The context of a run: the graph's `runtime.context`, kept with the run.

A context is a JSON object of plain JSON values (no engine types, no tuples), at most
`MAX_CONTEXT_BYTES` of JSON and `MAX_CONTEXT_DEPTH` levels deep: it comes from callers,
commands and forms, and every resume of the thread hands it to the graph again. A run
started for a user carries that user's `user_id` and `username` (the requester), set from
the user and never from what the caller passed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from beamweaver_core.checkpoint import serde

MAX_CONTEXT_BYTES = 64 * 1024
"""The largest context a run carries, as JSON text (a reviewer's answer has the same limit)."""

MAX_CONTEXT_DEPTH = 32
"""Nesting of objects and arrays in a context."""


REQUESTER_KEYS = ("user_id", "username")
"""The context keys naming the requester (`requester`)."""


def requester(user: Any) -> dict[str, Any]:
    """The context keys naming the user who requested a run (none without a user)."""
    if getattr(user, "pk", None) is None:
        return {}
    return dict(zip(REQUESTER_KEYS, (user.pk, user.get_username()), strict=True))


def run_context(context: Mapping[str, Any] | None, user: Any = None) -> dict[str, Any] | None:
    """`context` checked as a run's context, with `user` as its requester; `None` when
    there is neither. Raises `ValueError` saying what is wrong and where."""
    if context is not None and not isinstance(context, Mapping):
        raise ValueError(
            "The context of a run must be a JSON object (a dict), got "
            f"{type(context).__name__}: {context!r:.100}."
        )
    merged = {**(context or {}), **requester(user)}
    if context is None and not merged:
        return None
    _check_plain(merged)
    try:
        payload = serde.to_jsonable(merged, ("context",))
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    size = len(json.dumps(payload, ensure_ascii=False).encode())
    if size > MAX_CONTEXT_BYTES:
        raise ValueError(
            f"The context of a run is {size} bytes of JSON; at most {MAX_CONTEXT_BYTES} are "
            "allowed. Pass identifiers and let the graph look the rest up."
        )
    return dict(payload)


def _check_plain(context: Mapping[str, Any]) -> None:
    stack: list[tuple[Any, str, int]] = [(context, "context", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_CONTEXT_DEPTH:
            raise ValueError(
                f"The context of a run is nested more than {MAX_CONTEXT_DEPTH} levels deep "
                f"(at {path}); flatten it."
            )
        if isinstance(value, Mapping):
            if serde.TAG in value:
                raise ValueError(
                    f"The context of a run cannot use the reserved key {serde.TAG!r} (at "
                    f"{path}); rename it."
                )
            stack.extend((child, f"{path}.{key}", depth + 1) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(value))
        elif value is not None and not isinstance(value, str | int | float):
            raise ValueError(
                f"The context of a run must be plain JSON, but {path} is a "
                f"{type(value).__name__}: {value!r:.100}. Use objects (dicts), arrays (lists), "
                "strings, numbers, booleans and null only."
            )


__all__ = [
    "MAX_CONTEXT_BYTES",
    "MAX_CONTEXT_DEPTH",
    "REQUESTER_KEYS",
    "requester",
    "run_context",
]
