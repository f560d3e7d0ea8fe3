"""The thread page's picture of its graph: the registered graph drawn
(`beamweaver_core.graph.drawing`), laid out once per graph and process, and marked with
what the thread's current work did: the path its runs took since the last start, the
nodes running now, and the node paused on an interrupt (with what it asks).

The page's script keeps the running marks live from the run events pushed over the
websocket (`reviews/static/beamweaver/js/thread.js`); a re-render (when a run pauses or
ends) draws the marks from Postgres again.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from beamweaver_core.graph.drawing import Drawing, draw
from beamweaver_core.graph.drawing_layout import layout
from beamweaver_core.graph.drawing_svg import Marks, render
from beamweaver_core.models import Run, RunEvent, Thread
from beamweaver_core.redaction import redact
from beamweaver_core.runtime import registry
from beamweaver_core.types import END, START, Interrupt
from reviews import payloads

logger = logging.getLogger(__name__)

EVENTS_READ = 2000
"""Node events of the current work read at most to trace its path."""
NODE_EVENTS = ("node.started", "node.finished")


@dataclass(frozen=True)
class Picture:
    """The SVG of the root graph, and of each subgraph node's graph (folded)."""

    svg: str
    subgraphs: tuple[tuple[str, str, str], ...] = ()
    """(node id, graph name, SVG) for each subgraph drawn on its own."""
    error: str = ""


@dataclass
class _Trace:
    counts: dict[str, int] = field(default_factory=dict)
    taken: set[tuple[str, str]] = field(default_factory=set)
    running: set[str] = field(default_factory=set)
    previous: set[str] = field(default_factory=lambda: {START})
    finished: set[str] = field(default_factory=set)


@functools.lru_cache(maxsize=64)
def _drawn(graph_name: str) -> tuple[Drawing, Any, dict[str, tuple[Drawing, Any]]]:
    """A registered graph's drawing and layout (and its folded subgraphs'), kept per
    process: a graph's shape never changes while the process runs."""
    compiled = registry.compiled_graph(graph_name, None)
    drawing = draw(compiled, 0, fold_depth=1)
    return drawing, layout(drawing), {k: (d, layout(d)) for k, d in drawing.folded.items()}


def picture(
    thread: Thread, interrupts: Iterable[Interrupt] = (), next_nodes: Iterable[str] = ()
) -> Picture:
    """The thread's graph marked with its current work (empty SVG without a graph). While
    a run runs, the latest checkpoint's next nodes are the ones running now: their start
    is stored only with the step's checkpoint, after they finish."""
    if not thread.graph:
        return Picture("", error="The thread has no graph yet.")
    try:
        drawing, laid_out, folded = _drawn(thread.graph)
    except Exception as exc:
        logger.warning("Cannot draw graph %s: %s", thread.graph, exc)
        return Picture("", error=f"The graph cannot be drawn: {type(exc).__name__}.")
    runs = _current_runs(thread)
    traces = _traces(runs)
    if runs and runs[-1].status == Run.Status.RUNNING:
        root = traces.setdefault("", _Trace())
        root.running.update(n for n in next_nodes if n in laid_out.boxes)
    paused = _paused(interrupts)
    svg = render(
        drawing, laid_out, _marks(traces.get("", _Trace()), paused.get("", {})), dom_id="graph-root"
    )
    subgraphs = tuple(
        (
            node_id,
            sub.name,
            render(
                sub,
                sub_layout,
                _marks(traces.get(node_id, _Trace()), paused.get(node_id, {})),
                dom_id=f"graph-sub-{position}",
            ),
        )
        for position, (node_id, (sub, sub_layout)) in enumerate(folded.items())
    )
    return Picture(svg, subgraphs)


def _current_runs(thread: Thread) -> list[Run]:
    """The runs since the thread's latest start (that start and its resumes)."""
    runs = list(Run.objects.filter(thread=thread).order_by("-created_at")[:50])
    current = []
    for run in runs:
        current.append(run)
        if run.kind == Run.Kind.START:
            break
    current.reverse()
    return current


def _traces(runs: list[Run]) -> dict[str, _Trace]:
    """Per namespace ("" the root; a subgraph node's name for its graph) what the runs
    ran: how often each node, the edges taken, what runs now."""
    traces: dict[str, _Trace] = {}
    if not runs:
        return traces
    rows = (
        RunEvent.objects.filter(run__in=runs, event__in=NODE_EVENTS)
        .order_by("created_at", "seq")
        .values_list("run_id", "event", "node", "ns")[:EVENTS_READ]
    )
    active = {r.id for r in runs if r.status == Run.Status.RUNNING}
    for run_id, event, node, ns in rows:
        key = _namespace(ns)
        if key is None:
            continue
        trace = traces.setdefault(key, _Trace())
        if event == "node.started":
            if trace.finished:
                trace.previous, trace.finished = trace.finished, set()
            trace.counts[node] = trace.counts.get(node, 0) + 1
            trace.taken.update((p, node) for p in trace.previous)
            if run_id in active:
                trace.running.add(node)
        else:
            trace.finished.add(node)
            trace.running.discard(node)
    if runs[-1].status == Run.Status.SUCCEEDED and "" in traces:
        root = traces[""]
        root.taken.update((p, END) for p in root.finished or root.previous)
    return traces


def _namespace(ns: str) -> str | None:
    """ "" for the root graph, the node's name for a subgraph one level down, None deeper."""
    if not ns:
        return ""
    parts = ns.split("|")
    return parts[0].split(":")[0] if len(parts) <= 2 else None


def _marks(trace: _Trace, paused: Mapping[str, str]) -> Marks:
    return Marks(
        running=frozenset(trace.running),
        paused=dict(paused),
        counts=dict(trace.counts),
        taken=frozenset(trace.taken),
    )


def _paused(interrupts: Iterable[Interrupt]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for pending in interrupts:
        key = _namespace(pending.ns)
        if key is None:
            continue
        found.setdefault(key, {})[pending.node] = interrupt_note(pending)
    return found


def interrupt_note(pending: Interrupt) -> str:
    """What a pending interrupt waits for, in a few words."""
    if pending.timing is not None:
        return f"breakpoint {pending.timing} the node"
    # Redacted whole, a plain-text question too: the note is the node's title in the
    # drawing and a line of the pending list.
    value = redact(payloads.plain(pending.value))
    if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):
        names = [str(a.get("name", "")) for a in value["action_requests"] if isinstance(a, Mapping)]
        return f"review of {', '.join(names) or 'an action'}"
    text = value if isinstance(value, str) else payloads.canonical(value)
    return text if len(text) <= 80 else text[:79] + "…"


__all__ = ["Picture", "interrupt_note", "picture"]
