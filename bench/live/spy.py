"""py-spy on the live server's processes during a workload's measured window.

`python -m bench.worker realtime_push beamweaver '{"spy": "/tmp/prof"}'` attaches
`py-spy record --pid` to daphne (and the worker process in `redis` mode) while the load
runs and writes one raw profile per process (`<dir>/<process>.txt`); summarize them with
`python -m bench.pyspy_report <file> --focus ''`. Sampling is non-blocking (the server
is not paused to be sampled) and counts only running threads unless `idle` is set.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path


class ServerProfile:
    """One `py-spy record` per process, from `start()` until `stop()`."""

    def __init__(self, pids: dict[str, int], out_dir: Path, *, rate: int = 250, idle: bool = False):
        self.pids = pids
        self.out_dir = out_dir
        self.rate = rate
        self.idle = idle
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> ServerProfile:
        beside = Path(sys.executable).parent / "py-spy"
        binary = str(beside) if beside.exists() else shutil.which("py-spy")
        if binary is None:
            raise RuntimeError("py-spy is not installed (pip install py-spy)")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for name, pid in self.pids.items():
            command = [binary, "record", "--pid", str(pid), "-r", str(self.rate), "-f", "raw"]
            command += [
                "--full-filenames",
                "--nonblocking",
                "-o",
                str(self.out_dir / f"{name}.txt"),
            ]
            if self.idle:
                command.append("--idle")
            self.procs.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
        return self

    def stop(self) -> list[str]:
        """Stop sampling (py-spy writes its file on SIGINT); the files written."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        return [str(p) for p in sorted(self.out_dir.glob("*.txt"))]
