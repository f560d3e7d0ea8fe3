"""Spans for runs, nodes, model calls and tool calls, with the trace context carried from
the HTTP request that started or decided a run to the worker process that executed it.

The test process serves the requests (Django's test client, with OpenTelemetry's
Django instrumentation and the SDK's in-memory exporter); a separate worker process
(`traced_worker`, its own in-memory exporter) executes the runs from the database.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from beamweaver_core.models import Run
from beamweaver_core.observability import tracing
from bench.hostile.agents import GRAPHS, agent_input
from reviews.models import ReviewItem
from tests.operations.http import hidden_fields
from tests.reviews.conftest import client_for, make_reviewer
from tests.support.processes import ROOT, child_env

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
EMAIL = {
    "name": "send_email",
    "args": {"to": "ops@example.com", "subject": "Key", "body": f"use {SECRET}"},
}
STARTED = "0af7651916cd43dd8448eb211c80319c"
DECIDED = "4bf92f3577b34da6a3ce929d0e0e4736"


def _traceparent(trace_id: str) -> str:
    return f"00-{trace_id}-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    DjangoInstrumentor().instrument()
    yield memory
    DjangoInstrumentor().uninstrument()
    # The provider stays for the session (OpenTelemetry sets it once); its exporter
    # keeps nothing more.
    memory.shutdown()


def _server_span(memory: InMemorySpanExporter, trace_id: str) -> Any:
    spans = [
        s
        for s in memory.get_finished_spans()
        if s.kind == trace.SpanKind.SERVER and format(s.context.trace_id, "032x") == trace_id
    ]
    assert len(spans) == 1, [s.name for s in memory.get_finished_spans()]
    return spans[0]


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_run_continues_the_trace_of_the_request_that_started_or_decided_it(
    settings: Any, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **GRAPHS},
    }
    bob, alice = make_reviewer("bob"), make_reviewer("alice")
    plan = agent_input([EMAIL])["messages"][0]["content"]
    started = client_for(bob).post(
        "/runs/new/",
        {"graph": "ledger_agent", "message": plan},
        HTTP_TRACEPARENT=_traceparent(STARTED),
    )
    assert started.status_code == 302
    run = Run.objects.get()
    assert run.trace_context["traceparent"].split("-")[1] == STARTED
    start_span = _server_span(exporter, STARTED)
    assert format(start_span.parent.span_id, "016x") == "b7ad6b7169203331"  # the caller's

    out = tmp_path / "spans.json"
    env = child_env(BEAMWEAVER_GRAPHS=json.dumps(GRAPHS), BEAMWEAVER_TRACE_TOOL_ARGUMENTS="1")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.operations.traced_worker", run.thread_id, "2", str(out)],
        env=env,
        cwd=ROOT,
    )
    try:
        items = ReviewItem.objects.filter(thread_id=run.thread_id)
        for _ in range(300):
            if items.exists():
                break
            assert worker.poll() is None, "the worker exited early"
            time.sleep(0.1)
        item = items.get()
        reviewer = client_for(alice)
        page = reviewer.get(f"/items/{item.pk}/").content.decode()
        fields = {k: v for k, v in hidden_fields(page).items() if k != "csrfmiddlewaretoken"}
        decided = reviewer.post(
            f"/items/{item.pk}/decide/",
            {**fields, "d0-type": "approve"},
            HTTP_TRACEPARENT=_traceparent(DECIDED),
        )
        assert decided.status_code == 302 and Run.objects.filter(kind="resume").exists()
        assert worker.wait(120) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    decide_span = _server_span(exporter, DECIDED)
    spans = json.loads(out.read_text())
    by_id = {s["span_id"]: s for s in spans}
    runs = {
        s["attributes"]["beamweaver.run.kind"]: s for s in spans if s["name"] == "run ledger_agent"
    }
    resume = Run.objects.get(kind="resume")

    # The hop: each run's span is a child of the request that queued it.
    assert runs["start"]["trace_id"] == STARTED
    assert runs["start"]["parent_id"] == format(start_span.context.span_id, "016x")
    assert runs["resume"]["trace_id"] == DECIDED
    assert runs["resume"]["parent_id"] == format(decide_span.context.span_id, "016x")
    assert runs["start"]["kind"] == runs["resume"]["kind"] == "CONSUMER"
    assert runs["start"]["attributes"] == {
        "beamweaver.graph": "ledger_agent",
        "beamweaver.thread_id": run.thread_id,
        "beamweaver.run_id": str(run.id),
        "beamweaver.run.kind": "start",
        "beamweaver.run.attempt": 1,
        "beamweaver.run.status": "interrupted",
    }
    assert runs["resume"]["attributes"]["beamweaver.run_id"] == str(resume.id)
    assert runs["resume"]["attributes"]["beamweaver.run.status"] == "succeeded"

    def under(span: dict[str, Any]) -> list[str]:
        """The names of `span`'s ancestors, nearest first."""
        names = []
        while span["parent_id"] in by_id:
            span = by_id[span["parent_id"]]
            names.append(span["name"])
        return names

    model_calls = [s for s in spans if s["name"] == "chat plan"]
    assert len(model_calls) == 2  # the proposal, and the answer after the tool ran
    for call in model_calls:
        assert under(call)[:2] == ["node model", "run ledger_agent"]
        assert call["attributes"]["gen_ai.provider.name"] == "hostile"
        assert call["kind"] == "CLIENT"
    (tool,) = [s for s in spans if s["name"] == "execute_tool send_email"]
    assert tool["trace_id"] == DECIDED
    assert under(tool)[:2] == ["node tools", "run ledger_agent"]
    assert tool["attributes"]["gen_ai.tool.name"] == "send_email"
    assert tool["attributes"]["gen_ai.tool.call.id"] == "t0-c0"
    # Arguments only because this worker allows them, and redacted even then.
    arguments = json.loads(tool["attributes"]["gen_ai.tool.call.arguments"])
    assert arguments == {**EMAIL["args"], "body": "use [redacted]"}
    assert SECRET not in out.read_text()
    nodes = {s["attributes"]["beamweaver.node"] for s in spans if s["name"].startswith("node ")}
    assert {"model", "tools"} <= nodes
    assert all(s["status"] != "ERROR" for s in spans), [s for s in spans if s["status"] == "ERROR"]


def test_tool_arguments_stay_out_of_spans_unless_allowed(exporter: InMemorySpanExporter) -> None:
    tracing.configure(record_arguments=False)
    with tracing.tool_span("send_email", "c1", {"to": "a@example.com"}):
        pass
    span = exporter.get_finished_spans()[-1]
    assert span.name == "execute_tool send_email"
    assert "gen_ai.tool.call.arguments" not in (span.attributes or {})


def test_a_failing_node_marks_its_span_failed(exporter: InMemorySpanExporter) -> None:
    from beamweaver_core.graph import START, Graph

    def broken(state: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    graph = Graph(name="broken").add_node("broken", broken).add_edge(START, "broken").compile()
    with pytest.raises(RuntimeError):
        graph.invoke({})
    span = next(s for s in reversed(exporter.get_finished_spans()) if s.name == "node broken")
    assert span.status.status_code == trace.StatusCode.ERROR
    assert span.events[0].name == "exception"
