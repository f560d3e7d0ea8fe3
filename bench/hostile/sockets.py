"""Many live-page websockets that reconnect, in a process of their own:
`python -m bench.hostile.sockets` (started and read by `SocketFleet`).

`bench.live.listener` opens inbox sockets that never come back once closed; the hostile
cases need what a browser's htmx websocket extension does: reconnect after a close with
jittered exponential backoff (full jitter, 0.5 s doubling up to 8 s), the page's live
parts arriving again on every (re)connect. Each socket opens its own path (`ws/inbox/`,
`ws/threads/<id>/`, ...). Every event is appended at once as one JSON line to `--out`:

    ["open", time, socket, attempt]
    ["close", time, socket, why]
    ["frame", time, socket, [review item ids], [run event seqs], bytes, pending count]

Times are the wall clock (`time.time()`, the clock Postgres uses on this machine). The
`--slow` first sockets never read (a tab in a frozen background window): the client
stops taking bytes off the TCP socket once one frame is queued, so the server's writes
back up; SIGUSR1 makes them read again. SIGTERM ends the process; `ready` is printed once
every socket opened (or after `--ready-timeout`, with how many did).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.live.listener import COOKIE_VARIABLE, first_line, item_ids, spawn_client

EVENT_SEQ = re.compile(r'id="run-event-[0-9a-f-]+-(\d+)"')
PENDING_COUNT = re.compile(r"<strong>(\d+)</strong> pending")
BACKOFF_FIRST_S = 0.5
BACKOFF_CAP_S = 8.0


def pending_count(frame: str) -> int | None:
    """The pending count an inbox fragment shows (its counts line), if it has one."""
    match = PENDING_COUNT.search(frame)
    return int(match.group(1)) if match else None


def event_seqs(frame: str) -> list[int]:
    """The run events a pushed thread-page fragment carries (their sequence numbers)."""
    return sorted({int(match) for match in EVENT_SEQ.findall(frame)})


class _Fleet:
    def __init__(self, args: argparse.Namespace, sink: Any) -> None:
        self.args = args
        self.sink = sink
        self.opened: set[int] = set()
        self.all_open = asyncio.Event()
        self.reading = asyncio.Event()
        self.stop = asyncio.Event()

    def write(self, *record: Any) -> None:
        self.sink.write(json.dumps(record) + "\n")
        self.sink.flush()

    async def run_socket(self, index: int, path: str) -> None:
        from websockets.asyncio.client import connect
        from websockets.typing import Origin

        slow = index < self.args.slow
        attempt = 0
        rng = random.Random(index)
        while not self.stop.is_set():
            why = "closed"
            try:
                async with connect(
                    self.args.base + path,
                    origin=Origin(self.args.origin),
                    additional_headers={"Cookie": self.args.cookie},
                    max_size=2**22,
                    max_queue=1 if slow else 64,
                    compression=None,
                    proxy=None,
                    open_timeout=60,
                ) as socket:
                    self.write("open", time.time(), index, attempt)
                    attempt = 0
                    self.opened.add(index)
                    if len(self.opened) == self.args.clients:
                        self.all_open.set()
                    if slow:
                        await self.reading.wait()
                    async for frame in socket:
                        text = frame if isinstance(frame, str) else frame.decode()
                        self.write(
                            "frame",
                            time.time(),
                            index,
                            item_ids(text),
                            event_seqs(text),
                            len(text),
                            pending_count(text),
                        )
                    code = socket.close_code
                    why = f"code {code}"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                why = type(exc).__name__
            self.write("close", time.time(), index, why)
            if not self.args.reconnect:
                return
            delay = min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2**attempt)
            attempt += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), rng.uniform(0.05, delay))


async def main_async(args: argparse.Namespace) -> None:
    paths = Path(args.paths).read_text().split()
    args.clients = len(paths)
    loop = asyncio.get_running_loop()
    with Path(args.out).open("w") as sink:
        fleet = _Fleet(args, sink)
        loop.add_signal_handler(signal.SIGTERM, fleet.stop.set)
        loop.add_signal_handler(signal.SIGUSR1, fleet.reading.set)
        tasks = []
        for index, path in enumerate(paths):
            tasks.append(asyncio.create_task(fleet.run_socket(index, path)))
            await asyncio.sleep(1 / args.open_rate)  # pages load over time, not in one SYN flood
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fleet.all_open.wait(), args.ready_timeout)
        sys.stdout.write(f"ready {len(fleet.opened)}\n")
        sys.stdout.flush()
        await fleet.stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True, help="ws://host:port")
    parser.add_argument("--origin", required=True, help="the page's origin (http://host:port)")
    parser.add_argument("--paths", required=True, help="a file with one path per socket")
    parser.add_argument("--out", required=True)
    parser.add_argument("--slow", type=int, default=0, help="how many sockets never read")
    parser.add_argument("--reconnect", action="store_true")
    parser.add_argument("--ready-timeout", type=float, default=60.0)
    parser.add_argument("--open-rate", type=float, default=1000.0, help="first opens per second")
    args = parser.parse_args(argv)
    args.cookie = os.environ[COOKIE_VARIABLE]
    asyncio.run(main_async(args))
    return 0


class SocketFleet:
    """Starts the socket process, waits for `ready`, reads its events, stops it."""

    def __init__(
        self,
        ws_base: str,
        origin: str,
        cookie: str,
        paths: list[str],
        work_dir: Path,
        *,
        slow: int = 0,
        reconnect: bool = True,
        name: str = "sockets",
        open_rate: float = 1000.0,
        ready_timeout: float = 60.0,
    ) -> None:
        self.out = work_dir / f"{name}.jsonl"
        self.paths = paths
        listing = work_dir / f"{name}.paths"
        listing.write_text("\n".join(paths) + "\n")
        command = ["bench.hostile.sockets", "--base", ws_base, "--origin", origin]
        command += ["--paths", str(listing), "--out", str(self.out), "--slow", str(slow)]
        command += ["--open-rate", str(open_rate), "--ready-timeout", str(ready_timeout)]
        self.proc = spawn_client(command + (["--reconnect"] if reconnect else []), cookie)

    def wait_ready(self, timeout: float = 90.0) -> int:
        """How many sockets opened (raises when the process printed nothing in time)."""
        line = (first_line(self.proc, timeout) or "").split()
        if line[:1] == ["ready"]:
            return int(line[1])
        self.kill()
        raise RuntimeError("the socket fleet did not start")

    def events(self) -> list[list[Any]]:
        if not self.out.exists():
            return []
        lines = self.out.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("]")]

    def open_now(self) -> set[int]:
        """Sockets whose last open came after their last close."""
        state: dict[int, bool] = {}
        for event in self.events():
            if event[0] in ("open", "close"):
                state[event[2]] = event[0] == "open"
        return {index for index, is_open in state.items() if is_open}

    def wait_open(self, count: int, timeout: float) -> int:
        """Wait until `count` sockets are open (or `timeout`); how many are."""
        deadline = time.monotonic() + timeout
        while True:
            now_open = len(self.open_now())
            if now_open >= count or time.monotonic() > deadline:
                return now_open
            time.sleep(0.2)

    def resume_reading(self) -> None:
        self.proc.send_signal(signal.SIGUSR1)

    def stop(self, timeout: float = 20.0) -> list[list[Any]]:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        return self.events()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=5)

    def __enter__(self) -> SocketFleet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()


def reconnect_gaps(events: list[list[Any]], after: float) -> list[float]:
    """Per socket closed after `after`: seconds from its first close to its next open."""
    closed: dict[int, float] = {}
    gaps: dict[int, float] = {}
    for event in events:
        kind, at, index = event[0], event[1], event[2]
        if at < after or index in gaps:
            continue
        if kind == "close":
            closed.setdefault(index, at)
        elif kind == "open" and index in closed:
            gaps[index] = at - closed[index]
    return list(gaps.values())


def frames(events: list[list[Any]]) -> list[list[Any]]:
    """`["frame", time, socket, item ids, seqs, bytes, pending]` events only."""
    return [event for event in events if event[0] == "frame"]


def last_pending(events: list[list[Any]]) -> dict[int, int]:
    """Per socket: the pending count of the last frame that showed one (what its page says)."""
    out: dict[int, int] = {}
    for event in frames(events):
        if event[6] is not None:
            out[event[2]] = event[6]
    return out


def first_seen(events: list[list[Any]]) -> dict[tuple[int, int], float]:
    """(socket, item id) → receive time of the first frame naming the item's row."""
    out: dict[tuple[int, int], float] = {}
    for event in frames(events):
        for item_id in event[3]:
            out.setdefault((event[2], item_id), event[1])
    return out


if __name__ == "__main__":
    sys.exit(main())
