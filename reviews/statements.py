"""Statements of the serving paths compiled once per process and reused.

Building and compiling a queryset with visibility rules and EXISTS subqueries costs more
server CPU than Postgres spends running it (issue 16: the inbox push's counts and the
notification audience, several milliseconds each per interrupt). A caller that knows
everything the SQL depends on names it as `key`; the first call compiles the queryset
and later calls with the same key send the same text and parameters.

Planning some of them costs Postgres more than running them, too (the reviewers of the
notification audience: 1.4 ms of planning against 0.2 ms of execution, twice per review
round trip). Those are fetched `prepared`: bound on the server and prepared once per
connection, as the checkpointer's statements are. Only statements whose best plan does
not depend on their parameters' values (a key, an id) are prepared: a generic plan of
the inbox's filters could give up a partial index, so those are planned every time."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import psycopg
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


def fetch(
    database: str, statement: tuple[str, tuple[Any, ...]], *, prepared: bool = False
) -> list[tuple[Any, ...]]:
    """The rows of `statement` (counted in Django's query log, as any cursor's).

    `prepared`: bound on the server and prepared once per connection (with
    `BEAMWEAVER_DB_PREPARE=0`, behind a pooler that cannot keep prepared statements, only
    bound on the server), for a statement whose plan does not depend on its parameters'
    values (see the module's docstring)."""
    sql, params = statement
    connection = connections[database]
    if not prepared:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return rows
    connection.ensure_connection()
    prepare = "prepare_threshold" in connection.settings_dict["OPTIONS"]
    started = time.monotonic()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=prepare)
        rows = cursor.fetchall()
    if connection.queries_logged:  # counted as Django's own cursors are
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows


__all__ = ["CACHED", "compiled", "fetch"]
