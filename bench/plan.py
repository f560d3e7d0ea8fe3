"""What `python -m bench` runs: each configuration, its sizes, its table rows and targets.

A configuration is one workload on one backend, run by each engine in its own process.
Its metrics are paths into the worker's JSON; the table shows the median over repetitions
of each, for both engines, their ratio, and the target where issue 6 sets one.

LangGraph runs with its default durability (`async`) except where a row says otherwise:
the Postgres linear row compares "every step durable" (`sync`), which is what BeamWeaver
always does, and state growth uses `sync` as the peer script does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.targets import (
    AtMost,
    FloorBound,
    ForComparison,
    RatioAtLeast,
    RatioAtMost,
    RawBytesBound,
    Target,
    WithinFactOf,
)

BOTH = ("beamweaver", "langgraph")
LIVE_WORKLOADS = (
    "realtime_push",
    "realtime_decision",
    "realtime_inbox",
    "scale",
    "serving_cost",
    "protocol",
    "protocol_inprocess",
)
"""Workloads against the live server (`bench.live`); one process measures (`protocol` also
LangGraph's own server, its figures in the second column; `protocol_inprocess` the same
round trip with no server, on a live database of its own)."""


@dataclass(frozen=True, slots=True)
class Metric:
    label: str
    path: tuple[str, ...]
    unit: str
    target: Target | None = None
    baseline: tuple[str, ...] | None = None
    """Where the second column's value is read for a row without a peer (the same figure
    on an empty database, for the scale rows); the ratio is then value / baseline."""


@dataclass(frozen=True, slots=True)
class Config:
    key: str
    title: str
    workload: str | None
    quick: dict[str, Any] = field(default_factory=dict)
    full: dict[str, Any] = field(default_factory=dict)
    metrics: tuple[Metric, ...] = ()
    engines: tuple[str, ...] = BOTH
    lg_durability: str = "async"
    pending: str | None = None
    """Set for rows that cannot be measured yet: the table says why instead of a number."""
    on_demand: bool = False
    """Left out of a run unless `--only` names it (it needs a long build first)."""
    timeout_s: float | None = None
    """Seconds one run may take, when more than the harness's `--timeout`."""

    @property
    def postgres(self) -> bool:
        """Checkpoint workloads on the benchmark Postgres (the live ones have their own)."""
        return self.workload in ("concurrency", "floor") or self.full.get("backend") == "postgres"

    @property
    def live(self) -> bool:
        """Runs against the product's own server on a database of its own."""
        return self.workload in LIVE_WORKLOADS

    @property
    def redis(self) -> bool:
        return self.full.get("mode") == "redis"

    def params(self, quick: bool) -> dict[str, Any]:
        return {**(self.quick if quick else self.full), "lg_durability": self.lg_durability}


def ms(label: str, *path: str, target: Target | None = None) -> Metric:
    return Metric(label, path, "ms", target)


def _latency_at(*steps: int) -> tuple[Metric, ...]:
    """State growth: the step latency around each of `steps` (a 9-step median)."""
    return tuple(
        ms(f"step latency @{s} (9-step median)", "latency_at", str(s), "window_median_ms")
        for s in steps
    )


_HITL_PARTS = (
    ms("invoke → interrupt (median)", "interrupt_ms", "median"),
    ms("resume → end (median)", "resume_ms", "median"),
    ms("round trip p99", "total_ms", "p99"),
)


def _hitl(k: int, backend: str, quick: int, full: int, target: Target | None) -> Config:
    label = "1 interrupt" if k == 1 else f"{k} parallel interrupts, one resume map"
    server = (Metric("commits per round trip", ("server_per_roundtrip", "xact_commit"), ""),)
    return Config(
        f"hitl{'' if k == 1 else k}_{backend}",
        f"3. HITL round trip, {label}, {backend}",
        "hitl",
        quick={"backend": backend, "k": k, "threads": quick, "warmup": 2},
        full={"backend": backend, "k": k, "threads": full},
        metrics=(
            ms("round trip (median)", "total_ms", "median", target=target),
            *_HITL_PARTS,
            *(server if backend == "postgres" else ()),
        ),
    )


