"""The scale measurements: the big database and an empty one, side by side in one run.

Both databases get the same setup (`bench.scale.side`: a reviewer, fresh items, long
threads), and a live server each (`manage.py serve`, single process, as `bench.live`
runs it). Every measurement alternates between the two, request by request, so a change
in the machine's load lands on both and the ratio big / empty stays meaningful on a
shared machine:

- pages (closed loop, one request at a time): the inbox `/`, a deep page (`?page=`
  2,000), a search for one customer (`?q=`), the graph and tool filters, the decided
  items (`?status=decided`), an item page and a thread page;
- decisions: the inbox form's approve POST on each side's fresh items, one at a time at
  `rate` per second per side; POST latency, and POST sent → the resume run finished;
- the engine's resume: round trips on `PostgresCheckpointer` (invoke to the review,
  resume with an approval) in a process of each side, `rounds` alternating batches;
- `prune_checkpoints --keep 5` over the whole database (`bench.scale.prune`): wall time
  and the longest transaction (the longest any row lock was held), with `long` threads of
  `turns` turns to prune on each side.

The empty database is dropped afterwards; the big one keeps only what it had (the
run's threads and users are deleted).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from psycopg import sql

from bench import env as bench_env
from bench import pg
from bench.env import ROOT
from bench.live import database as live_database
from bench.live.server import LiveServer
from bench.live.session import Reviewer
from bench.scale import fixture, prune
from bench.scale.graphs import GRAPHS
from bench.stats import summarize_ms

logger = logging.getLogger("bench.scale")
logging.getLogger("httpx").setLevel(logging.WARNING)

DEFAULTS: dict[str, Any] = {
    "threads": fixture.THREADS,
    "pending": fixture.PENDING,
    "requests": 100,
    "warmup": 5,
    "items": 100,
    "deciders": 5,
    "rate": 2.0,
    "rounds": 2,
    "resumes": 100,
    "long": 200,
    "turns": 10,
    "prune": True,
}
SIDES = ("empty", "big")
SEARCH = "cust-0417"


def _side(action: str, url: str, params: dict[str, Any], timeout: float = 3600) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", "side", action, json.dumps(params)],
        cwd=ROOT,
        env=fixture.env(url),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"side {action} on {url}: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _empty_database() -> str:
    url = pg.with_database(pg.dsn(), f"bench_scale_empty_{os.getpid()}")
    if live_database._template_fingerprint() != live_database.fingerprint():
        reason = live_database.prepare_template()
        if reason is not None:
            raise RuntimeError(reason)
    with pg.connect(pg.with_database(url, "postgres")) as conn:
        name = sql.Identifier(pg.database_of(url))
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                name, sql.Identifier(live_database.TEMPLATE)
            )
        )
    return url


def _drop(url: str) -> None:
    with pg.connect(pg.with_database(url, "postgres")) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(pg.database_of(url))
            )
        )


def _reviewer(data: dict[str, str]) -> Reviewer:
    return Reviewer(data["username"], data["session_key"], data["csrf_token"])


def _paths(setup: dict[str, Any]) -> dict[str, str]:
    paths = {
        "inbox": "/",
        "deep_page": "/?page=2000",
        "search": f"/?q={SEARCH}",
        "filtered": "/?graph=scale_refund&tool=issue_refund",
        "decided": "/?status=decided",
        "item_page": f"/items/{setup['page_item']}/",
    }
    if setup["page_thread"]:
        paths["thread_page"] = f"/threads/{setup['page_thread']}/"
    return paths


def _pages(
    clients: dict[str, httpx.Client], setups: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    timings: dict[str, dict[str, list[float]]] = {s: {} for s in SIDES}
    shapes: dict[str, dict[str, Any]] = {s: {} for s in SIDES}
    paths = {s: _paths(setups[s]) for s in SIDES}
    names = [n for n in paths["big"] if n in paths["empty"]]
    for r in range(int(p["warmup"]) + int(p["requests"])):
        for name in names:
            for side in SIDES if r % 2 else tuple(reversed(SIDES)):
                started = time.perf_counter()
                response = clients[side].get(paths[side][name])
                elapsed = time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"{side} GET {paths[side][name]}: {response.status_code}")
                if r >= int(p["warmup"]):
                    timings[side].setdefault(name, []).append(elapsed)
                shapes[side][name] = {
                    "bytes": len(response.content),
                    "rows": response.text.count('id="item-row-'),
                }
    return {
        side: {
            **{f"{name}_ms": summarize_ms(values) for name, values in timings[side].items()},
            "pages": shapes[side],
        }
        for side in SIDES
    }


def _decisions(
    servers: dict[str, LiveServer], setups: dict[str, Any], urls: dict[str, str], rate: float
) -> dict[str, Any]:
    posts: dict[str, list[tuple[str, float, float, int]]] = {s: [] for s in SIDES}
    deciders = {s: [_reviewer(d) for d in setups[s]["deciders"]] for s in SIDES}
    clients = {s: httpx.Client(base_url=servers[s].base, timeout=60) for s in SIDES}
    try:
        for i, _ in enumerate(setups["big"]["items"]):
            for side in SIDES if i % 2 else tuple(reversed(SIDES)):
                item = setups[side]["items"][i]
                who = deciders[side][i % len(deciders[side])]
                client_id = uuid.uuid4().hex
                page = f"/items/{item['id']}/"
                data = {
                    "interrupt_id": item["interrupt_id"],
                    "digest": item["digest"],
                    "client_decision_id": client_id,
                    "d0-type": "approve",
                    "d0-message": "",
                }
                headers = who.htmx_headers(servers[side].base, "decision-panel", page)
                sent = time.time()
                response = clients[side].post(f"{page}decide/", data=data, headers=headers)
                posts[side].append((client_id, sent, time.time(), response.status_code))
            time.sleep(1.0 / rate)
    finally:
        for client in clients.values():
            client.close()
    time.sleep(2.0)  # the last resumes finish
    out = {}
    for side in SIDES:
        ids = [c for c, *_ in posts[side]]
        with pg.connect(urls[side]) as conn:
            finished = dict(
                conn.execute(
                    "SELECT d.client_decision_id, extract(epoch FROM r.finished_at)::float8 "
                    "FROM bw_review_decision d JOIN bw_run r ON r.id = d.resume_run_id "
                    "WHERE d.client_decision_id = ANY(%s) AND r.status = 'succeeded'",
                    (ids,),
                ).fetchall()
            )
        statuses: dict[str, int] = {}
        for *_, status in posts[side]:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
        out[side] = {
            "post_ms": summarize_ms([done - sent for _, sent, done, _ in posts[side]]),
            "resume_finished_ms": summarize_ms(
                [finished[c] - sent for c, sent, _, _ in posts[side] if c in finished]
            ),
            "statuses": statuses,
            "resumes_finished": len(finished),
        }
    return out


def _resumes(urls: dict[str, str], tag: str, p: dict[str, Any]) -> dict[str, Any]:
    got: dict[str, dict[str, list[float]]] = {s: {"invoke_s": [], "resume_s": []} for s in SIDES}
    for r in range(int(p["rounds"])):
        for side in SIDES if r % 2 else tuple(reversed(SIDES)):
            part = _side("resume", urls[side], {"tag": tag, "n": int(p["resumes"]), "round": r})
            for key in got[side]:
                got[side][key].extend(part[key])
    return {
        side: {
            "invoke_ms": summarize_ms(got[side]["invoke_s"]),
            "resume_ms": summarize_ms(got[side]["resume_s"]),
        }
        for side in SIDES
    }


def _ratios(result: dict[str, Any]) -> dict[str, float | None]:
    """big / empty of every figure both sides have (`<name>_ms.p95` → `<name>.p95`)."""
    out: dict[str, float | None] = {}
    for name, value in result["big"].items():
        other = result["empty"].get(name)
        if not (isinstance(value, dict) and isinstance(other, dict)):
            continue
        for stat in ("median", "p95", "p99"):
            if stat in value and other.get(stat):
                out[f"{name}.{stat}"] = round(value[stat] / other[stat], 3)
    return out


def run(params: dict[str, Any]) -> dict[str, Any]:
    """Everything above; per side its figures, and the ratios."""
    p = {**DEFAULTS, **params}
    load_before = bench_env.load()
    sizes = int(p["threads"]), int(p["pending"])
    marker = fixture.ensure(*sizes)
    urls = {"big": fixture.dsn(*sizes), "empty": _empty_database()}
    tag = uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    servers: dict[str, LiveServer] = {}
    result: dict[str, Any] = {"fixture": marker, "tag": tag}
    try:
        setups = {}
        for side in SIDES:
            logger.info("scale: setting up the %s database", side)
            setups[side] = _side(
                "setup",
                urls[side],
                {"tag": tag, **{k: p[k] for k in ("items", "deciders", "long", "turns")}},
            )
        for side in SIDES:
            (work / side).mkdir()
            servers[side] = LiveServer(urls[side], "single", work / side, graphs=GRAPHS).start()
        sides: dict[str, dict[str, Any]] = {s: {} for s in SIDES}
        logger.info("scale: pages")
        headers = {s: {"Cookie": _reviewer(setups[s]["reviewer"]).cookie} for s in SIDES}
        clients = {
            s: httpx.Client(base_url=servers[s].base, headers=headers[s], timeout=120)
            for s in SIDES
        }
        try:
            for side, figures in _pages(clients, setups, p).items():
                sides[side].update(figures)
        finally:
            for client in clients.values():
                client.close()
        logger.info("scale: decisions")
        for side, figures in _decisions(servers, setups, urls, float(p["rate"])).items():
            sides[side]["decisions"] = figures
            sides[side]["post_ms"] = figures["post_ms"]
            sides[side]["resume_finished_ms"] = figures["resume_finished_ms"]
        for server in servers.values():
            server.stop()
        servers = {}
        logger.info("scale: engine resumes")
        for side, figures in _resumes(urls, tag, p).items():
            sides[side].update(figures)
        if p["prune"]:
            for side in SIDES:
                logger.info("scale: prune_checkpoints on the %s database", side)
                sides[side]["prune"] = prune.measure(
                    urls[side], fixture.env(urls[side]), "--keep", "5"
                )
        result.update(sides)
        result["ratios"] = _ratios(result)
    finally:
        for server in servers.values():
            server.stop()
        try:
            result["cleanup"] = _side("cleanup", urls["big"], {"tag": tag})
        finally:
            _drop(urls["empty"])
            shutil.rmtree(work, ignore_errors=True)
    result["load"] = {"before": load_before, "after": bench_env.load()}
    return result
