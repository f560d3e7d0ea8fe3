"""Run every configuration's engines in fresh processes, interleaved, R times.

Repetition 1 of every configuration runs before repetition 2 of any, and the two engines
swap order on every repetition, so a drift in machine speed spreads over both engines and
all workloads instead of landing on one. Each run is `python -m bench.worker` in its own
interpreter: no warm caches shared between runs, memory measured per process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import bw_database
from bench.env import ROOT
from bench.plan import Config

logger = logging.getLogger("bench")


@dataclass(frozen=True, slots=True)
class Job:
    config: Config
    engine: str
    rep: int


def schedule(configs: list[Config], reps: int) -> list[Job]:
    """Jobs in the order they run: by repetition, then configuration; engines alternate."""
    jobs = []
    for rep in range(1, reps + 1):
        for config in configs:
            if config.workload is None:
                continue
            engines = config.engines if rep % 2 else tuple(reversed(config.engines))
            jobs.extend(Job(config, engine, rep) for engine in engines)
    return jobs


def _worker_env(job: Job) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if job.engine == "beamweaver" and job.config.postgres:
        env.update(bw_database.worker_env())
    return env


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def run_job(job: Job, quick: bool, profile: int, timeout: float) -> dict[str, Any]:
    """Run one job in a fresh interpreter and return its JSON (or an error record)."""
    params = job.config.params(quick)
    if profile:
        params["profile"] = profile
    command = [sys.executable, "-m", "bench.worker", job.config.workload or "", job.engine]
    timeout = max(timeout, job.config.timeout_s or 0)
    # Its own process group, so that a timed-out run's servers (daphne, workers,
    # `langgraph dev`) go with it instead of living on and holding its pipes open.
    proc = subprocess.Popen(
        [*command, json.dumps(params)],
        cwd=ROOT,
        env=_worker_env(job),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return {"status": "error", "reason": f"timed out after {timeout:.0f} s"}
    except BaseException:  # Ctrl-C no longer reaches the group from the terminal
        _kill_group(proc)
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
        tail = done.stderr.strip().splitlines()[-12:]
        return {"status": "error", "reason": f"exit {done.returncode}", "stderr_tail": tail}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_all(
    jobs: list[Job],
    *,
    quick: bool,
    profile: int,
    timeout: float,
    blocked: Callable[[Job], str | None],
    on_result: Callable[[Job, dict[str, Any]], None],
) -> None:
    """Run `jobs` in order; a job `blocked` names a reason for is recorded as pending."""
    for number, job in enumerate(jobs, 1):
        reason = blocked(job)
        started = time.perf_counter()
        if reason is not None:
            result: dict[str, Any] = {"status": "pending", "reason": reason}
        else:
            result = run_job(job, quick, profile, timeout)
        result.setdefault("bench", job.config.workload)
        result.setdefault("engine", job.engine)
        logger.info(
            "[%d/%d] rep %d %-22s %-10s %-7s %5.1f s%s",
            number,
            len(jobs),
            job.rep,
            job.config.key,
            job.engine,
            result["status"],
            time.perf_counter() - started,
            f"  ({result['reason']})" if result["status"] != "ok" else "",
        )
        if result["status"] == "error":
            for line in result.get("stderr_tail", []):
                logger.info("    %s", line)
        on_result(job, result)
