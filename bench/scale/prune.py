"""`manage.py prune_checkpoints` timed from outside, with the longest lock it held.

Row locks last until their transaction ends, so the longest lock the command holds is
its longest transaction: a sampler on another connection reads the command's backend
(found by its `application_name`) every `interval` seconds from `pg_stat_activity`
(`now() - xact_start`) and counts its entries in `pg_locks`. A transaction shorter than
the interval can be missed, so the figure is exact for the long ones, which are the ones
that matter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

from bench import pg
from bench.env import ROOT

APP = "scale-prune"
_SAMPLE = """
SELECT extract(epoch FROM now() - a.xact_start) * 1000,
       (SELECT count(*) FROM pg_locks l WHERE l.pid = a.pid)
  FROM pg_stat_activity a
 WHERE a.application_name = %s AND a.xact_start IS NOT NULL AND a.state <> 'idle'
"""


class LockSampler:
    def __init__(self, url: str, app: str = APP, interval: float = 0.005) -> None:
        self.url, self.app, self.interval = url, app, interval
        self.longest_ms = 0.0
        self.most_locks = 0
        self.samples = 0
        self.busy_samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scale-locks", daemon=True)

    def _loop(self) -> None:
        with pg.connect(self.url) as conn:
            while not self._stop.is_set():
                for age, locks in conn.execute(_SAMPLE, (self.app,)).fetchall():
                    self.busy_samples += 1
                    self.longest_ms = max(self.longest_ms, float(age or 0))
                    self.most_locks = max(self.most_locks, int(locks))
                self.samples += 1
                time.sleep(self.interval)

    def __enter__(self) -> LockSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(url: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    """Run `prune_checkpoints --json *args` on `url`; wall time, longest transaction, the
    most locks held at once and what it deleted."""
    command = [sys.executable, "manage.py", "prune_checkpoints", "--json", *args]
    with LockSampler(url) as sampler:
        started = time.perf_counter()
        done = subprocess.run(
            command,
            cwd=ROOT,
            env={**env, "PGAPPNAME": APP},
            capture_output=True,
            text=True,
            timeout=7200,
            check=False,
        )
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"prune_checkpoints failed: {done.stderr.strip()[-400:]}")
    report = json.loads(done.stdout)
    return {
        "wall_s": round(wall, 3),
        "longest_xact_ms": round(sampler.longest_ms, 2),
        "most_locks": sampler.most_locks,
        "samples": sampler.samples,
        "checkpoints_deleted": report["checkpoints_deleted"],
        "blobs_deleted": report["blobs_deleted"],
        "writes_deleted": report["writes_deleted"],
        "threads_pruned": len(report["pruned"]),
        "threads_dropped": len(report["dropped"]),
        "args": list(args),
    }
