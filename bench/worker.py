"""One workload on one engine in this (fresh) process; prints ONE JSON line.

`python -m bench` starts one of these per engine, workload and repetition, so no run sees
another's warm caches, and the peak RSS below is this run's alone. It can also be run by
hand: `python -m bench.worker linear beamweaver '{"backend": "memory", "threads": 50}'`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

from bench import workloads
from bench.engines import load_engine
from bench.engines.base import Pending


def _rss_mb() -> float:
    import psutil

    return round(psutil.Process().memory_info().rss / 2**20, 1)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def measure(workload: str, engine_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run the workload and wrap its figures with the status and this process's memory."""
    started = time.perf_counter()
    out: dict[str, Any] = {"bench": workload, "engine": engine_name, "params": params}
    try:
        engine = (
            None
            if workload in workloads.ENGINE_FREE
            else load_engine(engine_name, params.get("lg_durability", "async"))
        )
        rss_ready = _rss_mb()
        if engine is not None:
            out["engine_settings"] = engine.describe()
        figures = workloads.run(workload, engine, params)
    except Pending as reason:
        out.update(status="pending", reason=str(reason))
        return out
    out.update(status="ok", **figures)
    out["process"] = {
        "rss_after_import_mb": rss_ready,
        "rss_end_mb": _rss_mb(),
        "rss_peak_mb": max(_peak_rss_mb(), _rss_mb()),
        "elapsed_s": round(time.perf_counter() - started, 3),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=workloads.WORKLOADS)
    parser.add_argument("engine", choices=["beamweaver", "langgraph", "postgres"])
    parser.add_argument("params", nargs="?", default="{}", help="JSON object of sizes")
    args = parser.parse_args(argv)
    result = measure(args.workload, args.engine, json.loads(args.params))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
