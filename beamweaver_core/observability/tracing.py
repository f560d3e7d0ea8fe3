"""OpenTelemetry spans: a run, each node, each model call, each tool call (`otel` extra).

Without `opentelemetry-api` installed every function here does nothing. With it, spans
go to whatever tracer provider the process has (`opentelemetry-instrument`, or the host's
own setup, configure one: docs/production.md, Traces). With none configured no span is
made at all (`recording`): the API's proxy would hand out no-op spans, and making one per
node task cost more than the rest of the task (a 10-node invoke without a checkpointer
took 0.27 ms instead of 0.11 ms, `python -m bench --only linear_none`).

Spans carry names and ids only: graph, node, checkpoint namespace, thread and run ids,
model provider and name, tool name and call id. Tool arguments are added (redacted by
the one redaction policy, at most `MAX_ARGUMENT_CHARS`) only when
`BEAMWEAVER["TRACE_TOOL_ARGUMENTS"]` is true (`configure`). An interrupt or a parent
command ending a node is not an error; any other exception is recorded on the span.

The trace context of the request that queued a run is kept with the run (`carrier`) and
becomes the parent of the run's span in the worker that executes it (`run_span`).

This module imports only the redaction policy (no Django): the engine (graph, agent) uses it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from beamweaver_core.redaction import redact

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # the `otel` extra is not installed
    trace = None  # type: ignore[assignment]

MAX_ARGUMENT_CHARS = 4096
TRACER = "beamweaver"
_settings = {"record_arguments": False}


def configure(*, record_arguments: bool) -> None:
    """Whether tool spans carry the call's (redacted) arguments."""
    _settings["record_arguments"] = bool(record_arguments)


def enabled() -> bool:
    """Whether OpenTelemetry's API is installed."""
    return trace is not None


def recording() -> bool:
    """Whether spans go anywhere: the API is installed and a tracer provider has been set
    (in code, or by `OTEL_PYTHON_TRACER_PROVIDER`); asked per span, so a provider set
    after this module was imported is used from then on."""
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


@contextlib.contextmanager
def span(
    name: str,
    attributes: Mapping[str, Any],
    *,
    parent: Any = None,
    kind: Any = None,
) -> Iterator[Any]:
    """A span around the body, current while it runs (`None` when spans go nowhere:
    `recording`). Attributes whose value is `None` are left out."""
    if not recording():
        yield None
        return
    tracer = trace.get_tracer(TRACER)
    clean = {k: v for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind if kind is not None else SpanKind.INTERNAL,
        attributes=clean,
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except Exception as exc:
            failed(current, exc)
            raise


def failed(current: Any, error: BaseException | None, message: str = "") -> None:
    """Mark `current` (a span, or `None`) as failed, with `error` recorded on it."""
    if current is None or trace is None:
        return
    if error is not None:
        current.record_exception(error)
    current.set_status(Status(StatusCode.ERROR, message or type(error).__name__))


def node_span(node: str, *, graph: str, thread_id: str | None, ns: str) -> Any:
    """The span of one task of a super-step."""
    return span(
        f"node {node}",
        {
            "beamweaver.graph": graph,
            "beamweaver.node": node,
            "beamweaver.thread_id": thread_id,
            "beamweaver.checkpoint_ns": ns or None,
        },
    )


def model_span(model: Any) -> Any:
    """The span of one model call (OpenTelemetry's generative-AI names)."""
    name = getattr(model, "model_name", "") or type(model).__name__
    return span(
        f"chat {name}",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": getattr(model, "provider", None) or None,
            "gen_ai.request.model": getattr(model, "model_name", None) or None,
        },
        kind=SpanKind.CLIENT if trace is not None else None,
    )


def tool_span(tool: str, call_id: str | None, arguments: Any) -> Any:
    """The span of one tool call; its arguments only when configured (module doc)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": call_id,
    }
    if _settings["record_arguments"] and trace is not None:
        text = json.dumps(redact(arguments), ensure_ascii=False, default=repr)
        attributes["gen_ai.tool.call.arguments"] = text[:MAX_ARGUMENT_CHARS]
    return span(f"execute_tool {tool}", attributes)


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers (`traceparent`, `tracestate`), to keep
    with a run; empty when there is no span or no OpenTelemetry."""
    headers: dict[str, str] = {}
    if trace is not None:
        propagate.inject(headers)
    return headers


def run_span(headers: Mapping[str, str] | None, attributes: Mapping[str, Any]) -> Any:
    """The span of executing one run, child of the context in `headers` (what `carrier`
    kept when the run was queued)."""
    parent = propagate.extract(dict(headers or {})) if trace is not None else None
    graph = attributes.get("beamweaver.graph", "")
    kind = SpanKind.CONSUMER if trace is not None else None
    return span(f"run {graph}", attributes, parent=parent, kind=kind)


__all__ = [
    "carrier",
    "configure",
    "enabled",
    "failed",
    "model_span",
    "node_span",
    "recording",
    "run_span",
    "span",
    "tool_span",
]
