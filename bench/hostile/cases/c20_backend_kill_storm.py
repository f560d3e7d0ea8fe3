"""Case 20: backend-kill storm.

Two workers (`application_name` `worker-1`, `worker-2`) drain a saturating backlog of
unreviewed runs (each one `fetch_file` tool call through the fake tool service). First a
baseline; then `pg_terminate_backend` on every backend whose application_name is LIKE
'worker%', twice per second, for the storm (2 minutes in full mode), while reviewers
also approve paused `send_email` calls over HTTP (daphne is not targeted; the resumes run
on the workers under the storm). Expect: progress continues; 0 lost decisions; 0
duplicate effects; failed runs bounded (0 expected). Figure: the progress ratio,
completions per second under the storm over the baseline.
"""

from __future__ import annotations

import logging
import threading
import time

from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import Feeder, completed_between, crash_rig

log = logging.getLogger(__name__)
TITLE = "Backend-kill storm"


def run(options: Options) -> Outcome:
    baseline_s, storm_s, reviewed = (10.0, 20.0, 4) if options.quick else (30.0, 120.0, 10)
    out = Outcome(20, TITLE, False)
    with crash_rig(workers=2, keep=options.keep) as rig:
        paused = rig.start_runs(reviewed, "send_email", "c20-review")
        items = rig.wait_pending(paused)
        with Feeder(rig, "c20-load") as feeder:
            time.sleep(2.0)  # warm-up
            b0 = time.time()
            time.sleep(baseline_s)
            b1 = time.time()
            kills: list[int] = []
            stop = threading.Event()

            def storm() -> None:
                deadline = time.monotonic() + storm_s
                while not stop.is_set() and time.monotonic() < deadline:
                    try:
                        kills.append(rig.cluster.terminate("worker%"))
                    except Exception as exc:
                        log.warning("terminate failed: %s", exc)
                    stop.wait(0.5)

            stormer = threading.Thread(target=storm, daemon=True)
            s0 = time.time()
            stormer.start()
            statuses = []
            for item in items:
                statuses.append(rig.decide(item))
                time.sleep(storm_s / (2 * reviewed))
            stormer.join(storm_s + 30)
            s1 = time.time()
            stop.set()
        started = feeder.started
        left = rig.settle(paused + started, 120)
        baseline = completed_between(rig, b0, b1) / (b1 - b0)
        during = completed_between(rig, s0, s1) / (s1 - s0)
        applied = rig.effects_by_thread()
        decisions = rig.decisions(paused)
        failed = int(rig.scalar("SELECT count(*) FROM bw_run WHERE status = 'failed'"))
        retried = int(rig.scalar("SELECT count(*) FROM bw_run WHERE attempts > 1"))
        runs = int(rig.scalar("SELECT count(*) FROM bw_run"))
        worker_errors = sum(
            rig.log_text(n).count("database unavailable") for n in rig.alive_workers()
        )
        everything = paused + started
        out.checks = {
            "progress continued during the storm": during > 0,
            "every decision accepted (2xx)": all(200 <= s < 300 for s in statuses),
            "0 lost decisions": all(decisions.get(t) == 1 for t in paused)
            and all(rig.thread_status(t) == "completed" for t in paused),
            "every run completed after the storm": not left,
            "0 duplicate effects": all(applied.get(t, 0) <= 1 for t in everything),
            "0 failed runs": failed == 0,
            "workers survived": len(rig.alive_workers()) == 2,
        }
        out.figures = {
            "storm (s)": storm_s,
            "terminations": f"{sum(kills)} backends in {len(kills)} sweeps",
            "baseline (runs/s)": round(baseline, 2),
            "storm (runs/s)": round(during, 2),
            "progress ratio storm/baseline": round(during / baseline, 3) if baseline else None,
            "runs retried (attempts > 1)": f"{retried}/{runs}",
            "failed runs": f"{failed}/{runs}",
            "worker 'database unavailable' retries": worker_errors,
            "lost decisions": f"{sum(1 for t in paused if decisions.get(t) != 1)}/{reviewed}",
            "double-executed": f"{sum(1 for t in everything if applied.get(t, 0) > 1)}/"
            f"{len(everything)}",
        }
        out.notes += rig.notes[:5]
        stalls = sum(
            rig.log_text(n).count("couldn't get a connection") for n in rig.alive_workers()
        )
        out.figures["worker pool timeouts (couldn't get a connection)"] = stalls
        out.checks["no pool timeout with the server up"] = stalls == 0
        if stalls:
            out.notes.append(
                "Workers waited for the whole pool timeout with the server up: a pooled "
                "connection that fails its checkout check makes psycopg_pool back off "
                "1 s, 2 s, 4 s..., and the storm kills each replacement before the retry "
                "(see beamweaver_core.postgres.CheckedPool, which takes the next at once)."
            )
    out.passed = all(out.checks.values())
    return out


CASE = Case(20, TITLE, run, budget_s=300)
