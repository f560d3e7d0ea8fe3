"""The bulk path: clones of real threads, written with `COPY` and `INSERT ... SELECT`.

A template is one thread the runtime wrote (`bench.scale.sample`), captured row for row
into the `bench_scale` schema (`tpl_<table>`, with its tokens in `bench_scale.templates`).
A clone is the template's rows with every token replaced by the clone's own
(`bench.scale.recipe.tokens`), every timestamp shifted by the same interval, and the
review item's id set to the clone's. Python computes each clone's tokens with the
product's functions and `COPY`s them into `bench_scale.clones`; one `INSERT ... SELECT`
per table and template then writes every clone of a batch, so Postgres does the
heavy lifting (about a million rows a minute here). Identity columns other than the item's
id take their defaults, as the runtime's inserts do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from bench.scale import recipe

SCHEMA = "bench_scale"
_ITEMS = "item_id IN (SELECT id FROM bw_review_item WHERE thread_id = %(thread)s)"
TABLES: tuple[tuple[str, str], ...] = (
    ("bw_thread", "id = %(thread)s"),
    ("bw_run", "thread_id = %(thread)s"),
    ("bw_checkpoint", "thread_id = %(thread)s"),
    ("bw_checkpoint_blob", "thread_id = %(thread)s"),
    ("bw_checkpoint_write", "thread_id = %(thread)s"),
    ("bw_run_event", "thread_id = %(thread)s"),
    ("bw_tool_execution", "thread_id = %(thread)s"),
    ("bw_review_item", "thread_id = %(thread)s"),
    ("bw_review_decision", _ITEMS),
    ("bw_review_approval", _ITEMS),
    ("bw_review_audit", "thread_ref = %(thread)s"),
    ("bw_review_outbox", _ITEMS),
)
"""Every table a thread has rows in, in an order that satisfies the foreign keys, and
how a thread's rows are found there."""

ITEM_ID = {
    ("bw_review_item", "id"),
    ("bw_review_decision", "item_id"),
    ("bw_review_approval", "item_id"),
    ("bw_review_audit", "item_id"),
    ("bw_review_outbox", "item_id"),
}
"""Columns that hold the thread's review item id (the clone's own, not the template's)."""
ITEM_REF = {("bw_review_audit", "item_ref")}
"""Columns that hold it as text."""
_CASTS = {"uuid": "uuid", "jsonb": "jsonb", "json": "json"}
_TEXT = {"text", "character varying", "uuid", "jsonb", "json"}


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    identity: bool


def columns(conn: psycopg.Connection[Any], table: str) -> list[Column]:
    rows = conn.execute(
        "SELECT column_name, data_type, is_identity = 'YES' OR coalesce(column_default, '') "
        "LIKE 'nextval%%' FROM information_schema.columns WHERE table_schema = 'public' "
        "AND table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [Column(*row) for row in rows]


def read_base(conn: psycopg.Connection[Any], thread_id: str) -> recipe.Base:
    """The base values of a thread the runtime wrote, read from its rows."""
    graph = conn.execute("SELECT graph FROM bw_thread WHERE id = %s", (thread_id,)).fetchone()
    if graph is None:
        raise LookupError(f"no thread {thread_id!r}")
    runs = conn.execute(
        "SELECT id::text, input FROM bw_run WHERE thread_id = %s ORDER BY created_at, kind DESC",
        (thread_id,),
    ).fetchall()
    checkpoints = conn.execute(
        "SELECT checkpoint_id FROM bw_checkpoint WHERE thread_id = %s AND ns = '' ORDER BY seq",
        (thread_id,),
    ).fetchall()
    items = conn.execute(
        "SELECT id FROM bw_review_item WHERE thread_id = %s", (thread_id,)
    ).fetchall()
    decisions = conn.execute(
        "SELECT client_decision_id FROM bw_review_decision WHERE "
        + _ITEMS.replace("%(thread)s", "%s")
        + " ORDER BY created_at",
        (thread_id,),
    ).fetchall()
    if len(items) != 1:
        raise ValueError(f"thread {thread_id!r} has {len(items)} review items, not one")
    start = json.loads(runs[0][1])
    return recipe.Base(
        graph=graph[0],
        decided=bool(decisions),
        thread_id=thread_id,
        customer=start["customer"],
        order=start["order"],
        run_ids=tuple(r[0] for r in runs),
        checkpoint_ids=tuple(c[0] for c in checkpoints),
        client_decision_ids=tuple(d[0] for d in decisions),
        item_id=int(items[0][0]),
    )


def _ident(*names: str) -> sql.Composable:
    return sql.Identifier(*names)


def prepare(conn: psycopg.Connection[Any]) -> None:
    """The staging schema: an empty copy of every table for templates, and the clone list."""
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(_ident(SCHEMA)))
    for table, _ in TABLES:
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (tpl text NOT NULL, LIKE {} INCLUDING DEFAULTS)"
            ).format(_ident(SCHEMA, f"tpl_{table}"), _ident(table))
        )
    conn.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (tpl text PRIMARY KEY, thread_id text NOT NULL, "
            "created_at timestamptz NOT NULL, tokens text[] NOT NULL)"
        ).format(_ident(SCHEMA, "templates"))
    )
    conn.execute(
        sql.SQL(
            "CREATE UNLOGGED TABLE IF NOT EXISTS {} (tpl text NOT NULL, i bigint NOT NULL, "
            "item_id bigint NOT NULL, shift interval NOT NULL, v text[] NOT NULL)"
        ).format(_ident(SCHEMA, "clones"))
    )


