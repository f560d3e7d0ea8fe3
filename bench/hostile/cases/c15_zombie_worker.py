"""Case 15: a zombie worker (SIGSTOP past its lease) wakes up and tries to write.

Worker A claims the resume of an approved `send_email` call and is SIGSTOPped inside the
tool (after the ledger recorded the call as started, before the effect). Its lease
expires; worker B takes the run over (a higher fencing token), runs the tool under the
same idempotency key and finishes the run. Then A gets SIGCONT: its effect reaches the
tool service with the same key (de-duplicated), and its writes must fail the fencing
check. Checks: one effect, no forked checkpoint chain, A's writes refused (its log says
so; the ledger row and the checkpoint chain are what B left).
"""

from __future__ import annotations

import logging
import signal
import time

from bench.hostile import effects
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import crash_rig, spread, wait_until

log = logging.getLogger(__name__)
TITLE = "Zombie worker (paused longer than the lease)"
REFUSED = ("Refused a stale write", "lost its lease", "no longer owns", "taken over")


def run(options: Options) -> Outcome:
    rounds = 1 if options.quick else 3
    out = Outcome(15, TITLE, False)
    takeovers, refused, ledger_kept, chain_kept, statuses = [], [], [], [], []
    with crash_rig(workers=0, keep=options.keep, **{effects.DELAY_ENV: "1.5"}) as rig:
        threads = rig.start_runs(rounds, "send_email", "c15")
        zombie = rig.spawn_worker()
        items = {i["thread"]: i for i in rig.wait_pending(threads)}
        for thread in threads:
            statuses.append(rig.decide(items[thread]))
            assert rig.claimed_by(thread) == zombie
            wait_until(lambda t=thread: rig.keys_of(t), 10, "the ledger row")
            rig.signal(zombie, signal.SIGSTOP)
            stopped = time.monotonic()
            taker = rig.spawn_worker()
            rig.wait_status(thread, ("completed",), 60)
            takeovers.append(time.monotonic() - stopped)
            before = rig.query(
                "SELECT run_id, status, message, finished_at FROM bw_tool_execution "
                "WHERE thread_id = %s",
                thread,
            )
            head = rig.scalar("SELECT count(*) FROM bw_checkpoint WHERE thread_id = %s", thread)
            rig.signal(zombie, signal.SIGCONT)
            wait_until(
                lambda z=zombie: any(m in rig.log_text(z) for m in REFUSED),
                20,
                "the zombie's refusal",
            )
            time.sleep(1.0)
            refused.append(any(m in rig.log_text(zombie) for m in REFUSED))
            after = rig.query(
                "SELECT run_id, status, message, finished_at FROM bw_tool_execution "
                "WHERE thread_id = %s",
                thread,
            )
            ledger_kept.append(after == before)
            chain_kept.append(
                rig.scalar("SELECT count(*) FROM bw_checkpoint WHERE thread_id = %s", thread)
                == head
            )
            rig.kill(zombie)
            zombie = taker
        applied = rig.effects_by_thread()
        requests = rig.tools.requests()
        out.checks = {
            "every decision accepted (2xx)": all(200 <= s < 300 for s in statuses),
            "the zombie's writes failed the fencing check": all(refused),
            "no checkpoint written by the zombie": all(chain_kept),
            "the zombie's ledger result refused (row as the new owner left it)": all(ledger_kept),
            "no forked checkpoint chain": rig.forked_chains() == 0,
            "ledger 1 per logical action": all(applied.get(t) == 1 for t in threads),
            "runs completed by the new owner": all(
                rig.thread_status(t) == "completed" for t in threads
            ),
        }
        out.figures = {
            "zombies": rounds,
            "SIGSTOP -> run completed by another worker (s)": spread(takeovers),
            "zombie ledger row left as the new owner wrote it": f"{sum(ledger_kept)}/{rounds}",
            "requests to the tool service (zombie's de-duplicated)": sum(requests.values()),
            "double-executed": f"{sum(1 for t in threads if applied.get(t, 0) > 1)}/{rounds}",
        }
        if not all(ledger_kept):
            out.notes.append(
                "the zombie's ledger `finish` overwrote the tool-execution row (unfenced write)"
            )
    out.passed = all(out.checks.values())
    return out


CASE = Case(15, TITLE, run, budget_s=180)
