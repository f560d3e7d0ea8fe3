"""What a result was measured with: package versions, the machine, the Postgres server."""

from __future__ import annotations

import os
import platform
import subprocess
import threading
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


def _label(proc: Any) -> str:
    """A short name for a process: its command line's first words."""
    try:
        words = [os.path.basename(w) if i == 0 else w for i, w in enumerate(proc.cmdline()[:4])]
    except Exception:  # the process is gone, or not ours to read
        return "?"
    return " ".join(words)[:80] or proc.name()


def _postgres_role(cmdline: str) -> str:
    """`own` for a backend serving a benchmark database (`bench*`), `foreign` for another
    database's backend, `shared` for the server's own processes (WAL writer, ...)."""
    parts = cmdline.split()
    if len(parts) >= 5 and ":" in parts[1]:  # postgres: 15/main: user database host ...
        return "own" if parts[3].startswith("bench") else "foreign"
    return "shared"


class LoadMonitor:
    """What else ran on the machine during a benchmark run, sampled every `interval` s.

    A thread samples the 1-minute load average and the CPU time of every process, sorted
    into this run's (this process and its descendants, and Postgres backends serving the
    benchmark databases `bench*`), Postgres's shared processes, and everything else
    ("foreign": other users' tests, browsers, their database backends). A process that
    starts and ends between two samples is missed, so foreign CPU is a lower bound; this
    run's own processes are counted exactly (`getrusage` of this process and its children).
    """

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self.loads: list[float] = []
        self._seen: dict[int, tuple[str, str, float]] = {}
        self._spent: dict[str, float] = {}
        self._baseline: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-load", daemon=True)

    def _classify(self, proc: Any, own_pid: int) -> tuple[str, str]:
        name = proc.info.get("name") or ""
        if name.startswith("postgres"):
            cmdline = " ".join(proc.info.get("cmdline") or [])
            role = _postgres_role(cmdline)
            return role, "postgres backends (other databases)" if role == "foreign" else name
        try:
            if proc.pid == own_pid or any(p.pid == own_pid for p in proc.parents()):
                return "own", "benchmark"
        except Exception:  # gone meanwhile
            return "foreign", "?"
        return "foreign", _label(proc)

    def _sample(self, first: bool) -> None:
        import psutil

        own_pid = os.getpid()
        self.loads.append(round(os.getloadavg()[0], 2))
        for proc in psutil.process_iter(["name", "cmdline", "cpu_times"]):
            times = proc.info.get("cpu_times")
            if times is None:
                continue
            cpu = times.user + times.system
            if first:
                self._baseline[proc.pid] = cpu
            known = self._seen.get(proc.pid)
            role, label = (known[0], known[1]) if known else self._classify(proc, own_pid)
            previous = known[2] if known else self._baseline.get(proc.pid, 0.0)
            key = f"{role}\t{label}"
            self._spent[key] = self._spent.get(key, 0.0) + max(0.0, cpu - previous)
            self._seen[proc.pid] = (role, label, cpu)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(first=False)

    @staticmethod
    def _rusage() -> float:
        """CPU seconds of this process and its waited-for descendants (workers, servers)."""
        import resource

        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    def start(self) -> LoadMonitor:
        self._own_start = self._rusage()
        self._sample(first=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        """The load samples' summary and CPU seconds by owner (foreign: top 8 commands)."""
        self._stop.set()
        self._thread.join()
        self._sample(first=False)
        # This process and its descendants, exactly (sampling misses short-lived workers).
        by_role: dict[str, float] = {"own": self._rusage() - self._own_start}
        foreign: dict[str, float] = {}
        for key, spent in self._spent.items():
            role, label = key.split("\t", 1)
            if label == "benchmark":
                continue
            by_role[role] = by_role.get(role, 0.0) + spent
            if role == "foreign":
                foreign[label] = foreign.get(label, 0.0) + spent
        loads = sorted(self.loads)
        top = sorted(foreign.items(), key=lambda kv: kv[1], reverse=True)[:8]
        return {
            "load1_min": loads[0],
            "load1_median": loads[len(loads) // 2],
            "load1_max": loads[-1],
            "samples": len(loads),
            "cpu_s": {role: round(spent, 1) for role, spent in sorted(by_role.items())},
            "foreign_top": [[label, round(spent, 1)] for label, spent in top],
        }
