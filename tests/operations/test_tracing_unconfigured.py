"""With OpenTelemetry's API installed but no tracer provider configured, the engine makes
no spans at all (the API's no-op spans cost a node task more than the rest of its work:
a 10-node invoke 0.27 ms instead of 0.11 ms); once a provider is set, node spans are made.

Run in a fresh interpreter: OpenTelemetry's provider is process-global and set once, and
`test_tracing.py` sets one for the test session."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.support.processes import ROOT

SCRIPT = textwrap.dedent(
    """
    import json
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from beamweaver_core.graph import END, START, Graph
    from beamweaver_core.observability import tracing

    asked = []
    real_get_tracer = trace.get_tracer
    trace.get_tracer = lambda *a, **k: asked.append(a) or real_get_tracer(*a, **k)

    graph = (
        Graph()
        .add_node("a", lambda s: {"n": s["n"] + 1})
        .add_node("b", lambda s: {"n": s["n"] + 1})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile()
    )
    before = {"n": graph.invoke({"n": 0}).state["n"], "recording": tracing.recording(), "asked": len(asked)}

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    graph.invoke({"n": 0})
    after = {
        "recording": tracing.recording(),
        "spans": sorted(s.name for s in memory.get_finished_spans()),
    }
    print(json.dumps({"before": before, "after": after}))
    """
)


def test_no_tracer_provider_means_no_spans_and_a_provider_set_later_gets_them() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"]["n"] == 2
    assert result["before"]["recording"] is False
    assert result["before"]["asked"] == 0  # no tracer asked for, no span built
    assert result["after"]["recording"] is True
    assert result["after"]["spans"] == ["node a", "node b"]
