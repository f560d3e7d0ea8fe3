"""A throwaway Redis for the hostile cases: the machine's Redis is shared, so faults go to
a `redis-server` of our own on a spare loopback port.

    with ThrowawayRedis() as redis:       # started, answers PING
        url = redis.url                   # redis://127.0.0.1:<port>/0
        redis.shutdown()                  # SHUTDOWN NOSAVE: down, nothing saved
        redis.start()                     # the same command line, the same port
        redis.pause(10_000)               # CLIENT PAUSE 10000 ALL (returns at once)

Nothing is persisted (`--save ""`, no AOF), so a restart comes back empty, as `shutdown
nosave` on a real deployment would leave it. The server is killed on exit, also on
failure, and gets SIGTERM if this process dies (`guarded`).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.live.server import free_port, guarded


class ThrowawayRedis:
    """One `redis-server` on 127.0.0.1:`port` (a free port unless given)."""

    def __init__(self, port: int | None = None) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis)")
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.dir = Path(tempfile.mkdtemp(prefix="hostile-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.dir / "redis.log"

    def command(self) -> list[str]:
        assert self.binary is not None
        return [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            str(self.dir),
        ]

    def client(self, timeout: float = 2.0) -> Any:
        import redis

        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    def ping(self) -> bool:
        try:
            with self.client(0.5) as conn:
                return bool(conn.ping())
        except Exception:
            return False

    def start(self, timeout: float = 10.0) -> float:
        """Start the server (again, on the same port); the wall-clock time it answered PING."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("this Redis is already running")
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                guarded(self.command()), stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log_tail()}")
            if self.ping():
                return time.time()
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"redis-server did not answer within {timeout} s: {self.log_tail()}")

    def shutdown(self, timeout: float = 10.0) -> float:
        """`SHUTDOWN NOSAVE` (what `redis-cli shutdown nosave` sends); the wall-clock time the
        process had exited."""
        try:
            with self.client() as conn:
                conn.shutdown(nosave=True)
        except Exception:
            pass  # the connection drops as the server exits
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return time.time()

    def pause(self, milliseconds: int) -> float:
        """`CLIENT PAUSE <ms> ALL`: every client's commands wait until it ends; returns the
        wall-clock time it was issued."""
        with self.client() as conn:
            conn.execute_command("CLIENT", "PAUSE", str(int(milliseconds)), "ALL")
        return time.time()

    def keys(self, pattern: str) -> dict[str, int]:
        """Keys matching `pattern` with their length (LLEN of lists, ZCARD of sorted sets)."""
        out: dict[str, int] = {}
        with self.client() as conn:
            for key in conn.scan_iter(match=pattern, count=500):
                kind = conn.type(key)
                if kind == b"zset":
                    out[key.decode()] = int(conn.zcard(key))
                elif kind == b"list":
                    out[key.decode()] = int(conn.llen(key))
        return out

    def log_tail(self, lines: int = 5) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ThrowawayRedis:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