def _fanout(
    backend: str, quick: int, full: int, target: Target | None = None, stagger_ms: int = 0
) -> Config:
    where = "no checkpointer" if backend == "none" else backend
    server = (Metric("commits per invoke", ("server_per_invoke", "xact_commit"), ""),)
    return Config(
        f"fanout{'_staggered' if stagger_ms else ''}_{backend}",
        f"2. fanout, 8 parallel + join, {where}"
        + (f", worker i sleeps i x {stagger_ms} ms (they finish one by one)" if stagger_ms else ""),
        "fanout",
        quick={"backend": backend, "threads": quick, "warmup": 2, "stagger_ms": stagger_ms},
        full={"backend": backend, "threads": full, "stagger_ms": stagger_ms},
        metrics=(
            ms("per invoke (median)", "invoke_ms", "median", target=target),
            ms("per invoke p99", "invoke_ms", "p99"),
            *(server if backend == "postgres" else ()),
        ),
    )


_MODE_TITLE = {
    "single": "single process (in-memory layer, in-process workers)",
    "redis": "Redis layer, separate worker process",
}
PUSH_TARGET = AtMost(50, "ms (p99)")
DECISION_TARGET = AtMost(100, "ms (p99)")
INBOX_TARGET = AtMost(150, "ms (p95)")
TARGET_MODE = "single"
"""The realtime target rows measure the single-process server: the product's default on
one machine (and what the browser tests run); the Redis rows are for comparison."""


def _judged(target: Target, mode: str) -> Target:
    return target if mode == TARGET_MODE else ForComparison(target)


def _push(mode: str, rate: int, judged: bool) -> Config:
    target = _judged(PUSH_TARGET, mode) if judged else ForComparison(PUSH_TARGET)
    return Config(
        f"realtime_push{'' if rate == 50 else rate}_{mode}",
        f"7a. realtime: interrupt committed → websocket frame, {rate} interrupts/s offered, "
        f"{_MODE_TITLE[mode]}",
        "realtime_push",
        quick={"mode": mode, "rate": 10, "seconds": 2, "warmup": 3, "drain_s": 10},
        full={"mode": mode, "rate": rate, "seconds": 30, "warmup": 25, "drain_s": 90},
        engines=("beamweaver",),
        metrics=(
            ms("push latency p99", "push_ms", "p99", target=target),
            ms("push latency (median)", "push_ms", "median"),
            ms("push latency p95", "push_ms", "p95"),
            Metric("interrupts committed per second", ("rate", "committed_per_s"), "/s"),
            Metric("runs started per second (offered)", ("rate", "sent_per_s"), "/s"),
            Metric("committed pauses without a frame", ("interrupts", "frames_missing"), ""),
            ms("start POST → pause committed p99", "start_to_pause_ms", "p99"),
            Metric("server CPU per interrupt", ("server_cpu_ms_per_interrupt",), "ms"),
        ),
    )


def _decision(mode: str) -> Config:
    return Config(
        f"realtime_decision_{mode}",
        f"7b. realtime: decision POST → resume run started, 5 decisions/s, {_MODE_TITLE[mode]}",
        "realtime_decision",
        quick={"mode": mode, "decisions": 10, "warmup": 2, "rate": 5},
        full={"mode": mode, "decisions": 200, "warmup": 20, "rate": 5},
        engines=("beamweaver",),
        metrics=(
            ms(
                "POST sent → resume started p99",
                "resume_started_ms",
                "p99",
                target=_judged(DECISION_TARGET, mode),
            ),
            ms("POST sent → resume started (median)", "resume_started_ms", "median"),
            ms("POST sent → resume queued (median)", "resume_queued_ms", "median"),
            ms("POST latency (median)", "post_ms", "median"),
            ms("POST latency p99", "post_ms", "p99"),
            Metric("server CPU per decision", ("server_cpu_ms_per_decision",), "ms"),
        ),
    )


SERVING_CPU_TARGET = AtMost(10, "ms with 5 inboxes")


