"""The query plans of every inbox and runtime path, as a regression check.

Each path (`PATHS`) runs once, as the product runs it, inside a transaction that is rolled
back (nothing it writes stays), with every statement it sends recorded at the psycopg
cursor (Django's cursors and the checkpointer's server-bound ones alike). Each distinct
statement is then `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`ed, again in a rolled-back
transaction, and judged:

- `seq_scan`: the plan reads one of the growing tables (`BIG_TABLES`) whole; on a table
  of a million rows that is a page that gets slower with every thread;
- `slow`: it took more than `SLOW_MS` (on the big database).

`python -m bench.scale plans` runs it on the big database and prints a table (or JSON);
`tests/bench/test_query_plans.py` runs it in CI on a few thousand rows with sequential
scans disabled (`enable_seqscan = off`), where a sequential scan that remains is one no
index can replace.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

BIG_TABLES = frozenset(
    {
        "bw_thread",
        "bw_run",
        "bw_run_event",
        "bw_checkpoint",
        "bw_checkpoint_blob",
        "bw_checkpoint_write",
        "bw_tool_execution",
        "bw_review_item",
        "bw_review_decision",
        "bw_review_audit",
        "bw_review_outbox",
        "bw_review_approval",
    }
)
"""Tables that grow with every thread (the rest grow with users, groups, workers)."""
SLOW_MS = 50.0
FULL_SHARE = 0.5
"""A scan that reads at least this share of a growing table's rows reads it whole, even
through an index (a count of everything, a sort of everything before a LIMIT)."""
MIN_ROWS = 1000
"""Tables smaller than this are not judged by share (a slice of them may be all)."""
SEARCH = "cust-0417"


@dataclass
class Statement:
    path: str
    sql: str
    params: Any
    server_bound: bool


@dataclass
class Verdict:
    path: str
    sql: str
    ms: float
    paths: list[str] = field(default_factory=list)
    """Every path that sent this statement (the first is `path`)."""
    seq_scans: list[str] = field(default_factory=list)
    full_scans: list[str] = field(default_factory=list)
    """Growing tables read (nearly) whole, with the share read: `bw_review_item 100%`."""
    nodes: list[str] = field(default_factory=list)
    shared_read: int = 0
    shared_hit: int = 0

    @property
    def slow(self) -> bool:
        return self.ms > SLOW_MS


class _Rollback(Exception):
    pass


@contextmanager
def recording(path: str, into: list[Statement]) -> Iterator[None]:
    """Record every statement any psycopg cursor executes meanwhile, then roll back."""
    import psycopg
    from django.db import transaction

    original = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        text = query if isinstance(query, str) else query.as_string(self)
        if not text.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "SET ")):
            bound = not isinstance(self, psycopg.ClientCursor)
            into.append(Statement(path, text, params, bound))
        return original(self, query, params, **kwargs)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        with transaction.atomic():
            yield
            raise _Rollback
    except _Rollback:
        pass
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]


def _normal(text: str) -> str:
    """The statement with its literals blanked, to tell repeated statements apart."""
    text = re.sub(r"'(?:[^']|'')*'", "?", text)
    text = re.sub(r"\b\d+\b", "?", text)
    return re.sub(r"\s+", " ", text).strip()


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _walk(child)


def _cap() -> int:
    from reviews.inbox import COUNT_CAP

    return COUNT_CAP


def _sizes() -> dict[str, float]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)", [sorted(BIG_TABLES)]
        )
        return {name: float(rows) for name, rows in cursor.fetchall()}


def _read(node: dict[str, Any]) -> float:
    """Rows a scan node looked at: returned, and thrown away by its filters."""
    seen = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
    seen += node.get("Rows Removed by Index Recheck", 0)
    return float(seen) * float(node.get("Actual Loops", 1))


def explain(statement: Statement, sizes: dict[str, float] | None = None) -> Verdict:
    """EXPLAIN ANALYZE `statement` in a rolled-back transaction."""
    import psycopg
    from django.db import connection, transaction

    connection.ensure_connection()
    kind = psycopg.Cursor if statement.server_bound else psycopg.ClientCursor
    plan: Any = None
    try:
        with transaction.atomic():
            with kind(connection.connection) as cursor:
                cursor.execute(
                    "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement.sql, statement.params
                )
                plan = cursor.fetchone()[0]
            raise _Rollback
    except _Rollback:
        pass
    top = (plan if isinstance(plan, list) else json.loads(plan))[0]
    nodes = list(_walk(top["Plan"]))
    # A count stopped at the inbox's cap reads at most that many entries at any size.
    bounded = f"LIMIT {_cap() + 1})" in " ".join(statement.sql.split())
    verdict = Verdict(statement.path, statement.sql, round(float(top["Execution Time"]), 3))
    for node in nodes:
        relation = node.get("Relation Name")
        label = node["Node Type"] + (f" on {relation}" if relation else "")
        if node.get("Index Name"):
            label += f" using {node['Index Name']}"
        verdict.nodes.append(label)
        if node["Node Type"] == "Seq Scan" and relation in BIG_TABLES:
            verdict.seq_scans.append(relation)
        rows = (sizes or {}).get(relation or "", 0.0)
        if (
            relation in BIG_TABLES
            and not bounded
            and rows >= MIN_ROWS
            and "Scan" in node["Node Type"]
        ):
            share = _read(node) / rows
            if share >= FULL_SHARE:
                verdict.full_scans.append(f"{relation} {share:.0%}")
    verdict.shared_read = int(top["Plan"].get("Shared Read Blocks", 0))
    verdict.shared_hit = int(top["Plan"].get("Shared Hit Blocks", 0))
    return verdict


def _people() -> tuple[Any, Any]:
    from django.contrib.auth.models import Permission, User

    reviewer = User.objects.create_user("plans-reviewer")
    manager = User.objects.create_user("plans-manager")
    review = Permission.objects.get(codename="review", content_type__app_label="reviews")
    manage = Permission.objects.get(codename="manage", content_type__app_label="reviews")
    reviewer.user_permissions.add(review)
    manager.user_permissions.add(review, manage)
    return User.objects.get(pk=reviewer.pk), User.objects.get(pk=manager.pk)


def _client(user: Any) -> Any:
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return client


def _get(user: Any, url: str) -> Callable[[], None]:
    def go() -> None:
        client = _client(user)
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code}")

    return go


def _decide(user: Any, item: Any) -> Callable[[], None]:
    def go() -> None:
        import uuid

        client = _client(user)
        data = {
            "interrupt_id": item.interrupt_id,
            "digest": item.digest,
            "client_decision_id": uuid.uuid4().hex,
            "d0-type": "approve",
            "d0-message": "",
        }
        response = client.post(f"/items/{item.pk}/decide/", data, HTTP_HX_REQUEST="true")
        if response.status_code != 200:
            raise RuntimeError(f"decide item {item.pk}: {response.status_code}")

    return go


def _engine_resume(thread_id: str) -> Callable[[], None]:
    def go() -> None:
        from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
        from beamweaver_core.models import Thread
        from beamweaver_core.runtime import registry

        graph = Thread.objects.get(pk=thread_id).graph
        compiled = registry.compiled_graph(graph, PostgresCheckpointer())
        compiled.resume(
            {"decisions": [{"type": "approve"}]}, {"configurable": {"thread_id": thread_id}}
        )

    return go


PATHS = (
    "inbox",
    "inbox (manager)",
    "inbox page 2,000",
    "search",
    "filters",
    "decided items",
    "item page",
    "thread page",
    "thread page (manager)",
    "audit",
    "decision POST",
    "engine resume",
    "claim_next_run",
    "lease sweeper",
    "review sweeper (deadlines, outbox)",
    "prune_thread",
    "metrics scrape",
)


def paths_names() -> tuple[str, ...]:
    """The names of the checked paths."""
    return PATHS


def paths() -> dict[str, Callable[[], None]]:
    """Every path whose queries are checked, by name (needs a pending item)."""
    from beamweaver_core.checkpoint.pruning import prune_thread
    from beamweaver_core.observability.collectors import DatabaseCollector
    from beamweaver_core.runtime import queue
    from reviews import sweeper
    from reviews.models import ReviewItem

    reviewer, manager = _people()
    item = ReviewItem.objects.filter(status="pending").order_by("-created_at", "-id").first()
    if item is None:
        raise LookupError("the database has no pending review item to check the pages with")
    done = ReviewItem.objects.filter(status="decided").order_by("-created_at").first()
    thread = (done or item).thread_id
    found = {
        "inbox": _get(reviewer, "/"),
        "inbox (manager)": _get(manager, "/"),
        "inbox page 2,000": _get(reviewer, "/?page=2000"),
        "search": _get(reviewer, f"/?q={SEARCH}"),
        "filters": _get(reviewer, "/?graph=scale_refund&tool=issue_refund"),
        "decided items": _get(reviewer, "/?status=decided"),
        "item page": _get(reviewer, f"/items/{item.pk}/"),
        "thread page": _get(reviewer, f"/threads/{thread}/"),
        "thread page (manager)": _get(manager, f"/threads/{thread}/"),
        "audit": _get(manager, "/audit/"),
        "decision POST": _decide(reviewer, item),
        "engine resume": _engine_resume(item.thread_id),
        "claim_next_run": lambda: queue.claim_next_run("plans", 30.0) and None,
        "lease sweeper": lambda: queue.sweep_expired_leases(3) and None,
        "review sweeper (deadlines, outbox)": lambda: sweeper.sweep_once() and None,
        "prune_thread": lambda: prune_thread(thread, 1, dry_run=True) and None,
        "metrics scrape": lambda: list(DatabaseCollector().collect()) and None,
    }
    assert tuple(found) == PATHS
    return found


def check(only: list[str] | None = None) -> list[Verdict]:
    """Record every path's statements and EXPLAIN each distinct one, in this process."""
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    statements: list[Statement] = []
    with recording("setup", []):
        chosen = {name: go for name, go in paths().items() if not only or name in only}
        for name, go in chosen.items():
            recorded: list[Statement] = []
            with recording(name, recorded):
                go()
            statements.extend(recorded)
        seen: dict[str, Verdict] = {}
        sizes = _sizes()
        for statement in statements:
            key = _normal(statement.sql)
            if key in seen:
                if statement.path not in seen[key].paths:
                    seen[key].paths.append(statement.path)
                continue
            seen[key] = explain(statement, sizes)
            seen[key].paths.append(statement.path)
        verdicts = list(seen.values())
    return verdicts


