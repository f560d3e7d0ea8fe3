"""One side of a scale measurement (the big database or its empty twin), in a process
configured on that database: `python -m bench.scale side ACTION '{json}'` prints JSON.

- `setup`: a logged-in reviewer, `deciders` more (nobody may approve a run they started;
  several keep each under the decision rate limit), `items` fresh pending items written
  through the runtime (the decision POSTs answer these, so the fixture's own items stay
  pending), `long` threads of `turns` invokes each (what `prune_checkpoints` has to
  prune), and one of the database's oldest pending items and its thread for the item and
  thread pages. Everything it creates is named with the run's `tag`.
- `resume`: `n` round trips of a scale graph on `PostgresCheckpointer` in this process
  (invoke to the review, then resume with an approval), timed separately.
- `cleanup`: delete the tag's threads (every row of them) and users.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench.live.session import create_reviewer
from bench.scale import sample


def _thread_id(tag: str, kind: str, i: int) -> str:
    return f"scale-m-{tag}-{kind}-{i}"


def setup(p: dict[str, Any]) -> dict[str, Any]:
    from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
    from beamweaver_core.runtime import registry
    from reviews.models import ReviewItem

    tag = str(p["tag"])
    reviewer = create_reviewer(f"scale-m-{tag}-reviewer")
    deciders = [create_reviewer(f"scale-m-{tag}-decider-{k}") for k in range(int(p["deciders"]))]
    who = sample.people()
    items = []
    for i in range(int(p["items"])):
        tid = sample.real_thread(
            "scale_email",
            f"cust-{i % 1000:04d}",
            f"ord-m{i:06d}",
            decided=False,
            who=who,
            thread_id=_thread_id(tag, "decide", i),
        )
        item = ReviewItem.objects.get(thread_id=tid)
        items.append({"id": item.pk, "interrupt_id": item.interrupt_id, "digest": item.digest})
    graph = registry.compiled_graph("scale_notify", PostgresCheckpointer())
    for i in range(int(p["long"])):
        config = {"configurable": {"thread_id": _thread_id(tag, "long", i)}}
        for turn in range(int(p["turns"])):
            graph.invoke({"customer": f"cust-{turn:04d}", "order": f"ord-l{i:06d}"}, config)
            graph.resume({"decisions": [{"type": "reject", "message": "no"}]}, config)
    oldest = (
        ReviewItem.objects.filter(status="pending")
        .exclude(thread__id__startswith=f"scale-m-{tag}-")
        .order_by("created_at", "id")
        .values("id", "thread_id")
        .first()
    ) or {"id": items[0]["id"], "thread_id": _thread_id(tag, "decide", 0)}
    return {
        "reviewer": _fields(reviewer),
        "deciders": [_fields(d) for d in deciders],
        "items": items,
        "page_item": oldest["id"],
        "page_thread": oldest["thread_id"],
    }


def _fields(reviewer: Any) -> dict[str, str]:
    return {
        "username": reviewer.username,
        "session_key": reviewer.session_key,
        "csrf_token": reviewer.csrf_token,
    }


def resume(p: dict[str, Any]) -> dict[str, Any]:
    """Engine round trips on fresh threads: seconds to the review, seconds to the end."""
    from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
    from beamweaver_core.runtime import registry

    tag, n = str(p["tag"]), int(p["n"])
    graph = registry.compiled_graph("scale_email", PostgresCheckpointer())
    to_pause, to_end = [], []
    for i in range(int(p.get("warmup", 5)) + n):
        config = {"configurable": {"thread_id": _thread_id(tag, f"resume{p['round']}", i)}}
        t0 = time.perf_counter()
        paused = graph.invoke({"customer": "cust-0001", "order": f"ord-r{i:06d}"}, config)
        t1 = time.perf_counter()
        done = graph.resume({"decisions": [{"type": "approve"}]}, config)
        t2 = time.perf_counter()
        if (
            not paused.interrupts
            or getattr(done, "interrupts", ())
            or done.state.get("executed") != 1
        ):
            raise RuntimeError(f"round trip {i} did not pause and finish as expected")
        if i >= int(p.get("warmup", 5)):
            to_pause.append(t1 - t0)
            to_end.append(t2 - t1)
    return {"invoke_s": to_pause, "resume_s": to_end}


def cleanup(p: dict[str, Any]) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.db import connection

    from bench.scale import bulk

    prefix = f"scale-m-{p['tag']}-"
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM bw_thread WHERE id LIKE %s", [prefix + "%"])
        threads = [row[0] for row in cursor.fetchall()]
    connection.ensure_connection()
    conn = connection.connection
    for thread_id in threads:
        bulk.delete_thread(conn, thread_id)
    users = User.objects.filter(username__startswith=prefix)
    from reviews.models import Decision

    user_ids = list(users.values_list("pk", flat=True))
    Decision.objects.filter(user_id__in=user_ids).delete()
    with connection.cursor() as cursor:  # the audit log refuses ORM deletes, by design
        cursor.execute("DELETE FROM bw_review_audit WHERE actor_id = ANY(%s)", [user_ids])
    deleted = users.delete()[0]
    return {"threads": len(threads), "users": deleted}


ACTIONS = {"setup": setup, "resume": resume, "cleanup": cleanup}


def main(action: str, params: str) -> int:
    import django

    django.setup()
    result = ACTIONS[action](json.loads(params))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0
