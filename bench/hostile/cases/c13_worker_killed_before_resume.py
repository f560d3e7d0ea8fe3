"""Case 13: a worker SIGKILLed after the decision commits, before the resume took effect.

Two workers. Each round a reviewer approves one paused `send_email` call over HTTP (the
decision and its resume run commit together); the worker that claims the resume is
SIGKILLed at once, inside the tool's pre-effect delay (claimed, nothing done outside).
The other worker must resume it after the lease expires and the sweep re-queues it. Then
a replacement worker starts. One last round stops both workers before the decision,
kills both, and starts a fresh one ("stop both, then start one").
"""

from __future__ import annotations

import logging
import signal
import time

from bench.hostile import effects
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import LEASE_S, RECOVERY_TARGET_S, crash_rig, spread

log = logging.getLogger(__name__)
TITLE = "Worker killed after the decision commits, before resume is claimed"


def run(options: Options) -> Outcome:
    kills = 3 if options.quick else 10
    out = Outcome(13, TITLE, False)
    with crash_rig(workers=2, keep=options.keep, **{effects.DELAY_ENV: "1.5"}) as rig:
        threads = rig.start_runs(kills + 1, "send_email", "c13")
        items = {i["thread"]: i for i in rig.wait_pending(threads)}
        statuses, recoveries, completions = [], [], []
        for thread in threads[:kills]:
            statuses.append(rig.decide(items[thread]))
            owner = rig.claimed_by(thread)
            rig.kill(owner)
            killed = time.monotonic()
            recoveries.append(rig.resumed_elsewhere(thread, owner, 60) - killed)
            rig.wait_status(thread, ("completed",), 60)
            completions.append(time.monotonic() - killed)
            log.info("kill %s: resumed elsewhere after %.2f s", owner, recoveries[-1])
            rig.spawn_worker()
        # Stop both, decide, kill both, start one.
        last = threads[kills]
        alive = rig.alive_workers()
        for name in alive:
            rig.signal(name, signal.SIGSTOP)
        statuses.append(rig.decide(items[last]))
        for name in alive:
            rig.kill(name)
        started = time.monotonic()
        rig.spawn_worker(wait=False)
        rig.wait_status(last, ("completed",), 90)
        cold = time.monotonic() - started
        applied = rig.effects_by_thread()
        decisions = rig.decisions(threads)
        out.checks = {
            "every decision accepted (2xx)": all(200 <= s < 300 for s in statuses),
            "0 lost decisions (every decided thread completed)": all(
                rig.thread_status(t) == "completed" for t in threads
            ),
            "one Decision per interrupt": all(decisions.get(t) == 1 for t in threads),
            "ledger 1 per logical action": all(applied.get(t) == 1 for t in threads),
            "no forked checkpoint chain": rig.forked_chains() == 0,
            "resumed within lease TTL + sweep + claim": max(recoveries) <= RECOVERY_TARGET_S + 1,
        }
        out.figures = {
            "kills": kills,
            "SIGKILL -> resumed on another worker (s)": spread(recoveries),
            "SIGKILL -> run completed (s)": spread(completions),
            "target (lease + sweep + claim, s)": RECOVERY_TARGET_S,
            "lease (s)": LEASE_S,
            "stop both, kill both, start one -> completed (s)": round(cold, 2),
            "lost decisions": f"0/{len(threads)}"
            if out.checks["0 lost decisions (every decided thread completed)"]
            else "some",
            "double-executed": f"{sum(1 for t in threads if applied.get(t, 0) > 1)}/{len(threads)}",
        }
    out.passed = all(out.checks.values())
    return out


CASE = Case(13, TITLE, run, budget_s=240)
