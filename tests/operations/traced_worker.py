"""A worker process that records its spans with OpenTelemetry's in-memory exporter.

    python -m tests.operations.traced_worker THREAD_ID RUNS OUT.json

Runs a `Worker` (the durable runtime, as `manage.py beamweaver_worker` does) until the
thread has RUNS runs that ended or paused, then writes the finished spans to OUT.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def main(thread_id: str, runs: int, out: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    import django

    django.setup()
    from beamweaver_core.models import Run
    from beamweaver_core.runtime.worker import Worker

    worker = Worker(threads=1).start()
    deadline = time.monotonic() + 90
    done = Run.objects.filter(thread_id=thread_id).exclude(status__in=["queued", "running"])
    while done.count() < runs and time.monotonic() < deadline:
        time.sleep(0.1)
    worker.stop(10)
    spans = [
        {
            "name": s.name,
            "trace_id": format(s.context.trace_id, "032x"),
            "span_id": format(s.context.span_id, "016x"),
            "parent_id": format(s.parent.span_id, "016x") if s.parent else None,
            "kind": s.kind.name,
            "status": s.status.status_code.name,
            "attributes": dict(s.attributes or {}),
        }
        for s in exporter.get_finished_spans()
    ]
    out.write_text(json.dumps(spans))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
