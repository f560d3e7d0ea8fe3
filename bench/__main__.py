"""`python -m bench`: the side-by-side suite, BeamWeaver vs LangGraph, in one run.

    python -m bench                  # --full: the published table (about 50 minutes)
    python -m bench --quick          # CI-sized smoke run: tiny sizes, checks the harness
    python -m bench --only linear,hitl --reps 5
    python -m bench --only linear_memory,hitl_postgres --reps 1 --profile 25
    python -m bench --list           # configurations and their sizes
    python -m bench --table-from bench/results/published.jsonl

Prints the table (Markdown) on stdout, progress on stderr, and appends every run's JSON
line plus one summary line to `bench/results/<date>.jsonl` (or `--out`). Exits non-zero
when a run failed or returned no headline number; timings are never judged by the exit
code, only reported.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import bw_database, env, pg, plan, report
from bench.harness import Job, run_all, schedule
from bench.live import database as live_database
from bench.live import server as live_server

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes, 1 rep: a harness check")
    size.add_argument("--full", action="store_true", help="published sizes (the default)")
    parser.add_argument("--only", default="", help="comma-separated configuration prefixes")
    parser.add_argument("--reps", type=int, help="repetitions (default: 3 full, 1 quick)")
    parser.add_argument("--out", type=Path, help="JSON lines file to append to")
    parser.add_argument("--profile", type=int, default=0, metavar="K", help="cProfile, top K")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    parser.add_argument("--table-from", type=Path, metavar="JSONL", help="table of a past run")
    return parser


def _list(configs: list[plan.Config]) -> None:
    for config in configs:
        if config.pending:
            print(f"{config.key:24} {config.pending}")
            continue
        print(f"{config.key:24} {config.workload:17} quick={config.quick} full={config.full}")


def _table_from(path: Path) -> int:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    results = [r for r in records if r.get("kind") == "result"]
    if not results:
        print(f"{path}: no results", file=sys.stderr)
        return 1
    last_run = results[-1]["run_id"]
    runs = [r for r in results if r["run_id"] == last_run]
    keys = {r["config"] for r in runs}
    configs = [c for c in plan.CONFIGS if c.key in keys or c.pending]
    print(report.render(report.build_rows(configs, report.group(runs))))
    return 0


def _blocker(configs: list[plan.Config]) -> Any:
    """Decide once, before any run, which jobs cannot run here and why."""
    postgres_reason = bw_reason = live_reason = redis_reason = None
    if any(c.postgres or c.live for c in configs):
        postgres_reason = pg.prepare_server(env.ROOT)
    if postgres_reason is None and any(c.live for c in configs):
        logging.getLogger("bench").info("preparing the live server's database (migrate)")
        live_reason = live_database.prepare_template()
    if any(c.redis for c in configs):
        redis_reason = live_server.redis_unreachable_reason()
    if postgres_reason is None and any(c.postgres and "beamweaver" in c.engines for c in configs):
        logging.getLogger("bench").info("preparing %s (migrate)", pg.bw_dsn())
        bw_reason = bw_database.prepare()

    def blocked(job: Job) -> str | None:
        if job.config.live:
            return postgres_reason or live_reason or (redis_reason if job.config.redis else None)
        if not job.config.postgres:
            return None
        if postgres_reason is not None:
            return postgres_reason
        if job.engine == "beamweaver":
            return bw_reason
        return None

    return blocked, postgres_reason


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        configs = plan.select(args.only)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.list:
        _list(configs)
        return 0
    if args.table_from:
        return _table_from(args.table_from)

    quick = args.quick
    reps = args.reps or (1 if quick else 3)
    mode = "quick" if quick else "full"
    run_id = uuid.uuid4().hex[:12]
    started = datetime.now(UTC)
    out = args.out or RESULTS_DIR / f"{started:%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)

    load_before = env.load()
    blocked, postgres_reason = _blocker(configs)
    facts: dict[str, Any] = {"versions": env.versions(), "machine": env.machine()}
    if postgres_reason is None and any(c.postgres or c.live for c in configs):
        facts["postgres"] = pg.server_facts()
    monitor = env.LoadMonitor().start()
    records: list[dict[str, Any]] = []

    with out.open("a") as sink:

        def keep(job: Job, result: dict[str, Any]) -> None:
            record = {
                "kind": "result",
                "run_id": run_id,
                "mode": mode,
                "config": job.config.key,
                "rep": job.rep,
                **result,
                "env": facts,
            }
            records.append(record)
            sink.write(json.dumps(record) + "\n")
            sink.flush()

        wall0 = time.perf_counter()
        run_all(
            schedule(configs, reps),
            quick=quick,
            profile=args.profile,
            timeout=args.timeout,
            blocked=blocked,
            on_result=keep,
        )
        load: dict[str, Any] = {
            "before": load_before,
            "after": env.load(),
            "during": monitor.stop(),
            "wall_s": round(time.perf_counter() - wall0, 1),
        }
        results = report.group(records)
        rows = report.build_rows(configs, results)
        problems = report.headline_problems(configs, results)
        summary = {
            "kind": "summary",
            "run_id": run_id,
            "mode": mode,
            "reps": reps,
            "only": args.only,
            "started": started.isoformat(timespec="seconds"),
            "env": facts,
            "load": load,
            "rows": report.row_dicts(rows),
            "problems": problems,
        }
        sink.write(json.dumps(summary) + "\n")

    machine = facts["machine"]
    print(
        f"BeamWeaver {facts['versions']['beamweaver']} vs LangGraph "
        f"{facts['versions']['langgraph']} · {mode}, {reps} rep(s) · {machine['cpu_model']}, "
        f"{machine['cores_logical']} cores, {machine['ram_gb']} GB · Postgres "
        f"{facts.get('postgres', {}).get('server_version', 'n/a')}"
    )
    during = load["during"]
    foreign = ", ".join(f"{label} {spent} s" for label, spent in during["foreign_top"][:3])
    print(
        f"load1: before {load_before['load1']}, during {during['load1_min']}.."
        f"{during['load1_max']} (median {during['load1_median']}), after "
        f"{load['after']['load1']} · CPU-s in the {load['wall_s']} s run: {during['cpu_s']}"
        f"{f' (foreign: {foreign})' if foreign else ''} · results: {out}\n"
    )
    if quick:
        print("quick mode: tiny sizes to check the harness; these numbers are not a benchmark.\n")
    print(report.render(rows))
    if args.profile:
        print(report.render_profiles(results))
    for problem in problems:
        print(f"harness problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