def render(verdicts: list[Verdict]) -> str:
    lines = ["| path | ms | reads whole | plan | statement |", "|---|---:|---|---|---|"]
    for v in sorted(verdicts, key=lambda v: -v.ms):
        flag = ", ".join([*(f"{t} (seq scan)" for t in v.seq_scans), *v.full_scans])
        plan = "; ".join(dict.fromkeys(v.nodes))[:160]
        text = re.sub(r"\s+", " ", v.sql)[:140].replace("|", "\\|")
        lines.append(f"| {v.path} | {v.ms:.2f} | {flag} | {plan} | `{text}` |")
    return "\n".join(lines)


def main(url: str, *, as_json: bool) -> int:
    """`python -m bench.scale plans`: in a process configured on `url`."""
    from bench.scale import fixture

    done = subprocess.run(
        [sys.executable, "-m", "bench.scale.plans", "--json" if as_json else "--table"],
        env=fixture.env(url),
        check=False,
    )
    return done.returncode


def _inner(argv: list[str]) -> int:
    import django

    django.setup()
    verdicts = check()
    if "--json" in argv:
        print(json.dumps([{**asdict(v), "slow": v.slow} for v in verdicts]))
    else:
        print(render(verdicts))
    bad = [v for v in verdicts if v.seq_scans or v.full_scans or v.slow]
    for v in bad:
        print(
            f"plan problem: {v.path}: {v.ms} ms, reads {v.seq_scans + v.full_scans}",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_inner(sys.argv[1:]))
