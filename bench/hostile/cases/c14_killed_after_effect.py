"""Case 14: a worker SIGKILLed after the tool's external effect, before its result is
checkpointed.

The tools pause after their effect (`BEAMWEAVER_EFFECT_PAUSE`); the kill lands in the
pause. An idempotent tool (`send_email`, which passes its idempotency key to the fake
tool service) is retried by the other worker with the same key and the service
de-duplicates it: one effect, two requests. An at-most-once tool (`wire_funds`, no
de-duplication) is not retried: the run pauses with `outcome_unknown` for a human, shown
in the inbox, and the service saw exactly one request.
"""

from __future__ import annotations

import logging
import time

from bench.hostile import effects
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import crash_rig, spread, wait_until

log = logging.getLogger(__name__)
TITLE = "Worker killed after the external side effect, before the result is checkpointed"


def run(options: Options) -> Outcome:
    rounds = 2 if options.quick else 5
    out = Outcome(14, TITLE, False)
    with crash_rig(workers=2, keep=options.keep, **{effects.PAUSE_ENV: "2"}) as rig:
        idem = rig.start_runs(rounds, "send_email", "c14-idem")
        once = rig.start_runs(rounds, "wire_funds", "c14-once")
        items = {i["thread"]: i for i in rig.wait_pending(idem + once)}
        retried, asked, statuses = [], [], []
        for thread in idem + once:
            statuses.append(rig.decide(items[thread]))
            owner = rig.claimed_by(thread)
            rig.wait_effect(thread)
            rig.kill(owner)
            killed = time.monotonic()
            if thread in idem:
                rig.wait_status(thread, ("completed",), 60)
                retried.append(time.monotonic() - killed)
            else:
                wait_until(lambda t=thread: rig.outcome_unknown_pending(t), 60, "outcome_unknown")
                asked.append(time.monotonic() - killed)
            rig.spawn_worker()
        requests = rig.tools.requests()
        applied = rig.effects_by_thread()
        sent = {t: sum(requests.get(k, 0) for k in rig.keys_of(t)) for t in idem + once}
        shown = []
        for thread in once:
            item = next(i for i in rig.pending_items([thread]))
            page = rig.get(f"/items/{item['id']}/")
            shown.append(page.status_code == 200 and "wire_funds" in page.text)
        out.checks = {
            "every decision accepted (2xx)": all(200 <= s < 300 for s in statuses),
            "idempotent: retried with the same key (2 requests)": all(sent[t] >= 2 for t in idem),
            "idempotent: service de-duplicated (ledger 1)": all(applied.get(t) == 1 for t in idem),
            "idempotent: run completed": all(rig.thread_status(t) == "completed" for t in idem),
            "at-most-once: outcome_unknown pending for a human": all(
                rig.outcome_unknown_pending(t) for t in once
            ),
            "at-most-once: shown in the inbox item page": all(shown),
            "at-most-once: not re-executed (1 request, ledger 1)": all(
                sent[t] == 1 and applied.get(t) == 1 for t in once
            ),
            "no forked checkpoint chain": rig.forked_chains() == 0,
        }
        out.figures = {
            "kills": len(idem) + len(once),
            "idempotent kill -> completed (s)": spread(retried),
            "at-most-once kill -> outcome_unknown shown (s)": spread(asked),
            "double-executed": f"{sum(1 for t in idem + once if applied.get(t, 0) > 1)}/"
            f"{len(idem) + len(once)}",
            "idempotent replays de-duplicated": f"{sum(sent[t] - 1 for t in idem)}",
        }
    out.passed = all(out.checks.values())
    return out


CASE = Case(14, TITLE, run, budget_s=240)