def _serving(mode: str) -> Config:
    """Issue 16 point 1: server CPU per interrupt as open inboxes grow (one server)."""
    levels = ("5", "0", "20", "100")  # the judged row first
    return Config(
        f"serving_cost_{mode}",
        "9. serving cost: server CPU time per interrupt (start POST → claim → pause → item, "
        f"audit, notification → pushes), 10 interrupts/s, {_MODE_TITLE[mode]}",
        "serving_cost",
        quick={"mode": mode, "levels": [0, 5], "per_level": 20, "warmup": 3},
        full={"mode": mode, "per_level": 150},
        engines=("beamweaver",),
        metrics=(
            *(
                Metric(
                    f"server CPU per interrupt, {n} open inboxes",
                    ("levels", n, "cpu_ms_per_interrupt"),
                    "ms",
                    _judged(SERVING_CPU_TARGET, mode) if n == "5" else None,
                )
                for n in levels
            ),
            Metric(
                "each further open inbox adds (5 → 100)",
                ("added_ms_per_inbox",),
                "ms",
                _judged(AtMost(0.5, "ms per inbox"), mode),
            ),
            ms("interrupt → frame p99, 100 inboxes", "levels", "100", "push_ms", "p99"),
            Metric("frames missing, 100 inboxes", ("levels", "100", "frames_missing"), ""),
        ),
    )


_LIVE: tuple[Config, ...] = (
    _push("single", 50, True),
    _push("redis", 50, True),
    _push("single", 10, False),
    _push("single", 100, True),
    _push("redis", 100, True),
    _decision("single"),
    _decision("redis"),
    _serving("single"),
    _serving("redis"),
    Config(
        "realtime_inbox",
        "7c. realtime: inbox page, 10,000 pending items, logged-in reviewer",
        "realtime_inbox",
        quick={"items": 300, "requests": 10, "warmup": 2},
        full={"items": 10_000, "requests": 200},
        engines=("beamweaver",),
        metrics=(
            ms("GET / p95", "inbox_ms", "p95", target=INBOX_TARGET),
            ms("GET / (median)", "inbox_ms", "median"),
            ms("GET / p99", "inbox_ms", "p99"),
            ms("search ?q=<customer> p95", "search_ms", "p95"),
            ms("filtered ?graph=&tool= p95", "filtered_ms", "p95"),
            Metric("page size", ("pages", "inbox", "bytes"), "B"),
        ),
    ),
)


def _vs_empty(label: str, key: str, stat: str, target: Target | None = None) -> Metric:
    """A scale figure on the big database, with the same on the empty one beside it."""
    return Metric(label, ("big", key, stat), "ms", target, ("empty", key, stat))


SCALE = Config(
    "scale",
    "8. scale: 1,000,000 checkpointed threads, 100,000 pending items (second column: the "
    "same on an empty database, same run; ratio: big / empty)",
    "scale",
    quick={
        "threads": 3000,
        "pending": 300,
        "requests": 5,
        "warmup": 1,
        "items": 4,
        "resumes": 5,
        "rounds": 2,
        "long": 3,
        "turns": 8,
    },
    full={},
    engines=("beamweaver",),
    on_demand=True,
    timeout_s=4 * 3600,  # the first run builds the big database
    metrics=(
        _vs_empty("inbox GET / p95", "inbox_ms", "p95", AtMost(150, "ms (p95)")),
        _vs_empty("search ?q=<customer> p95", "search_ms", "p95", AtMost(300, "ms (p95)")),
        _vs_empty("filters ?graph=&tool= p95", "filtered_ms", "p95", AtMost(300, "ms (p95)")),
        _vs_empty("decision POST p99", "post_ms", "p99", AtMost(200, "ms (p99)")),
        _vs_empty("engine resume (median)", "resume_ms", "median", RatioAtMost(1.2)),
        _vs_empty("engine resume p95", "resume_ms", "p95"),
        _vs_empty("decision POST → resume finished p99", "resume_finished_ms", "p99"),
        _vs_empty("inbox page 2,000 p95", "deep_page_ms", "p95"),
        _vs_empty("decided items ?status=decided p95", "decided_ms", "p95"),
        _vs_empty("item page p95", "item_page_ms", "p95"),
        _vs_empty("thread page p95", "thread_page_ms", "p95"),
        Metric(
            "prune_checkpoints --keep 5, whole database",
            ("big", "prune", "wall_s"),
            "s",
            None,
            ("empty", "prune", "wall_s"),
        ),
        Metric(
            "prune: longest transaction (lock held)",
            ("big", "prune", "longest_xact_ms"),
            "ms",
            AtMost(100, "ms"),
            ("empty", "prune", "longest_xact_ms"),
        ),
    ),
)
"""Issue 16's scale row (`python -m bench --only scale`; builds the big database once)."""


def _vs_langgraph_dev(label: str, key: str, stat: str, target: Target | None = None) -> Metric:
    """A protocol figure on BeamWeaver's `/lg`, with the same on `langgraph dev` beside it
    (same process, same run; ratio: BeamWeaver / LangGraph)."""
    return Metric(label, ("beamweaver", key, stat), "ms", target, ("langgraph", key, stat))


