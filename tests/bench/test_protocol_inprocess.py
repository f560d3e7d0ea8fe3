"""Row 10b, the protocol's HITL round trip in process, and how row 10 is judged against it.

The round trip is the one row 10 times over HTTP (`bench/workloads/protocol_inprocess.py`):
here it runs on the test database and must do what the protocol's requests do (a review
item at the pause, a decision by the decision service, the run ended with the graph's
answer); the table judges row 10 against row 3 and against row 10b, each beside the other.
"""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.models import Run, Thread
from bench import plan, report
from bench.live.protocol_graphs import GRAPHS
from bench.workloads import protocol, protocol_inprocess
from reviews.models import Decision, ReviewItem


@pytest.fixture(autouse=True)
def _protocol_graphs(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **GRAPHS},
        "RATE_DECISIONS": "1000000/10",
    }


@pytest.mark.django_db(transaction=True)
def test_the_round_trip_pauses_in_the_inbox_and_the_decision_service_resumes_it() -> None:
    user = protocol.reviewer()

    marks = protocol_inprocess._roundtrip(user, 7)

    assert len(marks) == len(protocol_inprocess.PARTS) + 1
    assert marks == sorted(marks)
    thread = Thread.objects.get()
    started, resumed = Run.objects.filter(thread=thread).order_by("created_at")
    assert (started.status, resumed.status) == (Run.Status.INTERRUPTED, Run.Status.SUCCEEDED)
    item = ReviewItem.objects.get(thread=thread)
    assert item.status == ReviewItem.Status.DECIDED
    decision = Decision.objects.get(item=item)
    assert (decision.user_id, decision.resume_run_id) == (user.pk, resumed.pk)

    counted = protocol_inprocess._counted(user, 2)
    assert counted["statements"] > counted["commits"] >= 5


def _result(config: str, engine: str, **figures: Any) -> dict[str, Any]:
    return {"config": config, "engine": engine, "status": "ok", **figures}


def test_row_10_is_judged_against_row_3_and_against_row_10b() -> None:
    configs = [c for c in plan.CONFIGS if c.key in ("protocol_inprocess", "protocol")]
    results = report.group(
        [
            _result("hitl_postgres", "beamweaver", total_ms={"median": 2.5}),
            _result("protocol_inprocess", "beamweaver", roundtrip_ms={"median": 50.0}),
            _result(
                "protocol",
                "beamweaver",
                beamweaver={"roundtrip_ms": {"median": 90.0}},
                langgraph={"roundtrip_ms": {"median": 2000.0}},
            ),
        ]
    )
    rows = {(r.key, r.metric): r for r in report.build_rows(configs, results)}

    against_engine = rows[
        ("protocol", "same, vs BeamWeaver's in-process Postgres HITL round trip (row 3)")
    ]
    assert (against_engine.target, against_engine.result) == (
        "≤ 5.00 ms (2 x 2.50 ms in-process engine, row 3)",
        "FAIL",
    )
    durable = "same, vs the same round trip in process through the durable runtime (row 10b)"
    against_durable = rows[("protocol", durable)]
    assert (against_durable.target, against_durable.result) == (
        "≤ 100.00 ms (2 x 50.00 ms in process, durable, row 10b)",
        "pass",
    )
    assert rows[("protocol_inprocess", plan.PROTOCOL_INPROCESS.metrics[0].label)].beamweaver == 50.0

    without = report.group(
        r for rs in results.values() for r in rs if r["config"] != "protocol_inprocess"
    )
    unmeasured = {(r.key, r.metric): r for r in report.build_rows(configs, without)}
    assert unmeasured[("protocol", durable)].result == ""
    assert "not measured in this run" in unmeasured[("protocol", durable)].target
