"""Workload 7c, the inbox page with 10,000 pending review items, on the live server.

`items` pending review items (each on a paused thread of its own, with its run) are
inserted in bulk, straight into the product's tables, with tool-review payloads like the
ones agents raise (`send_email`, `issue_refund`, `notify` over four graphs and a thousand
customers), then `ANALYZE`d. The logged-in reviewer then GETs, one request at a time
(closed loop) and interleaved:

- `inbox`: `/`, the first page of pending items (the target row);
- `search`: `/?q=<a customer id>` (matches about 10 items: a substring search over the
  payloads);
- `filtered`: `/?graph=refunds&tool=issue_refund` (about a quarter of the items).

Latency is from sending the request to the last byte of the answer (a full page).
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import httpx

from bench.live.stack import Stack, live_stack
from bench.stats import summarize_ms

DEFAULTS = {"items": 10_000, "requests": 200, "warmup": 10, "keep": False}

GRAPHS = ("refunds", "support_agent", "ops_assistant", "bench_review")
TOOLS = ("send_email", "issue_refund", "notify")
SEARCH_CUSTOMER = "cust-0417"
REQUESTS = {
    "inbox": "/",
    "search": f"/?q={SEARCH_CUSTOMER}",
    "filtered": "/?graph=refunds&tool=issue_refund",
}


def _payload(i: int) -> tuple[str, list[str], dict[str, Any]]:
    """The graph, the tools and the interrupt value of item `i` (deterministic)."""
    graph = GRAPHS[i % len(GRAPHS)]
    customer = f"cust-{(i * 7919) % 1000:04d}"
    tools = ["issue_refund"] if graph == "refunds" else [TOOLS[(i // 4) % len(TOOLS)]]
    if i % 10 == 0:
        tools = sorted({*tools, "notify"})
    actions, configs = [], []
    for tool in tools:
        if tool == "issue_refund":
            args: dict[str, Any] = {"order_id": f"ord-{i:06d}", "amount": 10 + i % 490}
        elif tool == "send_email":
            args = {
                "to": f"{customer}@example.com",
                "subject": f"About your order ord-{i:06d}",
                "body": "Hello,\nyour request was processed.\nRegards, support\n" * 3,
            }
        else:
            args = {"channel": "#ops", "text": f"{customer}: escalation {i}"}
        args["customer"] = customer
        actions.append({"name": tool, "args": args, "description": f"Run {tool} as proposed?"})
        configs.append({"action_name": tool, "allowed_decisions": ["approve", "reject"]})
    return graph, tools, {"action_requests": actions, "review_configs": configs}


def insert_items(n: int) -> int:
    """Insert `n` pending review items (threads and runs included), oldest first."""
    from django.db import connection
    from django.utils import timezone

    from beamweaver_core.models import Run, Thread
    from reviews import payloads
    from reviews.models import ReviewItem

    now = timezone.now()
    threads, runs, items = [], [], []
    for i in range(n):
        graph, tools, value = _payload(i)
        thread = Thread(id=f"{graph}-{uuid.uuid4().hex}", graph=graph, status="interrupted")
        run = Run(thread=thread, graph=graph, status="interrupted", finished_at=now)
        text = payloads.canonical(value)
        threads.append(thread)
        runs.append(run)
        items.append(
            ReviewItem(
                thread=thread,
                run=run,
                graph=graph,
                interrupt_id=uuid.uuid4().hex,
                node="tools",
                kind=ReviewItem.Kind.TOOL_REVIEW,
                payload_json=text,
                digest=payloads.digest(text),
                search_text=payloads.searchable(value),
                tool_names=tools,
                created_at=now - timedelta(seconds=n - i),
            )
        )
    Thread.objects.bulk_create(threads, batch_size=2000)
    Run.objects.bulk_create(runs, batch_size=2000)
    ReviewItem.objects.bulk_create(items, batch_size=2000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE bw_thread, bw_run, bw_review_item")
    return ReviewItem.objects.filter(status="pending").count()


def _get(http: httpx.Client, path: str) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = http.get(path)
    return time.perf_counter() - started, response


def _measure(stack: Stack, p: dict[str, Any]) -> dict[str, Any]:
    pending = insert_items(int(p["items"]))
    headers = {"Cookie": stack.reviewer.cookie}
    timings: dict[str, list[float]] = {name: [] for name in REQUESTS}
    shape: dict[str, dict[str, int]] = {}
    with httpx.Client(base_url=stack.server.base, headers=headers, timeout=60) as http:
        for _ in range(int(p["warmup"])):
            for path in REQUESTS.values():
                _get(http, path)
        for _ in range(int(p["requests"])):
            for name, path in REQUESTS.items():
                elapsed, response = _get(http, path)
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code}")
                timings[name].append(elapsed)
                shape[name] = {
                    "bytes": len(response.content),
                    "rows": response.text.count('id="item-row-'),
                }
    return {
        "items_pending": pending,
        **{f"{name}_ms": summarize_ms(values) for name, values in timings.items()},
        "pages": shape,
        "paths": REQUESTS,
    }


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Measure the inbox page over `params["items"]` pending items (single-process server)."""
    p = {**DEFAULTS, **params}
    with live_stack("single", 0, keep=bool(p["keep"])) as stack:
        return _measure(stack, p)
