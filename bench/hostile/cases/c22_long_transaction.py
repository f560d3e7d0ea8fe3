"""Case 22: a long transaction pins xmin during load.

Two workers drain a saturating backlog of unreviewed runs (the fake tool service records
each `fetch_file` effect); reviewers also approve paused calls. A baseline, then a
session runs `BEGIN; SELECT txid_current();` and holds it open (3 minutes in full mode;
the catalogue's 10 minutes is cut to keep the on-demand group within its budget), then
releases it. Autovacuum runs every second, so any bloat is the pin's. Expect:
correctness unaffected (every run completes, ledger 1, no fork, every decision applied);
measured: throughput in each phase and `n_dead_tup` of the busiest tables, sampled.
"""

from __future__ import annotations

import logging
import time

from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import Feeder, Rig, completed_between, crash_rig

log = logging.getLogger(__name__)
TITLE = "Long transaction pins xmin"
TABLES = (
    "bw_run",
    "bw_thread",
    "bw_checkpoint",
    "bw_checkpoint_write",
    "bw_tool_execution",
    "bw_run_event",
    "bw_review_item",
)


def _sample(rig: Rig, seconds: float, every: float = 2.0) -> list[int]:
    """Total `n_dead_tup` over `TABLES`, every `every` s for `seconds`."""
    samples, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples.append(sum(rig.cluster.dead_tuples("hostile", TABLES).values()))
        time.sleep(min(every, max(0.0, deadline - time.monotonic())))
    return samples


def run(options: Options) -> Outcome:
    base_s, pin_s, after_s, reviewed = (
        (10.0, 20.0, 10.0, 3) if options.quick else (30.0, 180.0, 20.0, 10)
    )
    out = Outcome(22, TITLE, False)
    settings = {"autovacuum_naptime": "1s", "autovacuum_vacuum_threshold": 50}
    with crash_rig(workers=2, keep=options.keep, cluster_settings=settings) as rig:
        paused = rig.start_runs(reviewed, "send_email", "c22-review")
        items = rig.wait_pending(paused)
        with Feeder(rig, "c22-load") as feeder:
            time.sleep(2.0)
            b0 = time.time()
            base_dead = _sample(rig, base_s)
            b1 = time.time()
            with rig.cluster.pinned_xmin("hostile") as txid:
                p0 = time.time()
                statuses = [rig.decide(item) for item in items]
                pin_dead = _sample(rig, pin_s)
                p1 = time.time()
                pinned_tables = rig.cluster.dead_tuples("hostile", TABLES)
            a0 = time.time()
            after_dead = _sample(rig, after_s)
            a1 = time.time()
        left = rig.settle(paused + feeder.started, 120)
        rates = {
            phase: round(completed_between(rig, t0, t1) / (t1 - t0), 2)
            for phase, (t0, t1) in {
                "baseline": (b0, b1),
                "pinned": (p0, p1),
                "released": (a0, a1),
            }.items()
        }
        applied = rig.effects_by_thread()
        decisions = rig.decisions(paused)
        everything = paused + feeder.started
        out.checks = {
            "every run completed": not left,
            "every decision accepted and applied once": all(200 <= s < 300 for s in statuses)
            and all(decisions.get(t) == 1 for t in paused),
            "ledger 1 per logical action": all(applied.get(t) == 1 for t in everything),
            "no forked checkpoint chain": rig.forked_chains() == 0,
        }
        out.figures = {
            "pinned for (s)": pin_s,
            "pinning txid": txid,
            "runs": len(everything),
            "throughput (runs/s)": rates,
            "pinned/baseline throughput": round(rates["pinned"] / rates["baseline"], 3)
            if rates["baseline"]
            else None,
            "n_dead_tup total, baseline max": max(base_dead, default=0),
            "n_dead_tup total, pinned max": max(pin_dead, default=0),
            "n_dead_tup at the end of the pin, per table": pinned_tables,
            "n_dead_tup total, after release (last sample)": after_dead[-1] if after_dead else None,
        }
        out.notes += rig.notes[:5]
    out.passed = all(out.checks.values())
    return out


CASE = Case(22, TITLE, run, budget_s=330)
