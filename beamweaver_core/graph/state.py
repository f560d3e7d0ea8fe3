"""State schemas: reducers declared with `Annotated[T, reducer]` on a `TypedDict`."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin, get_type_hints

Reducer = Callable[[Any, Any], Any]


def schema_reducers(schema: type) -> tuple[frozenset[str], dict[str, Reducer]]:
    """The keys of a `TypedDict` schema and the reducers of its `Annotated` fields."""
    hints = get_type_hints(schema, include_extras=True)
    reducers: dict[str, Reducer] = {}
    for key, hint in hints.items():
        if get_origin(hint) is typing.Annotated:
            for meta in reversed(get_args(hint)[1:]):
                if callable(meta):
                    reducers[key] = meta
                    break
    return frozenset(hints), reducers


__all__ = ["Reducer", "schema_reducers"]
