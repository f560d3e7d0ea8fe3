"""`python -m bench.hostile`: the on-demand hostile group (reliability.md part C, cases
13-27, 49, 50), bounded in time, loopback only.

    python -m bench.hostile                 # every case, full sizes (the published figures)
    python -m bench.hostile --quick         # every case, small sizes (a harness check)
    python -m bench.hostile --only 13,15,23 # some cases
    python -m bench.hostile --only 49 --minutes 30
    python -m bench.hostile --only 49 --minutes 10 --paused 10000
    python -m bench.hostile --list
    python -m bench.hostile --table-from bench/results/hostile-published.jsonl

Each case runs in its own child process (a crash or a hang in one cannot take the others
down) with a hard time limit. Prints a table on stdout, progress on stderr, and appends one
JSON line per case (with versions and machine facts) to `bench/results/hostile-<date>.jsonl`
or `--out`. Exits non-zero when a case failed a check or did not finish.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import multiprocessing
import pkgutil
import signal
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import env
from bench.hostile import cases
from bench.hostile.case import Case, Options, Outcome

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
log = logging.getLogger("bench.hostile")


def discover() -> list[Case]:
    found = []
    for info in pkgutil.iter_modules(cases.__path__):
        if info.name.startswith("c") and info.name[1:3].isdigit():
            module = importlib.import_module(f"{cases.__name__}.{info.name}")
            found.append(module.CASE)
    return sorted(found, key=lambda case: case.number)


def _child(number: int, options: Options, queue: Any) -> None:
    logging.basicConfig(
        level=logging.INFO, format=f"[case {number}] %(message)s", stream=sys.stderr
    )
    # A case that sets Django up gets its root logger at WARNING; its progress still shows.
    logging.getLogger("bench").setLevel(logging.INFO)
    # SIGTERM (the runner's time limit, or the runner itself stopped) unwinds the case, so
    # its cleanup stops the throwaway Postgres, Redis, daphne and workers it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    case = next(c for c in discover() if c.number == number)
    started = time.monotonic()
    try:
        outcome = case.run(options)
    except BaseException:
        outcome = Outcome(number, case.title, False, notes=[traceback.format_exc()])
    outcome.seconds = round(time.monotonic() - started, 1)
    queue.put(outcome.as_json())


def run_case(case: Case, options: Options) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    # The child finds `_child` by module name; under `python -m bench.hostile` this file is
    # `__main__`, which a spawned child does not re-import (multiprocessing skips
    # `*.__main__`), so the target is taken from the module imported under its own name.
    target = importlib.import_module("bench.hostile.__main__")._child
    process = context.Process(target=target, args=(case.number, options, queue))
    limit = case.budget_s * 2 if not options.quick else max(120.0, case.budget_s)
    if case.number == 49:
        # the soak, its drain and checks, and its setup (filling the pool of paused runs)
        limit = options.minutes * 60 * 1.5 + 600 + max(600.0, options.paused / 10)
    started = time.monotonic()
    process.start()
    result: dict[str, Any] | None = None
    try:
        while process.is_alive() or not queue.empty():
            try:
                result = queue.get(timeout=1)
                break
            except Exception:
                if time.monotonic() - started > limit:
                    break
    finally:
        # Stopped by the time limit, Ctrl-C or SIGTERM: let the case clean up, then kill.
        if result is None and process.is_alive():
            process.terminate()
        process.join(timeout=60)
        if process.is_alive():
            process.kill()
            process.join(timeout=10)
    if result is None:
        result = Outcome(
            case.number, case.title, False, notes=[f"did not finish within {limit:.0f} s"]
        ).as_json()
        result["seconds"] = round(time.monotonic() - started, 1)
    return result


def _number(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _figure(value: Any) -> str:
    """A figure as a reader wants it: latency summaries as p50 / p99 / max over n."""
    if isinstance(value, dict) and "n" in value:
        mid = value.get("p50", value.get("median"))
        parts = [f"p50 {_number(mid)}" if isinstance(mid, int | float) else ""]
        parts += [
            f"{k} {_number(value[k])}"
            for k in ("p99", "max")
            if isinstance(value.get(k), int | float)
        ]
        return " / ".join(p for p in parts if p) + f" (n={value['n']})"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_figure(v)}" for k, v in value.items())
    if isinstance(value, float):
        return _number(value)
    return str(value)


def render(results: list[dict[str, Any]]) -> str:
    lines = ["| case | title | result | seconds | figures |", "|---:|---|---|---:|---|"]
    for r in results:
        figures = "; ".join(f"{k}: {_figure(v)}" for k, v in r["figures"].items())
        verdict = (
            "pass"
            if r["passed"]
            else "FAIL: "
            + ", ".join(name for name, held in r.get("checks", {}).items() if not held)
        )
        lines.append(f"| {r['number']} | {r['title']} | {verdict} | {r['seconds']} | {figures} |")
    return "\n".join(lines)


def table_from(path: Path) -> str:
    """The table of a results file: the latest full-mode line of every case in it."""
    latest: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("kind") == "hostile" and not record.get("quick"):
                latest[record["number"]] = record
    return render([latest[n] for n in sorted(latest)])


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hostile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, short faults")
    parser.add_argument("--only", default="", help="comma-separated case numbers")
    parser.add_argument("--minutes", type=float, default=30.0, help="soak length (case 49)")
    parser.add_argument(
        "--paused", type=int, default=2000, help="paused threads kept pending (case 49)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep databases and logs")
    parser.add_argument("--out", type=Path, help="JSON lines file to append to")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument(
        "--table-from", type=Path, metavar="JSONL", help="print the table of a past run and exit"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)

    every = discover()
    if args.table_from:
        print(table_from(args.table_from))
        return 0
    if args.list:
        for case in every:
            print(f"{case.number:3} {case.title} (budget {case.budget_s:.0f} s)")
        return 0
    wanted = {int(n) for n in args.only.split(",") if n.strip()} if args.only else None
    chosen = [c for c in every if wanted is None or c.number in wanted]
    if wanted and (missing := wanted - {c.number for c in chosen}):
        parser.error(f"no such case: {sorted(missing)}; see --list")
    options = Options(
        quick=args.quick,
        minutes=args.minutes,
        paused=args.paused,
        seed=args.seed,
        keep=args.keep,
    )
    out = args.out or RESULTS_DIR / f"hostile-{datetime.now(UTC):%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    facts = {"git": env.git_sha(), "versions": env.versions(), "machine": env.machine()}
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = []
    for case in chosen:
        log.info("case %d: %s ...", case.number, case.title)
        result = run_case(case, options)
        log.info(
            "case %d: %s in %.1f s",
            case.number,
            "pass" if result["passed"] else "FAIL",
            result["seconds"],
        )
        results.append(result)
        with out.open("a") as handle:
            record = {
                "kind": "hostile",
                "run_id": run_id,
                "quick": args.quick,
                **result,
                "env": facts,
            }
            handle.write(json.dumps(record, default=str) + "\n")
    print(render(results))
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