IN_PROCESS_BOUND = WithinFactOf(2, "hitl_postgres_ms", "in-process engine, row 3")
"""Issue 15's second target, read against row 3 (the engine alone: two committed steps);
shown beside the floor too, which it is below."""

DURABLE_BOUND = WithinFactOf(2, "protocol_inprocess_ms", "in process, durable, row 10b")
"""The same target read against the same round trip in process through the durable
runtime (row 10b: what the protocol adds to the work every run must do)."""

PROTOCOL_INPROCESS = Config(
    "protocol_inprocess",
    "10b. row 10's HITL round trip in process, through the durable runtime (the protocol's "
    "launch, a worker's claim and execution, the decision service), no HTTP, no hand-off",
    "protocol_inprocess",
    quick={"roundtrips": 10, "warmup": 2},
    full={"roundtrips": 100, "warmup": 10},
    engines=("beamweaver",),
    metrics=(
        Metric(
            "round trip: create → start → to the interrupt → resume → to the end (median)",
            ("roundtrip_ms", "median"),
            "ms",
        ),
        Metric("round trip p99", ("roundtrip_ms", "p99"), "ms"),
        *(
            Metric(f"— {label} (median)", (f"{part}_ms", "median"), "ms")
            for part, label in (
                ("create", "the thread created"),
                ("start", "the run started (queued)"),
                ("to_interrupt", "claimed, run to the pause, answer read"),
                ("resume", "the resume (decision service, resume run queued)"),
                ("to_end", "claimed, run to the end, answer read"),
            )
        ),
        Metric(
            "CPU per round trip (this process; Postgres's not included)",
            ("cpu_ms_per_roundtrip",),
            "ms",
        ),
        Metric("statements per round trip", ("per_roundtrip", "statements"), ""),
        Metric("commits per round trip", ("per_roundtrip", "commits"), ""),
    ),
)
"""Row 10's round trip without HTTP: what the durable path costs in process."""

PROTOCOL = Config(
    "protocol",
    "10. protocol over HTTP, official Python SDK: BeamWeaver /lg (daphne + in-process "
    "workers, Postgres) vs langgraph dev (in-memory), same machine, same run",
    "protocol",
    quick={"roundtrips": 5, "warmup": 1, "streams": 5, "concurrent": 20},
    full={"roundtrips": 100, "warmup": 10, "streams": 50, "concurrent": 200},
    engines=("beamweaver",),
    timeout_s=1800,  # two 480 s measurement deadlines + the concurrent one (workload)
    metrics=(
        _vs_langgraph_dev(
            "HITL round trip: create → wait to interrupt → resume → end (median)",
            "roundtrip_ms",
            "median",
            RatioAtMost(0.1),
        ),
        Metric(
            "same, vs BeamWeaver's in-process Postgres HITL round trip (row 3)",
            ("beamweaver", "roundtrip_ms", "median"),
            "ms",
            IN_PROCESS_BOUND,
        ),
        Metric(
            "same, vs the same round trip in process through the durable runtime (row 10b)",
            ("beamweaver", "roundtrip_ms", "median"),
            "ms",
            DURABLE_BOUND,
        ),
        _vs_langgraph_dev("HITL round trip p99", "roundtrip_ms", "p99"),
        _vs_langgraph_dev(
            "its floor: three authenticated requests that start nothing (assistants.get x 3, "
            "median)",
            "floor_ms",
            "median",
            ForComparison(IN_PROCESS_BOUND),
        ),
        Metric(
            "server CPU per round trip (daphne, the workers in it; warm-up included)",
            ("beamweaver", "server_cpu_ms_per_roundtrip"),
            "ms",
        ),
        Metric(
            "server CPU per floor (three assistants.get)",
            ("beamweaver", "server_cpu_ms_per_floor"),
            "ms",
        ),
        _vs_langgraph_dev("SSE: stream call → first event (median)", "first_event_ms", "median"),
        _vs_langgraph_dev("SSE: stream call → first event p99", "first_event_ms", "p99"),
        _vs_langgraph_dev(
            "SSE: stream call → first updates event (median)", "first_update_ms", "median"
        ),
        Metric(
            "200 concurrent streams on one server: wall time for all",
            ("beamweaver", "concurrent", "wall_s"),
            "s",
        ),
        Metric(
            "200 concurrent streams: one stream, call → end p99",
            ("beamweaver", "concurrent", "stream_ms", "p99"),
            "ms",
        ),
        Metric(
            "200 concurrent streams: streams without their end",
            ("beamweaver", "concurrent", "not_ended"),
            "",
            AtMost(0, "streams"),
        ),
    ),
)
"""Issue 15's protocol row."""

