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

import functools
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import psycopg
from django.db import connections
from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)

CACHED = 512
"""Statements kept (the least recently used goes first)."""

_COMPILED: OrderedDict[Hashable, Any] = OrderedDict()
"""Compiled statements by key: `(sql, params)` of `compiled`, `ModelStatement`s of
`compiled_model`."""


def compiled(
    key: Hashable | None, build: Callable[[], tuple[str, tuple[Any, ...]]]
) -> tuple[str, tuple[Any, ...]]:
    """`build()` (the SQL and its parameters), compiled once for `key` (None: every
    time). `key` must name everything the statement depends on."""
    if key is None:
        return build()
    found: tuple[str, tuple[Any, ...]] = _cached(key, build)
    return found


_LOCK = threading.Lock()
"""Held while the cache is read or changed: request threads share it, and one thread's
eviction between another's read and its `move_to_end` raised `KeyError` (a build runs
outside it; two threads that build one key at once keep the later)."""


def _cached(key: Hashable, build: Callable[[], Any]) -> Any:
    with _LOCK:
        found = _COMPILED.get(key)
        if found is not None:
            _COMPILED.move_to_end(key)
            return found
    built = build()
    with _LOCK:
        _COMPILED[key] = built
        while len(_COMPILED) > CACHED:
            _COMPILED.popitem(last=False)
    return built


def stand_ins_taken(params: Collection[Any], stand_ins: Collection[Any]) -> tuple[Any, ...]:
    """`params` as a tuple, checked to take each of `stand_ins` (values a statement is
    compiled with, each call's own put in their place by `bound`); `RuntimeError` for a
    stand-in the statement does not take as it is (left out, or changed by a lookup)."""
    params = tuple(params)
    missing = [s for s in stand_ins if not any(_same(p, s) for p in params)]
    if missing:
        raise RuntimeError(f"The statement does not take its stand-ins {missing!r} as they are.")
    return params


def _same(param: Any, stand_in: Any) -> bool:
    return type(param) is type(stand_in) and param == stand_in


def bound(
    statement: tuple[str, tuple[Any, ...]], values: Mapping[Any, Any]
) -> tuple[str, tuple[Any, ...]]:
    """`statement` with each parameter that is a stand-in (a key of `values`, text or a
    UUID) replaced by its value."""
    sql, params = statement
    return sql, tuple(values.get(p, p) if isinstance(p, str | uuid.UUID) else p for p in params)


@dataclass(frozen=True, slots=True)
class ModelStatement(Generic[M]):
    """A queryset of one model (with annotations, no related models) compiled once: its
    SQL and parameters, and how its rows become instances, as Django's `ModelIterable`
    makes them (the model's columns, then each annotation; each column's converters)."""

    sql: str
    params: tuple[Any, ...]
    model: type[M]
    database: str
    fields: tuple[str, ...]
    columns: slice
    annotations: tuple[tuple[str, int], ...]
    converters: tuple[tuple[int, tuple[Callable[..., Any], ...], Any], ...]


def compiled_model(
    key: Hashable, build: Callable[[], QuerySet[M]], *, stand_ins: Collection[Any] = ()
) -> ModelStatement[M]:
    """`build()`'s queryset compiled once for `key` (which must name everything it depends
    on besides `stand_ins`, the values each call puts its own in place of: `models`).

    Hand-written: Django compiles a queryset each time it runs, which for the visibility
    rules of the protocol's lookups costs more server CPU than Postgres spends running
    them, and has no cache of compiled statements; this reads the compiler's results as
    `ModelIterable` does (Django 5.2's `select`, `klass_info`, `annotation_col_map` and
    `get_converters`, checked by `tests/reviews/test_statements.py`)."""
    return _cached(key, lambda: _compile_model(build(), stand_ins))  # type: ignore[no-any-return]


def _compile_model(queryset: QuerySet[M], stand_ins: Collection[Any]) -> ModelStatement[M]:
    compiler = queryset.query.get_compiler(using=queryset.db)
    sql, params = compiler.as_sql()
    klass_info = compiler.klass_info
    if klass_info is None or klass_info.get("related_klass_infos"):
        raise RuntimeError("compiled_model reads one model's rows, without related models.")
    select = compiler.select
    first, last = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    converters = compiler.get_converters([column[0] for column in select])
    return ModelStatement(
        sql=sql,
        params=stand_ins_taken(params, stand_ins),
        model=klass_info["model"],
        database=queryset.db,
        fields=tuple(column[0].target.attname for column in select[first:last]),
        columns=slice(first, last),
        annotations=tuple(compiler.annotation_col_map.items()),
        converters=tuple(
            (position, tuple(funcs), expression)
            for position, (funcs, expression) in converters.items()
        ),
    )


def models(
    statement: ModelStatement[M], values: Mapping[Any, Any], *, prepared: bool = False
) -> list[M]:
    """The instances `statement` reads with `values` in place of its stand-ins (`bound`;
    `prepared` as for `fetch`), each with its annotations, as the queryset gives them."""
    rows = fetch(
        statement.database, bound((statement.sql, statement.params), values), prepared=prepared
    )
    connection = connections[statement.database]
    found = []
    for fetched in rows:
        row = list(fetched)
        for position, funcs, expression in statement.converters:
            for func in funcs:
                row[position] = func(row[position], expression, connection)
        instance = statement.model.from_db(
            statement.database, list(statement.fields), row[statement.columns]
        )
        for name, position in statement.annotations:
            setattr(instance, name, row[position])
        found.append(instance)
    return found


def fetch(
    database: str, statement: tuple[str, tuple[Any, ...]], *, prepared: bool = False
) -> list[tuple[Any, ...]]:
    """The rows of `statement` (counted in Django's query log and run through the
    connection's execute wrappers, as any cursor's).

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
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as bound_cursor:

        def execute(sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
            return bound_cursor.execute(sql, params, prepare=prepare)

        # Through the connection's execute wrappers, as Django's own cursors are.
        wrapped: Callable[..., Any] = execute
        for wrapper in reversed(connection.execute_wrappers):
            wrapped = functools.partial(wrapper, wrapped)
        wrapped(sql, params, False, {"connection": connection, "cursor": bound_cursor})
        rows = bound_cursor.fetchall()
    if connection.queries_logged:  # counted as Django's own cursors are
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows


__all__ = [
    "CACHED",
    "ModelStatement",
    "bound",
    "compiled",
    "compiled_model",
    "fetch",
    "models",
    "stand_ins_taken",
]
