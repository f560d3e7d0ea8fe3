"""Case 27: graceful worker shutdown mid-tool (SIGTERM, then SIGTERM again).

Three rounds, each with worker A running the tool and worker B held back (SIGSTOP) until
A has claimed:

- short tool, one SIGTERM: A finishes the run within its grace and exits; B never runs it.
- long idempotent tool (`send_email`, longer than the grace), one SIGTERM: A gives the
  lease back explicitly after the grace; B resumes at once (well before the lease would
  expire), retries with the same key; the service de-duplicates (ledger 1).
- long at-most-once tool (`wire_funds`), SIGTERM twice: A exits at once without giving
  the lease back; the lease expires; B resumes and asks a human (`outcome_unknown`),
  never wiring twice.
"""

from __future__ import annotations

import logging
import signal
import time

from bench.hostile import effects
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import LEASE_S, Rig, crash_rig, wait_until

log = logging.getLogger(__name__)
TITLE = "Graceful worker shutdown mid-tool"
GRACE_S = 1.5


def _round(rig: Rig, tool: str, pause: float, tag: str, *, twice: bool) -> dict[str, object]:
    a = rig.spawn_worker(grace=GRACE_S, **{effects.PAUSE_ENV: str(pause)})
    thread = rig.start_runs(1, tool, tag)[0]
    item = rig.wait_pending([thread])[0]
    b = rig.spawn_worker(**{effects.PAUSE_ENV: "0"})
    rig.signal(b, signal.SIGSTOP)
    status = rig.decide(item)
    rig.claimed_by(thread)
    rig.wait_effect(thread)
    termed = time.monotonic()
    rig.signal(a, signal.SIGTERM)
    if twice:
        time.sleep(0.3)
        rig.signal(a, signal.SIGTERM)
    rig.proc(a).wait(60)
    exited = time.monotonic() - termed
    rig.signal(b, signal.SIGCONT)
    if tool == "wire_funds":
        wait_until(lambda: rig.outcome_unknown_pending(thread), 60, "outcome_unknown")
    else:
        rig.wait_status(thread, ("completed",), 60)
    done = time.monotonic() - termed
    requests = rig.tools.requests()
    result = {
        "status": status,
        "exit_s": round(exited, 2),
        "settled_s": round(done, 2),
        "released": "Released run" in rig.log_text(a),
        "attempts": rig.run_of(thread)[3],
        "applied": rig.effects_by_thread().get(thread, 0),
        "requests": sum(requests.get(k, 0) for k in rig.keys_of(thread)),
        "outcome_unknown": rig.outcome_unknown_pending(thread),
    }
    rig.kill(b)
    return result


def run(options: Options) -> Outcome:
    out = Outcome(27, TITLE, False)
    with crash_rig(workers=0, keep=options.keep) as rig:
        short = _round(rig, "send_email", 0.5, "c27-short", twice=False)
        long = _round(rig, "send_email", GRACE_S + 4, "c27-long", twice=False)
        hard = _round(rig, "wire_funds", GRACE_S + 4, "c27-twice", twice=True)
        forks = rig.forked_chains()
    rounds = [short, long, hard]
    out.checks = {
        "every decision accepted (2xx)": all(200 <= int(r["status"]) < 300 for r in rounds),
        "short tool: finished within the grace, not re-dispatched": short["attempts"] == 1
        and float(short["exit_s"]) <= GRACE_S + 3,
        "long tool, one SIGTERM: lease released explicitly": bool(long["released"]),
        "long tool, one SIGTERM: resumed before the lease would expire": float(long["settled_s"])
        < GRACE_S + LEASE_S + 3,
        "idempotent: ledger 1": short["applied"] == 1 and long["applied"] == 1,
        "SIGTERM twice: exited at once": float(hard["exit_s"]) < GRACE_S + 1,
        "at-most-once: outcome_unknown, 1 request, ledger 1": bool(hard["outcome_unknown"])
        and hard["requests"] == 1
        and hard["applied"] == 1,
        "no forked checkpoint chain": forks == 0,
    }
    out.figures = {
        "grace (s)": GRACE_S,
        "lease (s)": LEASE_S,
        "short tool: SIGTERM -> exit (s)": short["exit_s"],
        "long idempotent: SIGTERM -> exit (s)": long["exit_s"],
        "long idempotent: SIGTERM -> completed on B (s)": long["settled_s"],
        "long idempotent: requests / effects": f"{long['requests']}/{long['applied']}",
        "SIGTERM x2: -> exit (s)": hard["exit_s"],
        "SIGTERM x2: -> outcome_unknown shown (s)": hard["settled_s"],
        "double-executed": f"{sum(1 for r in rounds if int(r['applied']) > 1)}/3",
    }
    out.passed = all(out.checks.values())
    return out


CASE = Case(27, TITLE, run, budget_s=150)
