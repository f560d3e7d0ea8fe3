"""What a result was measured with: package versions, the machine, the Postgres server."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_PACKAGES = (
    "django",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-postgres",
    "psycopg",
    "psycopg-binary",
    "psycopg-pool",
    "psutil",
)


def git_sha() -> str | None:
    """The BeamWeaver commit, with `-dirty` when tracked files differ from it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{sha}-dirty" if dirty else sha


def versions() -> dict[str, str | None]:
    """Python, the BeamWeaver commit and the installed versions of the peer's packages."""
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "beamweaver": git_sha(),
    }
    for package in _PACKAGES:
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = None
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """CPU model, core counts, RAM and kernel of this machine."""
    import psutil

    return {
        "cpu_model": _cpu_model(),
        "cores_logical": psutil.cpu_count(logical=True),
        "cores_physical": psutil.cpu_count(logical=False),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "os": platform.platform(terse=True),
    }


def load() -> dict[str, float]:
    """Load averages (1, 5, 15 minutes) and the CPU busy share over the last 0.5 s."""
    import psutil

    one, five, fifteen = os.getloadavg()
    return {
        "load1": round(one, 2),
        "load5": round(five, 2),
        "load15": round(fifteen, 2),
        "cpu_busy_pct": psutil.cpu_percent(interval=0.5),
    }


def foreign_cpu_snapshot() -> dict[int, float]:
    """CPU seconds used so far by each process other than this one and the Postgres server.

    Two snapshots bracket a run; their difference (`foreign_cpu_seconds`) says how much
    other work competed for the cores (Postgres is left out: it works for the benchmark).
    """
    import psutil

    own = os.getpid()
    seen: dict[int, float] = {}
    for proc in psutil.process_iter(["name", "cpu_times"]):
        times = proc.info.get("cpu_times")
        if proc.pid == own or times is None or (proc.info.get("name") or "").startswith("postgres"):
            continue
        seen[proc.pid] = times.user + times.system
    return seen


def foreign_cpu_seconds(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds other processes used between two `foreign_cpu_snapshot`s."""
    return round(sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items()), 1)
