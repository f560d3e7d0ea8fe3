"""Case 16: a tool blocks its event loop past the heartbeat window.

`block_loop` is an `async def` tool that calls `time.sleep(2 x lease)` inside the
coroutine (the LangGraph #7213 shape). Two workers; the one running the tool is sampled
with `py-spy dump` while it blocks. Records which outcome happens: heartbeats continue
(they run on their own thread, so the lease keeps moving and no re-dispatch happens), or
the run is re-dispatched and fencing plus the idempotency key keep the ledger at 1.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.hostile.agents import BLOCK_ENV
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import LEASE_S, crash_rig

log = logging.getLogger(__name__)
TITLE = "Tool blocks the event loop past the heartbeat window"


def py_spy_dump(pid: int) -> str:
    beside = Path(sys.executable).parent / "py-spy"
    binary = str(beside) if beside.exists() else shutil.which("py-spy")
    if binary is None:
        return "py-spy not installed"
    done = subprocess.run(
        [binary, "dump", "--pid", str(pid)], check=False, capture_output=True, text=True, timeout=30
    )
    return done.stdout or done.stderr


def run(options: Options) -> Outcome:
    rounds = 1 if options.quick else 3
    block = LEASE_S * 2
    out = Outcome(16, TITLE, False)
    with crash_rig(workers=2, keep=options.keep, **{BLOCK_ENV: str(block)}) as rig:
        threads = rig.start_runs(rounds, "block_loop", "c16")
        items = {i["thread"]: i for i in rig.wait_pending(threads)}
        statuses, redispatched, extended, where = [], 0, [], ""
        for thread in threads:
            statuses.append(rig.decide(items[thread]))
            owner = rig.claimed_by(thread)
            rig.wait_effect_started(thread)
            leases = []
            deadline = time.monotonic() + block
            sampled = False
            while time.monotonic() < deadline:
                row = rig.query(
                    "SELECT lease_expires_at, lease_owner FROM bw_run WHERE thread_id = %s "
                    "AND kind = 'resume' AND status = 'running'",
                    thread,
                )
                if row:
                    leases.append(row[0][0])
                if not sampled and time.monotonic() > deadline - block / 2:
                    dump = py_spy_dump(rig.proc(owner).pid)
                    where = next((ln.strip() for ln in dump.splitlines() if "run (" in ln), "")
                    where = where or dump.strip().splitlines()[-1:][0] if dump.strip() else ""
                    sampled = True
                time.sleep(0.5)
            rig.wait_status(thread, ("completed",), 60)
            run_row = rig.run_of(thread)
            redispatched += int(run_row[3] > 1)
            extended.append(len(set(leases)))
        applied = rig.effects_by_thread()
        requests = rig.tools.requests()
        sent = {t: sum(requests.get(k, 0) for k in rig.keys_of(t)) for t in threads}
        outcome = "heartbeats continued, no re-dispatch" if redispatched == 0 else "re-dispatched"
        out.checks = {
            "every decision accepted (2xx)": all(200 <= s < 300 for s in statuses),
            "ledger 1 per logical action": all(applied.get(t) == 1 for t in threads),
            "runs completed": all(rig.thread_status(t) == "completed" for t in threads),
            "no forked checkpoint chain": rig.forked_chains() == 0,
            "lease kept moving while the loop was blocked": redispatched > 0
            or all(n >= 3 for n in extended),
        }
        out.figures = {
            "rounds": rounds,
            "blocked (s)": block,
            "lease (s)": LEASE_S,
            "outcome": outcome,
            "re-dispatched runs": f"{redispatched}/{rounds}",
            "distinct lease expiries seen while blocked (per round)": extended,
            "tool requests per action": sorted(set(sent.values())),
            "py-spy: blocked in": where[:200],
        }
    out.passed = all(out.checks.values())
    return out


CASE = Case(16, TITLE, run, budget_s=150)
