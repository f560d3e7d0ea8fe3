"""Statements of the serving paths compiled once per process and reused.

Building and compiling a queryset with visibility rules and EXISTS subqueries costs more
server CPU than Postgres spends running it (issue 16: the inbox push's counts and the
notification audience, several milliseconds each per interrupt). A caller that knows
everything the SQL depends on names it as `key`; the first call compiles the queryset
and later calls with the same key send the same text and parameters."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from django.db import connections

CACHED = 512
"""Statements kept (the least recently used goes first)."""

_COMPILED: OrderedDict[Hashable, tuple[str, tuple[Any, ...]]] = OrderedDict()


def compiled(
    key: Hashable | None, build: Callable[[], tuple[str, tuple[Any, ...]]]
) -> tuple[str, tuple[Any, ...]]:
    """`build()` (the SQL and its parameters), compiled once for `key` (None: every
    time). `key` must name everything the statement depends on."""
    if key is None:
        return build()
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = build()
        while len(_COMPILED) > CACHED:
            _COMPILED.popitem(last=False)
    else:
        _COMPILED.move_to_end(key)
    return found


def fetch(database: str, statement: tuple[str, tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows of `statement` (counted in Django's query log, as any cursor's)."""
    sql, params = statement
    with connections[database].cursor() as cursor:
        cursor.execute(sql, params)
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows


__all__ = ["CACHED", "compiled", "fetch"]