def capture(conn: psycopg.Connection[Any], thread_id: str) -> str:
    """Keep the rows of `thread_id` as the template of its kind; the template's name."""
    base = read_base(conn, thread_id)
    name = recipe.kind(base.graph, base.decided)
    tokens = recipe.tokens(base)
    with conn.transaction():
        for table, where in TABLES:
            target = _ident(SCHEMA, f"tpl_{table}")
            conn.execute(sql.SQL("DELETE FROM {} WHERE tpl = %s").format(target), (name,))
            conn.execute(
                sql.SQL("INSERT INTO {} SELECT %(tpl)s, t.* FROM {} t WHERE ").format(
                    target, _ident(table)
                )
                + sql.SQL(where),
                {"tpl": name, "thread": thread_id},
            )
        created = conn.execute(
            "SELECT created_at FROM bw_thread WHERE id = %s", (thread_id,)
        ).fetchone()
        conn.execute(
            sql.SQL(
                "INSERT INTO {} VALUES (%s, %s, %s, %s) ON CONFLICT (tpl) DO UPDATE SET "
                "thread_id = EXCLUDED.thread_id, created_at = EXCLUDED.created_at, "
                "tokens = EXCLUDED.tokens"
            ).format(_ident(SCHEMA, "templates")),
            (name, thread_id, created[0] if created else None, tokens),
        )
    text = _template_text(conn, name)
    missing = [t for t in tokens if t not in text]
    if missing:
        raise ValueError(
            f"template {name}: tokens {missing} derived by bench.scale.recipe do not occur in "
            "its rows; the recipe no longer matches what the runtime writes"
        )
    return name


def _template_text(conn: psycopg.Connection[Any], name: str) -> str:
    parts = []
    for table, _ in TABLES:
        rows = conn.execute(
            sql.SQL("SELECT t::text FROM {} t WHERE tpl = %s").format(
                _ident(SCHEMA, f"tpl_{table}")
            ),
            (name,),
        ).fetchall()
        parts.extend(r[0] for r in rows)
    return "\n".join(parts)


def _expression(
    table: str, column: Column, values: Sequence[str | None], tokens: list[str]
) -> sql.Composable:
    ref = sql.SQL("t.") + _ident(column.name)
    if (table, column.name) in ITEM_ID:
        return sql.SQL("c.item_id")
    if (table, column.name) in ITEM_REF:
        return sql.SQL("c.item_id::text")
    if column.type == "timestamp with time zone":
        return ref + sql.SQL(" + c.shift")
    if column.type not in _TEXT:
        return ref
    present = [k for k, token in enumerate(tokens) if any(v and token in v for v in values)]
    if not present:
        return ref
    expr: sql.Composable = ref + sql.SQL("::text")
    for k in present:
        expr = sql.SQL("replace({}, {}, c.v[{}])").format(
            expr, sql.Literal(tokens[k]), sql.Literal(k + 1)
        )
    cast = _CASTS.get(column.type)
    return sql.SQL("({})::{}").format(expr, sql.SQL(cast)) if cast else expr


