"""From worker results to the table: medians over repetitions, ratios, targets, verdicts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.plan import FLOOR_METRIC, HITL_POSTGRES_METRIC, PROTOCOL_INPROCESS_METRIC, Config
from bench.stats import median_of

Results = dict[tuple[str, str], list[dict[str, Any]]]
"""Worker results by (configuration key, engine), in repetition order."""


@dataclass(frozen=True, slots=True)
class Row:
    key: str
    title: str
    metric: str
    unit: str
    beamweaver: float | str | None
    langgraph: float | str | None
    ratio: float | None
    target: str
    result: str


def group(records: Iterable[dict[str, Any]]) -> Results:
    grouped: Results = defaultdict(list)
    for record in records:
        grouped[(record["config"], record["engine"])].append(record)
    return grouped


def dig(record: dict[str, Any], path: Sequence[str]) -> float | None:
    value: Any = record
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _median(runs: list[dict[str, Any]], path: Sequence[str]) -> float | None:
    return median_of(dig(r, path) for r in runs if r.get("status") == "ok")


def _not_measured(runs: list[dict[str, Any]]) -> str | None:
    """`pending: why` / `error: why` when no repetition of an engine succeeded."""
    if any(r.get("status") == "ok" for r in runs):
        return None
    if not runs:
        return "not run"
    last = runs[-1]
    return f"{last.get('status', 'error')}: {last.get('reason', 'no result')}"


def build_rows(configs: Sequence[Config], results: Results) -> list[Row]:
    floor_ms = _median(results.get(("floor", "postgres"), []), FLOOR_METRIC)
    hitl_postgres_ms = _median(
        results.get(("hitl_postgres", "beamweaver"), []), HITL_POSTGRES_METRIC
    )
    protocol_inprocess_ms = _median(
        results.get(("protocol_inprocess", "beamweaver"), []), PROTOCOL_INPROCESS_METRIC
    )
    rows: list[Row] = []
    for config in configs:
        if config.pending is not None:
            rows.append(
                Row(
                    config.key,
                    config.title,
                    "—",
                    "",
                    None,
                    None,
                    None,
                    "",
                    f"pending: {config.pending}",
                )
            )
            continue
        runs = {engine: results.get((config.key, engine), []) for engine in config.engines}
        missing = {engine: _not_measured(r) for engine, r in runs.items()}
        reasons = [m for m in missing.values() if m is not None]
        bw_runs = runs.get("beamweaver") or runs.get("postgres") or []
        facts = {
            "floor_ms": floor_ms,
            "hitl_postgres_ms": hitl_postgres_ms,
            "protocol_inprocess_ms": protocol_inprocess_ms,
            "raw_message_bytes": _median(bw_runs, ("raw_message_bytes",)),
        }
        for metric in config.metrics:
            values: dict[str, float | str | None] = {}
            for engine in config.engines:
                why = missing[engine]
                values[engine] = why.split(":", 1)[0] if why else _median(runs[engine], metric.path)
            bw = values.get("beamweaver", values.get("postgres"))
            lg = values.get("langgraph")
            if metric.baseline is not None:
                lg = _median(bw_runs, metric.baseline) if not reasons else None
            numeric_bw = bw if isinstance(bw, int | float) else None
            numeric_lg = lg if isinstance(lg, int | float) else None
            ratio = numeric_bw / numeric_lg if numeric_bw is not None and numeric_lg else None
            target, result = "", ""
            if metric.target is not None:
                judged = metric.target.judge(numeric_bw, numeric_lg, facts)
                target = judged.text
                if judged.passed is not None:
                    result = "pass" if judged.passed else "FAIL"
            if reasons and (metric.target is not None or metric is config.metrics[0]):
                result = reasons[0]
            rows.append(
                Row(
                    config.key,
                    config.title,
                    metric.label,
                    metric.unit,
                    bw,
                    lg,
                    ratio,
                    target,
                    result,
                )
            )
    return rows


def headline_problems(configs: Sequence[Config], results: Results) -> list[str]:
    """Harness self-check: every successful run must yield its configuration's headline
    metric as a positive number (never a judgement of speed)."""
    problems = []
    for config in configs:
        if not config.metrics:
            continue
        headline = config.metrics[0]
        for engine in config.engines:
            for run in results.get((config.key, engine), []):
                if run.get("status") == "error":
                    problems.append(f"{config.key} / {engine}: {run.get('reason')}")
                elif run.get("status") == "ok":
                    value = dig(run, headline.path)
                    if value is None or value <= 0:
                        problems.append(
                            f"{config.key} / {engine}: {'.'.join(headline.path)} is {value!r}"
                        )
    return problems


def _number(value: float, unit: str) -> str:
    if unit == "B":
        return f"{value:,.0f} B"
    if unit == "MB":
        return f"{value:.1f} MB"
    size = abs(value)
    if size >= 100:
        text = f"{value:,.0f}"
    elif size >= 10:
        text = f"{value:.1f}"
    elif size >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def _cell(value: float | str | None, unit: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return _number(value, unit)


def render(rows: Sequence[Row]) -> str:
    """The table as Markdown (readable as plain text)."""
    lines = [
        "| workload | metric | BeamWeaver | LangGraph | ratio | target | result |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    previous = None
    for row in rows:
        title = row.title if row.key != previous else ""
        previous = row.key
        ratio = "" if row.ratio is None else f"{row.ratio:.3g}"
        lines.append(
            f"| {title} | {row.metric} | {_cell(row.beamweaver, row.unit)} | "
            f"{_cell(row.langgraph, row.unit)} | {ratio} | {row.target} | {row.result} |"
        )
    return "\n".join(lines)


def row_dicts(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [asdict(row) for row in rows]


def render_profiles(results: Results) -> str:
    """Top own-time functions and own time by package, for runs made with `--profile`."""
    parts = []
    for (key, engine), runs in sorted(results.items()):
        profiled = [r for r in runs if r.get("profile")]
        if not profiled:
            continue
        profile = profiled[0]["profile"]
        parts.append(f"\n## profile: {key} / {engine} (rep 1, {profile['total_s']} s profiled)")
        parts.append("own time by package:")
        parts.extend(
            f"  {p['share'] * 100:5.1f}%  {p['own_s']:8.4f} s  {p['package']}"
            for p in profile["by_package"]
        )
        parts.append("top functions by own time:")
        parts.extend(
            f"  {f['share'] * 100:5.1f}%  {f['own_s']:8.4f} s  {f['calls']:>8}  {f['func']}"
            for f in profile["own_time"]
        )
        parts.append("top functions by cumulative time:")
        parts.extend(
            f"  {f['share'] * 100:5.1f}%  {f['cum_s']:8.4f} s  {f['calls']:>8}  {f['func']}"
            for f in profile["cumulative"]
        )
    return "\n".join(parts)
