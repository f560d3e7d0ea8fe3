"""Case 23: Redis down for 60 s (quick: 5 s) under reviewers and open inbox sockets.

daphne and one worker in `redis` mode on a throwaway Redis (`bench.hostile.redis`), a
pile of paused runs, inbox sockets that reconnect as htmx does. Redis gets `SHUTDOWN
NOSAVE`; while it is down, reviewers keep approving (2 per second, open loop), the inbox
page is fetched twice a second and new runs are queued in Postgres; then Redis starts
again on the same port. Checks: every decision answered 2xx and stored (0 lost, 0 5xx),
inbox pages 200, resumes ran while Redis was down (the queue is Postgres), the sockets
closed or went quiet and were all open again afterwards, each reopened socket's snapshot
equals the first inbox page in Postgres. Figure: Redis back → first push naming a run
paused after the restart.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import pg
from bench.hostile import realtime
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.sockets import SocketFleet, frames, reconnect_gaps
from bench.live import load
from bench.stats import summarize_ms


async def _outage(stack: Any, team: list[Any], items: list[dict[str, Any]], seconds: float) -> Any:
    base = stack.server.base
    n_runs = max(1, int(seconds))
    return await asyncio.gather(
        realtime.decide_paced(base, team, items, 2.0),
        realtime.inbox_pages(base, stack.reviewer, seconds),
        load.queue_runs_paced(n_runs, 1.0, "down"),
    )


def _first_push_after(stack: Any, fleet: SocketFleet, since: float, timeout: float) -> float | None:
    """Queue a run every 0.5 s until a socket receives a frame naming an item created after
    `since`; the wall-clock time of that frame."""
    url = stack.database_url
    deadline = time.monotonic() + timeout
    k = 0
    while time.monotonic() < deadline:
        asyncio.run(load.queue_run(f"back-{k}"))
        k += 1
        time.sleep(0.5)
        with pg.connect(url) as conn:
            rows = conn.execute(
                "SELECT id FROM bw_review_item WHERE created_at > to_timestamp(%s)", (since,)
            ).fetchall()
        new = {r[0] for r in rows}
        hits = [f[1] for f in frames(fleet.events()) if f[1] > since and set(f[3]) & new]
        if hits:
            return min(hits)
    return None


def run(options: Options) -> Outcome:
    down_s = 5.0 if options.quick else 60.0
    sockets = 5 if options.quick else 20
    decide_n = int(down_s * 2)
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {}
    notes: list[str] = []
    with realtime.redis_stack(keep=options.keep) as (stack, redis):
        url, base = stack.database_url, stack.server.base
        paused = realtime.make_pending(stack, decide_n + 40, "setup")
        team = realtime.reviewers(4, "r23")
        with realtime.inbox_fleet(stack, sockets) as fleet:
            figures["sockets_open_at_start"] = f"{fleet.wait_ready()}/{sockets}"
            items = realtime.pending_items(url)
            baseline = asyncio.run(realtime.decide_paced(base, team, items[:4], 2.0))
            down_at = redis.shutdown()
            decided, pages, (queued, _) = asyncio.run(
                _outage(stack, team, items[4 : 4 + decide_n], down_s)
            )
            resumed_down = realtime.wait_resumed(decided, url, 1.0)
            queued_paused = load.count(
                url,
                "SELECT count(*) FROM bw_review_item WHERE thread_id = ANY(%s)",
                ([s.ref for s in queued],),
            )
            up_at = redis.start()
            first_push = _first_push_after(stack, fleet, up_at, 60.0)
            reopened = fleet.wait_open(sockets, 60.0)
            resumed = realtime.wait_resumed(decided, url, 60.0)
            time.sleep(3.0)  # quiet: the last runs pause, their pushes land
            page_now = realtime.first_page(url)
            events = fleet.stop()
        every = baseline + decided
        kept = realtime.durable(every, url)
        closed = {e[2] for e in events if e[0] == "close" and down_at <= e[1] <= up_at + 1}
        heard_down = {f[2] for f in frames(events) if down_at + 1 < f[1] < up_at}
        snapshots = _last_snapshots(events)
        stale = [i for i in closed if snapshots.get(i) not in (None, page_now)]
        accepted = [s for s in decided if 200 <= s.status < 300]
        figures.update(
            {
                "redis_down_s": round(up_at - down_at, 1),
                "paused_runs_set_up": paused,
                "decisions_during_outage": f"{len(accepted)}/{len(decided)} 2xx",
                "decision_statuses": realtime.statuses(decided),
                "decision_ms_during_outage": realtime.latency(decided),
                "decisions_lost": f"{kept['lost']}/{kept['accepted']} accepted",
                "resumed_while_down": f"{resumed_down}/{len(accepted)}",
                "resumed_after": f"{resumed}/{len(accepted)}",
                "inbox_pages_during_outage": realtime.statuses(pages),
                "inbox_page_ms_during_outage": realtime.latency(pages),
                "runs_queued_while_down_paused": f"{queued_paused}/{len(queued)}",
                "sockets_closed_by_outage": f"{len(closed)}/{sockets}",
                "sockets_hearing_frames_while_down": f"{len(heard_down)}/{sockets}",
                "sockets_open_after": f"{reopened}/{sockets}",
                "socket_closed_to_reopened_ms": summarize_ms(reconnect_gaps(events, down_at)),
                "redis_back_to_socket_reopened_ms": summarize_ms(_reopened(events, up_at)),
                "redis_back_to_first_push_s": None
                if first_push is None
                else round(first_push - up_at, 2),
                "reopened_snapshot_differs_from_postgres": f"{len(stale)}/{len(closed)}",
            }
        )
        checks["decisions 2xx during outage"] = len(accepted) == len(decided)
        checks["0 decision 5xx"] = not any(s.status >= 500 for s in every)
        checks["0 lost decisions"] = kept["lost"] == 0 and kept["stored"] == kept["accepted"]
        checks["inbox renders during outage"] = all(p.status == 200 for p in pages)
        checks["runs resume (queue in Postgres)"] = resumed == len(accepted)
        checks["sockets closed or quiet"] = len(heard_down) == 0 or len(closed) == sockets
        checks["sockets reconnect"] = reopened == sockets
        checks["push after Redis returns"] = first_push is not None
        checks["reopened sockets resync"] = not stale
        if len(closed) < sockets:
            notes.append(
                f"{sockets - len(closed)} socket(s) stayed open and quiet; the page's 20 s poll "
                "resyncs them"
            )
    return Outcome(23, CASE.title, all(checks.values()), figures, checks, notes)


def _reopened(events: list[list[Any]], up_at: float) -> list[float]:
    """Per socket: seconds from Redis answering again to its first open after that."""
    first: dict[int, float] = {}
    for event in events:
        if event[0] == "open" and event[1] >= up_at:
            first.setdefault(event[2], event[1] - up_at)
    return list(first.values())


def _last_snapshots(events: list[list[Any]]) -> dict[int, set[int]]:
    """Per socket: the items of the first frame after its last open (the resync snapshot)."""
    out: dict[int, set[int]] = {}
    waiting: set[int] = set()
    for event in events:
        if event[0] == "open":
            waiting.add(event[2])
        elif event[0] == "frame" and event[2] in waiting:
            waiting.discard(event[2])
            out[event[2]] = set(event[3])
    return out


CASE = Case(23, "Redis down for 60 s", run, budget_s=300)