def insert_statements(conn: psycopg.Connection[Any], name: str) -> list[sql.Composed]:
    """One `INSERT ... SELECT` per table that writes every clone of template `name`
    listed in `bench_scale.clones`."""
    row = conn.execute(
        sql.SQL("SELECT tokens FROM {} WHERE tpl = %s").format(_ident(SCHEMA, "templates")),
        (name,),
    ).fetchone()
    if row is None:
        raise LookupError(f"no template {name!r}: capture one first")
    tokens = list(row[0])
    statements = []
    for table, _ in TABLES:
        cols = [c for c in columns(conn, table) if not c.identity or (table, c.name) in ITEM_ID]
        source = _ident(SCHEMA, f"tpl_{table}")
        values: dict[str, list[str | None]] = {c.name: [] for c in cols}
        if (
            conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE tpl = %s").format(source), (name,)
            ).fetchone()[0]
            == 0
        ):
            continue
        for c in cols:
            if c.type in _TEXT:
                values[c.name] = [
                    r[0]
                    for r in conn.execute(
                        sql.SQL("SELECT {}::text FROM {} WHERE tpl = %s").format(
                            _ident(c.name), source
                        ),
                        (name,),
                    ).fetchall()
                ]
        exprs = [_expression(table, c, values[c.name], tokens) for c in cols]
        statements.append(
            sql.SQL(
                "INSERT INTO {} ({}) SELECT {} FROM {} t JOIN {} c ON c.tpl = t.tpl "
                "WHERE t.tpl = {} ORDER BY c.i"
            ).format(
                _ident(table),
                sql.SQL(", ").join(_ident(c.name) for c in cols),
                sql.SQL(", ").join(exprs),
                source,
                _ident(SCHEMA, "clones"),
                sql.Literal(name),
            )
        )
    return statements


@dataclass(frozen=True, slots=True)
class Clone:
    """One thread to write: the template's name, the clone's base values, and when its
    thread was created."""

    i: int
    template: str
    base: recipe.Base
    created_at: datetime


def write(
    conn: psycopg.Connection[Any],
    clones: Iterable[Clone],
    statements: dict[str, list[sql.Composed]],
    template_times: dict[str, datetime],
) -> int:
    """Write `clones` in one transaction (COPY their tokens, then the INSERTs); how many."""
    clones_table = _ident(SCHEMA, "clones")
    n = 0
    used: set[str] = set()
    with conn.transaction():
        conn.execute(sql.SQL("TRUNCATE {}").format(clones_table))
        with conn.cursor().copy(
            sql.SQL("COPY {} (tpl, i, item_id, shift, v) FROM STDIN").format(clones_table)
        ) as copy:
            for clone in clones:
                shift = clone.created_at - template_times[clone.template]
                copy.write_row(
                    (clone.template, clone.i, clone.base.item_id, shift, recipe.tokens(clone.base))
                )
                used.add(clone.template)
                n += 1
        for name in sorted(used):
            for statement in statements[name]:
                conn.execute(statement)
        conn.execute(sql.SQL("TRUNCATE {}").format(clones_table))
    return n


def template_times(conn: psycopg.Connection[Any]) -> dict[str, datetime]:
    rows = conn.execute(
        sql.SQL("SELECT tpl, created_at FROM {}").format(_ident(SCHEMA, "templates"))
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def reserve_item_ids(conn: psycopg.Connection[Any], n: int) -> int:
    """Take `n` review item ids from the table's sequence; the first of them."""
    row = conn.execute(
        "SELECT setval(pg_get_serial_sequence('bw_review_item', 'id'), "
        "nextval(pg_get_serial_sequence('bw_review_item', 'id')) + %s - 1) - %s + 1",
        (n, n),
    ).fetchone()
    return int(row[0])


def thread_rows(conn: psycopg.Connection[Any], thread_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the thread, per table, without what differs between two writes of the
    same thread (identity columns other than the item id, timestamps), sorted."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table, where in TABLES:
        cols = [
            c
            for c in columns(conn, table)
            if (not c.identity or (table, c.name) in ITEM_ID)
            and c.type != "timestamp with time zone"
        ]
        rows = conn.execute(
            sql.SQL("SELECT {} FROM {} t WHERE ").format(
                sql.SQL(", ").join(sql.SQL("t.{}::text").format(_ident(c.name)) for c in cols),
                _ident(table),
            )
            + sql.SQL(where),
            {"thread": thread_id},
        ).fetchall()
        out[table] = sorted(
            (dict(zip((c.name for c in cols), row, strict=True)) for row in rows),
            key=lambda r: json.dumps(r, sort_keys=True),
        )
    return out


def delete_thread(conn: psycopg.Connection[Any], thread_id: str) -> None:
    """Remove every row of the thread (the tables in reverse order)."""
    with conn.transaction():
        for table, where in reversed(TABLES):
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE ").format(_ident(table)) + sql.SQL(where),
                {"thread": thread_id},
            )
