"""The benchmark harness works: `python -m bench --quick` runs and records its results.

CI runs only this check. It never asserts on a timing or a ratio (the benchmarks are not
tests); it runs the configurations that need no database, in a subprocess, as a user would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ("linear_none", "linear_memory")
ENGINES = ("beamweaver", "langgraph")


def test_quick_mode_runs_both_engines_and_appends_complete_json_lines(tmp_path: Path) -> None:
    """Each engine runs each configuration once in its own process; every JSON line carries
    positive latencies, process memory, versions and machine facts; a summary line and the
    printed table close the run."""
    out = tmp_path / "quick.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", ",".join(CONFIGS), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,  # a bound on a hang, not a timing: a loaded machine is slow to start
        check=False,
    )
    assert done.returncode == 0, done.stderr

    records = [json.loads(line) for line in out.read_text().splitlines()]
    results = [r for r in records if r["kind"] == "result"]
    assert sorted((r["config"], r["engine"]) for r in results) == sorted(
        (config, engine) for config in CONFIGS for engine in ENGINES
    )
    for result in results:
        assert result["status"] == "ok", result
        assert result["mode"] == "quick"
        assert result["invoke_ms"]["n"] == result["params"]["threads"]
        for key in ("median", "p95", "p99"):
            assert result["invoke_ms"][key] > 0
            assert result["per_superstep_ms"][key] > 0
        assert result["supersteps_per_s"] > 0
        assert result["process"]["rss_peak_mb"] > 0
        assert {"python", "beamweaver", "langgraph", "psycopg"} <= set(result["env"]["versions"])
        assert {"cpu_model", "cores_logical", "ram_gb", "kernel"} <= set(result["env"]["machine"])

    summary = records[-1]
    assert summary["kind"] == "summary"
    assert summary["problems"] == []
    headline = [row for row in summary["rows"] if row["metric"] == "per super-step (median)"]
    assert [row["key"] for row in headline] == list(CONFIGS)
    for row in headline:
        assert row["beamweaver"] > 0 and row["langgraph"] > 0
        assert row["target"] == "ratio ≤ 0.25"
        assert row["result"] in ("pass", "FAIL")
    assert "| workload | metric | BeamWeaver | LangGraph | ratio | target | result |" in done.stdout


def test_realtime_rows_are_planned_and_pushed_frames_name_their_items() -> None:
    """The live-server workloads are in the plan with their targets (they need Postgres and
    a server, so CI does not run them), and the listener finds the review items a pushed
    inbox fragment names, whichever way the row is swapped."""
    from bench import plan
    from bench.live.listener import item_ids
    from bench.workloads.realtime_push import _first_frames

    live = {c.key: c for c in plan.CONFIGS if c.live}
    assert {"realtime_push_single", "realtime_decision_single", "realtime_inbox"} <= set(live)
    # Row 10b has no target of its own: it is what row 10 is judged against.
    judged = {key: c for key, c in live.items() if c is not plan.PROTOCOL_INPROCESS}
    assert all(c.engines == ("beamweaver",) and c.metrics[0].target for c in judged.values())
    assert any(m.target == plan.DURABLE_BOUND for m in plan.PROTOCOL.metrics)

    created = (
        '<li id="item-row-41" hx-swap-oob="delete"></li>'
        '<div hx-swap-oob="beforeend:#inbox-rows"><li id="item-row-41" class="row">x</li></div>'
        '<div id="inbox-counts" hx-swap-oob="true">(42)</div>'
    )
    moved = '<li id="item-row-7" class="row" hx-swap-oob="delete"></li><li id="item-row-12">'
    assert item_ids(created) == [41]
    assert item_ids(moved) == [7, 12]
    assert item_ids('<nav id="inbox-pager"></nav>') == []
    frames = [[10.0, 0, [41], 90], [11.0, 0, [41, 7], 80], [10.5, 1, [41], 90]]
    assert _first_frames(frames) == {(0, 41): 10.0, (0, 7): 11.0, (1, 41): 10.5}


def test_a_fresh_server_gets_the_benchmark_database_it_lacks() -> None:
    """On a fresh machine the benchmark database does not exist: `python -m bench`
    creates it on the server it is given and runs the Postgres rows, instead of marking
    them pending."""
    import uuid

    from bench import pg

    base = pg.use_embedded(ROOT) if not _has_env("BENCH_PG_DSN") else _env("BENCH_PG_DSN")
    url = pg.with_database(base, f"bench_smoke_{uuid.uuid4().hex[:8]}")
    assert pg.unreachable_reason(url) is not None  # not there yet
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench", "--quick", "--only", "floor", "--out", "/dev/null"],
            cwd=ROOT,
            env={**_environ(), "BENCH_PG_DSN": url},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "pending" not in done.stderr, done.stderr
        assert "INSERT 1 KB jsonb + COMMIT (median)" in done.stdout
        assert pg.unreachable_reason(url) is None
    finally:
        with pg.connect(pg.with_database(url, "postgres")) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{pg.database_of(url)}" WITH (FORCE)')


def test_without_a_reachable_server_the_embedded_postgres_is_used(monkeypatch: Any) -> None:
    """No `BENCH_PG_DSN` and nothing listening where the default points: the suite uses
    the product's embedded PostgreSQL, with its `bench` database, for itself and the
    processes it starts."""
    from bench import pg

    monkeypatch.setattr(pg, "DEFAULT_DSN", "postgresql://root@127.0.0.1:9/bench")
    monkeypatch.setenv("BENCH_PG_DSN", "")
    monkeypatch.delenv("BENCH_PG_DSN")

    assert pg.prepare_server(ROOT) is None

    url = _env("BENCH_PG_DSN")
    assert "127.0.0.1:9" not in url and pg.database_of(url) == "bench"
    with pg.connect(url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("bench",)


def _env(name: str) -> str:
    import os

    return os.environ[name]


def _has_env(name: str) -> bool:
    import os

    return bool(os.environ.get(name))


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)