CONFIGS: tuple[Config, ...] = (
    Config(
        "linear_none",
        "1. linear, 10 nodes, no checkpointer",
        "linear",
        quick={"backend": "none", "threads": 20, "warmup": 2},
        full={"backend": "none", "threads": 1000},
        metrics=(
            ms("per super-step (median)", "per_superstep_ms", "median", target=RatioAtMost(0.25)),
            ms("per invoke (median)", "invoke_ms", "median"),
            ms("per invoke p99", "invoke_ms", "p99"),
        ),
    ),
    Config(
        "linear_memory",
        "1. linear, 10 nodes, memory",
        "linear",
        quick={"backend": "memory", "threads": 20, "warmup": 2},
        full={"backend": "memory", "threads": 500},
        metrics=(
            ms("per super-step (median)", "per_superstep_ms", "median", target=RatioAtMost(0.25)),
            ms("per invoke (median)", "invoke_ms", "median"),
            ms("per invoke p99", "invoke_ms", "p99"),
        ),
    ),
    Config(
        "linear_postgres",
        "1. linear, 10 nodes, Postgres, every step durable (LangGraph: durability=sync)",
        "linear",
        quick={"backend": "postgres", "threads": 10, "warmup": 2},
        full={"backend": "postgres", "threads": 200},
        lg_durability="sync",
        metrics=(
            ms("per invoke (median)", "invoke_ms", "median", target=RatioAtMost(0.33)),
            ms("per super-step (median)", "per_superstep_ms", "median"),
            ms("per invoke p99", "invoke_ms", "p99"),
            Metric(
                "commits per step (xact_commit, reads included)",
                ("server_per_superstep", "xact_commit"),
                "",
                AtMost(1, "per step"),
            ),
            Metric("write transactions per step", ("server_per_superstep", "write_xacts"), ""),
            Metric("WAL fsyncs per step", ("server_per_superstep", "wal_sync"), ""),
            ms("per invoke vs steps x floor", "invoke_ms", "median", target=FloorBound(1.5, 10)),
            Metric("bytes stored per thread", ("per_thread", "payload_bytes"), "B"),
        ),
    ),
    Config(
        "linear_worker_postgres",
        "1b. linear, 10 nodes, Postgres, on a worker: queued run claimed, run, outcome "
        "recorded (BeamWeaver only: LangGraph's library has no run queue)",
        "linear_worker",
        quick={"backend": "postgres", "threads": 10, "warmup": 2},
        full={"backend": "postgres", "threads": 200},
        engines=("beamweaver",),
        metrics=(
            ms("per run (median)", "run_ms", "median"),
            ms("per run p99", "run_ms", "p99"),
            Metric(
                "commits per run (claim with the head, 10 steps, outcome)",
                ("server_per_run", "xact_commit"),
                "",
            ),
            Metric(
                "commits per step besides the run's claim and outcome (reads included)",
                ("commits_per_step_besides_run",),
                "",
                AtMost(1, "per step"),
            ),
        ),
    ),
    _fanout("none", 20, 500),
    _fanout("memory", 20, 500),
    _fanout("postgres", 10, 200, RatioAtMost(0.25)),
    _fanout("postgres", 10, 100, stagger_ms=1),
    _hitl(1, "memory", 20, 500, None),
    _hitl(1, "postgres", 10, 200, RatioAtMost(0.5)),
    _hitl(4, "memory", 20, 500, None),
    _hitl(4, "postgres", 10, 200, RatioAtMost(0.5)),
    Config(
        "growth_postgres",
        "4. state growth, ~500 B message per step, one thread, Postgres (LangGraph: sync)",
        "growth",
        quick={"backend": "postgres", "steps": 20},
        full={"backend": "postgres", "steps": 200},
        lg_durability="sync",
        metrics=(
            Metric(
                "bytes stored after the last step", ("stored_bytes_final",), "B", RawBytesBound(3)
            ),
            Metric("bytes stored after step 10", ("bytes_after_step", "10"), "B"),
            Metric("bytes stored after step 100", ("bytes_after_step", "100"), "B"),
            Metric("raw message bytes (all steps)", ("raw_message_bytes",), "B"),
            Metric("growth exponent (bytes ~ steps^k)", ("growth_exponent",), ""),
            *_latency_at(10, 100, 200),
        ),
    ),
    Config(
        "growth1000_postgres",
        "4b. long thread: 1,000 turns, ~500 B message per turn, one invoke per turn, Postgres "
        "(LangGraph: sync)",
        "growth",
        quick={"backend": "postgres", "steps": 24},
        # 1,004 turns: the 9-step window around turn 1,000 is complete.
        full={"backend": "postgres", "steps": 1004},
        lg_durability="sync",
        metrics=(
            *_latency_at(10, 200, 400, 1000),
            Metric(
                "step latency @1000 / @10",
                ("latency_growth", "1000"),
                "x",
                AtMost(1.5, "x step 10"),
            ),
            *(
                Metric(
                    f"bytes stored / raw after turn {turn}",
                    ("stored_to_raw_at", str(turn)),
                    "x",
                    AtMost(3, "x raw"),
                )
                for turn in (200, 400, 1000)
            ),
            Metric("bytes stored after turn 1000", ("bytes_after_step", "1000"), "B"),
        ),
    ),
    Config(
        "concurrency_postgres",
        "5. concurrency, 50 asyncio tasks x interrupt + resume, Postgres, pool 10",
        "concurrency",
        quick={"backend": "postgres", "tasks": 10, "runs": 20, "warmup": 1},
        full={"backend": "postgres", "tasks": 50, "runs": 500},
        metrics=(
            Metric("throughput (round trips/s)", ("roundtrips_per_s",), "/s", RatioAtLeast(3)),
            ms("round trip (median)", "roundtrip_ms", "median"),
            ms("round trip p99", "roundtrip_ms", "p99"),
            Metric("peak RSS of the process", ("process", "rss_peak_mb"), "MB"),
            Metric("commits per round trip", ("server_per_roundtrip", "xact_commit"), ""),
        ),
    ),
    Config(
        "floor",
        "6. the floor: raw psycopg on the same server (engine-independent)",
        "floor",
        quick={"n": 100, "warmup": 10},
        full={"n": 2000},
        engines=("postgres",),
        metrics=(
            ms(
                "INSERT 1 KB jsonb + COMMIT (median)",
                "ops",
                "insert_commit",
                "latency_ms",
                "median",
            ),
            ms("INSERT 1 KB jsonb + COMMIT p99", "ops", "insert_commit", "latency_ms", "p99"),
            ms(
                "same, synchronous_commit=off (median)",
                "ops",
                "insert_commit_no_fsync_wait",
                "latency_ms",
                "median",
            ),
            ms(
                "step-shaped write: 1 statement, 4 rows in 3 tables + COMMIT (median)",
                "ops",
                "step_write",
                "latency_ms",
                "median",
            ),
            ms("SELECT 1 round trip (median)", "ops", "select_1", "latency_ms", "median"),
        ),
    ),
    *_LIVE,
    PROTOCOL_INPROCESS,
    PROTOCOL,
    SCALE,
)
FLOOR_METRIC = ("ops", "insert_commit", "latency_ms", "median")
"""Where the floor (one durable INSERT + COMMIT) is read for `FloorBound`."""
HITL_POSTGRES_METRIC = ("total_ms", "median")
"""Where `hitl_postgres`'s round trip is read for the protocol row's `WithinFactOf`."""
PROTOCOL_INPROCESS_METRIC = ("roundtrip_ms", "median")
"""Where row 10b's round trip is read for the protocol row's second `WithinFactOf`."""


def select(only: str) -> list[Config]:
    """Configurations whose key starts with one of the comma-separated prefixes in `only`
    (without `only`: all but the on-demand ones)."""
    prefixes = [p.strip() for p in only.split(",") if p.strip()]
    if not prefixes:
        return [c for c in CONFIGS if not c.on_demand]
    chosen = [c for c in CONFIGS if any(c.key.startswith(p) for p in prefixes)]
    if not chosen:
        known = ", ".join(c.key for c in CONFIGS)
        raise ValueError(f"--only {only!r} matches no configuration; known: {known}")
    return chosen
