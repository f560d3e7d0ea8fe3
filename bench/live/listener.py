"""A websocket client of the inbox, in a process of its own: `python -m bench.live.listener`.

It opens `clients` sockets to `ws/inbox/` with the reviewer's session cookie and the
page's `Origin` (as a browser tab does), prints `ready` once every socket received its
first frame (the snapshot sent on connect), then records, for every frame, the wall-clock
time it was received (`time.time()`, the clock Postgres and Django timestamps use on this
machine), the socket, the review item rows it names (`item-row-<id>`) and its size. Each
frame is appended at once as one JSON line to `--out`, so the parent can follow the
frames while they arrive; SIGTERM ends it. `InboxListener` starts, follows and stops it.

Running in its own process, its receive times are not delayed by the load generator.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.env import ROOT
from bench.live.server import guarded

COOKIE_VARIABLE = "BENCH_WS_COOKIE"
"""The Cookie header comes in the environment (not in argv, where `ps` shows it)."""

ROW_ID = re.compile(r'id="item-row-(\d+)"')


def item_ids(frame: str) -> list[int]:
    """The review items a pushed inbox fragment names (new, changed or removed rows)."""
    return sorted({int(match) for match in ROW_ID.findall(frame)})


async def _listen(url: str, origin: str, cookie: str, index: int, sink: Any, ready: Any) -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    async with connect(
        url, origin=Origin(origin), additional_headers={"Cookie": cookie}, max_size=2**22
    ) as socket:
        first = True
        async for frame in socket:
            received = time.time()
            text = frame if isinstance(frame, str) else frame.decode()
            sink.write(json.dumps([received, index, item_ids(text), len(text)]) + "\n")
            sink.flush()
            if first:
                first = False
                ready.release()


async def main_async(args: argparse.Namespace) -> list[str]:
    """Listen until SIGTERM, appending one JSON line per frame to `args.out`; the errors."""
    ready = asyncio.Semaphore(0)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    with args.out.open("w") as sink:
        tasks = [
            asyncio.create_task(_listen(args.url, args.origin, args.cookie, i, sink, ready))
            for i in range(args.clients)
        ]
        for _ in range(args.clients):
            await ready.acquire()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await stop.wait()
    errors = [
        repr(task.exception()) for task in tasks if task.done() and task.exception() is not None
    ]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="ws://host:port/ws/inbox/")
    parser.add_argument("--origin", required=True, help="the page's origin (http://host:port)")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.cookie = os.environ[COOKIE_VARIABLE]
    errors = asyncio.run(main_async(args))
    for error in errors:
        sys.stderr.write(error + "\n")
    return 0


def spawn_client(module_args: list[str], cookie: str) -> subprocess.Popen[str]:
    """`python -m <module_args>` with the session cookie in its environment (text pipes)."""
    return subprocess.Popen(
        guarded([sys.executable, "-m", *module_args]),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), COOKIE_VARIABLE: cookie},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_line(proc: subprocess.Popen[str], timeout: float) -> str | None:
    """The first line `proc` prints (stripped), or `None` when none came within `timeout`."""
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if selector.select(timeout):
            return proc.stdout.readline().strip()
    return None


class InboxListener:
    """Starts the listener process, waits for `ready`, and collects its frames on `stop()`."""

    def __init__(self, ws_base: str, origin: str, cookie: str, clients: int, out: Path) -> None:
        self.out = out
        self.proc = spawn_client(
            [
                "bench.live.listener",
                "--url",
                f"{ws_base}/ws/inbox/",
                "--origin",
                origin,
                "--clients",
                str(clients),
                "--out",
                str(out),
            ],
            cookie,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        if first_line(self.proc, timeout) == "ready":
            return
        self.proc.kill()
        _, err = self.proc.communicate(timeout=5)
        raise RuntimeError(f"the inbox websocket did not open: {err.strip()[-800:]}")

    def frames(self) -> list[list[Any]]:
        """The frames received so far: `[time, socket, item ids, bytes]` each."""
        if not self.out.exists():
            return []
        lines = self.out.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("]")]

    def seen(self) -> set[tuple[int, int]]:
        """(socket, item id) pairs some frame named so far."""
        return {(socket, i) for _, socket, ids, _ in self.frames() for i in ids}

    def wait_for(
        self, wanted: set[tuple[int, int]], timeout: float, quiet: float = 3.0
    ) -> set[tuple[int, int]]:
        """Wait until every (socket, item) in `wanted` was named by a frame, or no frame
        came for `quiet` seconds, or `timeout` passed; the pairs still missing."""
        deadline = time.monotonic() + timeout
        count, last_change = -1, time.monotonic()
        while True:
            frames = self.frames()
            missing = wanted - {(s, i) for _, s, ids, _ in frames for i in ids}
            now = time.monotonic()
            if len(frames) != count:
                count, last_change = len(frames), now
            if not missing or now > deadline or now - last_change > quiet:
                return missing
            time.sleep(0.2)

    def stop(self, timeout: float = 15.0) -> dict[str, Any]:
        """Stop listening; `frames` as in `frames()`, and the sockets' `errors`."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=5)
        return {"frames": self.frames(), "errors": (err or "").strip().splitlines()[-5:]}

    def __enter__(self) -> InboxListener:
        self.wait_ready()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


if __name__ == "__main__":
    sys.exit(main())
