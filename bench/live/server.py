"""The product's own server, started by the harness: `manage.py serve` (daphne) in a child
process on the benchmark database, over loopback only.

Two modes, as the product deploys:

- `single`: one process. The in-memory channel layer and the in-process workers
  (`BEAMWEAVER_WORKER_MODE=inline`): a run, its pause, the push and the decision all
  happen inside the one daphne process (the default on one machine).
- `redis`: daphne with the Redis channel layer (`REDIS_URL`, a channel prefix of its own
  so that nothing else on the Redis server hears the hints) and a separate
  `manage.py beamweaver_worker` process that runs the graphs.

Everything else is the product's defaults (2 worker threads, a 2 s poll behind the
hints, the database pool), with logging at WARNING.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.env import ROOT
from bench.live.session import server_env

MODES = ("single", "redis")
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_url() -> str:
    return os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)


def redis_unreachable_reason() -> str | None:
    """Why the Redis mode cannot run here, or `None` when Redis answers PING."""
    try:
        import redis

        redis.Redis.from_url(redis_url(), socket_connect_timeout=2).ping()
    except Exception as exc:  # any failure means "not here"
        return f"Redis not reachable at {redis_url()} ({type(exc).__name__})"
    return None


def guarded(command: list[str]) -> list[str]:
    """`command` run so that it gets SIGTERM when the process that started it dies (a
    timed-out benchmark run must not leave a server behind): util-linux `setpriv
    --pdeathsig`, where it exists."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *command] if setpriv else command


def redis_layer() -> dict[str, str]:
    """The Redis channel layer of one `redis`-mode server: a prefix of its own, so that
    nothing else on the Redis server hears its hints."""
    return {"REDIS_URL": redis_url(), "BEAMWEAVER_CHANNEL_PREFIX": f"bench{uuid.uuid4().hex[:8]}"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """daphne (and, in `redis` mode, one worker process) until `stop()`."""

    def __init__(
        self,
        database_url: str,
        mode: str,
        log_dir: Path,
        layer: dict[str, str] | None = None,
        *,
        workers: int = 1,
        graphs: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """`workers`: how many worker processes `start()` runs in `redis` mode (0: none;
        start them with `spawn_worker`); `graphs`: more graphs to register; `env`: more
        variables for every process (settings a workload changes from the defaults)."""
        if mode not in MODES:
            raise ValueError(f"unknown server mode {mode!r}; use one of {MODES}")
        self.mode = mode
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.ws_base = f"ws://127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.env = {**os.environ, **server_env(database_url, graphs), "PYTHONPATH": str(ROOT)}
        self.env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.env.update(env or {})
        if mode == "single":
            self.env.pop("REDIS_URL", None)
            self.env["BEAMWEAVER_WORKER_MODE"] = "inline"
        else:
            self.env.update(layer or redis_layer())
            self.env["BEAMWEAVER_WORKER_MODE"] = "external"
        self.workers = workers if mode == "redis" else 0
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def _spawn(
        self, name: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.log_dir / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            guarded([sys.executable, str(ROOT / "manage.py"), *args]),
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.processes[name] = proc
        return proc

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.log_dir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def start(self, timeout: float = 60.0) -> LiveServer:
        """Start the processes and wait until the login page answers (and the worker runs)."""
        self._spawn(
            "daphne",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            env={"PGAPPNAME": self.env.get("PGAPPNAME", "beamweaver-daphne")},
        )
        for index in range(self.workers):
            self.spawn_worker("worker" if index == 0 else f"worker{index + 1}")
        deadline = time.monotonic() + timeout
        while True:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}):\n{self.log_tail(name)}")
            if self._answers() and self._worker_ready():
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the live server did not start:\n{self.log_tail('daphne')}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/accounts/login/", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _worker_ready(self) -> bool:
        return all(self.worker_ready(name) for name in self.processes if name != "daphne")

    def spawn_worker(
        self, name: str, *, threads: int = 2, grace: float = 5.0, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """One more `manage.py beamweaver_worker` process, logging to `<name>.log`; its
        Postgres `application_name` is `name` (faults target it by that)."""
        return self._spawn(
            name,
            "beamweaver_worker",
            "--threads",
            str(threads),
            "--grace",
            str(grace),
            "--name",
            name,
            env={"PGAPPNAME": name, **(env or {})},
        )

    def worker_ready(self, name: str) -> bool:
        """Whether worker `name` has said it is waiting for runs."""
        return "waiting for runs" in self.log_tail(name, 50)

    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.processes.items()}

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM every process (daphne stops its workers; the worker gives runs back),
        then SIGKILL what is left after `timeout`."""
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.processes.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Any:
        self.stop()
        return None
