"""Policy simulation: replay the tool calls recorded in the last N days against a candidate
`interrupt_on` policy, and count the reviews it would have created, per tool.

The recorded calls are every call a reviewer saw (the action requests of review items,
whatever their outcome, as the model proposed them) plus every call the tool-execution
ledger (`ToolExecution`) recorded that no review accounts for (calls that ran without
review). A reviewed call that was approved or edited also ran, so its ledger row is
matched to the review (same thread, tool and arguments that ran) and counted once.

The candidate is `interrupt_on` as JSON: a tool maps to `true`, `false`, or an object
with `allowed_decisions`, `description` (accepted, unused here) and `when`, a condition on
the call's arguments (JSON cannot carry the callables the middleware takes)::

    {"issue_refund": {"when": {"amount": {">": 100}}},
     "delete_records": true,
     "send_email": {"when": {"to": {"matches": "@example\\\\.org$"}}}}

Every entry of `when` must hold: an argument path (dots for nested values) mapped to a
value (equality) or to operators `==`, `!=`, `>`, `>=`, `<`, `<=`, `in`, `not_in`,
`contains`, `matches` (a regular expression, searched, on RE2: linear time, no
look-around or backreferences; see `beamweaver_core.patterns`), `exists` (true/false). A
condition that cannot be evaluated (a missing argument compared, a string compared with
a number) counts as a review, as the middleware fails closed.

Only what the user may see is replayed: the review items `visible_items` shows them and
the tool executions of the threads `visible_threads` shows them (`reviews.permissions`),
so neither the tools listed, nor the counts, nor a `matches` condition tell anything
about an item hidden from them. And only as the pages show it: the arguments are
redacted (`beamweaver_core.redaction`) unless the user may reveal secrets
(`reviews.roles.can_reveal`), so a condition on a withheld value sees `[redacted]`, and
no count tells whether a guess of the secret was right.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from beamweaver_core import patterns
from beamweaver_core.agent import HITL
from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.agent.review import DECISION_TYPES
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.models import ToolExecution
from beamweaver_core.redaction import redact
from beamweaver_core.users import User
from reviews import payloads
from reviews.models import Decision, ReviewItem
from reviews.permissions import visible_items, visible_threads
from reviews.roles import can_reveal

MAX_CALLS = 50_000
OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "in", "not_in", "contains", "matches", "exists")
_KEYS = frozenset({"allowed_decisions", "when", "description"})
_MISSING = object()


class Undecidable(Exception):
    """A condition could not be evaluated on a call's arguments."""


@dataclass(frozen=True)
class Candidate:
    """One tool's candidate policy: review always, or when `when` holds."""

    tool: str
    when: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Call:
    """One recorded tool call."""

    tool: str
    args: Any
    thread_id: str
    at: datetime
    reviewed: bool


@dataclass(frozen=True)
class ToolResult:
    """What the candidate does to one tool's recorded calls."""

    tool: str
    calls: int
    reviewed_now: int
    would_review: int
    undecidable: int

    @property
    def change(self) -> int:
        return self.would_review - self.reviewed_now


@dataclass
class Simulation:
    """The replay's outcome, per tool and in total."""

    tools: list[ToolResult] = field(default_factory=list)
    truncated: bool = False

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.tools)

    @property
    def reviewed_now(self) -> int:
        return sum(t.reviewed_now for t in self.tools)

    @property
    def would_review(self) -> int:
        return sum(t.would_review for t in self.tools)


def _check_condition(tool: str, path: str, spec: Any) -> list[str]:
    if not isinstance(spec, Mapping):
        return []
    problems = []
    for op, value in spec.items():
        where = f"{tool}.when.{path}"
        if op not in OPERATORS:
            problems.append(f"{where}: unknown operator {op!r}; use one of {', '.join(OPERATORS)}.")
        elif op in ("in", "not_in") and not isinstance(value, list):
            problems.append(f"{where}: {op!r} needs a list.")
        elif op == "matches":
            try:
                patterns.compile_pattern(str(value))
            except patterns.PatternError as exc:
                problems.append(f"{where}: {exc}")
        elif op == "exists" and not isinstance(value, bool):
            problems.append(f"{where}: 'exists' needs true or false.")
    return problems


def parse_policy(text: str) -> tuple[dict[str, Candidate], list[str]]:
    """The candidate policy typed into the form, or the problems with it."""
    try:
        raw = payloads.parse_json(text, what="The policy")
    except payloads.PayloadError as exc:
        return {}, [str(exc)]
    if not isinstance(raw, dict) or not raw:
        return {}, ['The policy must be a JSON object of tool names, like {"send_email": true}.']
    candidates: dict[str, Candidate] = {}
    problems: list[str] = []
    for tool, value in raw.items():
        if value is False:
            continue
        if value is True:
            candidates[tool] = Candidate(tool)
            continue
        if not isinstance(value, dict):
            problems.append(f"{tool}: use true, false or an object, not {json.dumps(value)}.")
            continue
        unknown = sorted(set(value) - _KEYS)
        if unknown:
            problems.append(f"{tool}: unknown option(s) {unknown}; known: {sorted(_KEYS)}.")
        allowed = value.get("allowed_decisions", list(DECISION_TYPES))
        if not isinstance(allowed, list) or not allowed or set(allowed) - set(DECISION_TYPES):
            problems.append(f"{tool}: allowed_decisions must be drawn from {list(DECISION_TYPES)}.")
        when = value.get("when")
        if when is not None and not isinstance(when, dict):
            problems.append(f"{tool}: 'when' must be an object of argument conditions.")
            continue
        for path, spec in (when or {}).items():
            problems.extend(_check_condition(tool, path, spec))
        candidates[tool] = Candidate(tool, when)
    return candidates, problems


def _lookup(args: Any, path: str) -> Any:
    value = args
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _holds(value: Any, op: str, expected: Any) -> bool:
    if op == "exists":
        return (value is not _MISSING) == bool(expected)
    if value is _MISSING:
        raise Undecidable
    try:
        if op == "==":
            return bool(value == expected)
        if op == "!=":
            return bool(value != expected)
        if op == ">":
            return bool(value > expected)
        if op == ">=":
            return bool(value >= expected)
        if op == "<":
            return bool(value < expected)
        if op == "<=":
            return bool(value <= expected)
        if op == "in":
            return value in expected
        if op == "not_in":
            return value not in expected
        if op == "contains":
            return expected in value
        if op == "matches":
            return patterns.search(str(expected), str(value))
    except TypeError as exc:
        raise Undecidable from exc
    raise Undecidable


def needs_review(candidate: Candidate, args: Any) -> bool:
    """Whether the candidate reviews a call with `args` (`Undecidable` if unknowable)."""
    for path, spec in (candidate.when or {}).items():
        value = _lookup(args, path)
        tests = spec.items() if isinstance(spec, Mapping) else [("==", spec)]
        if not all(_holds(value, op, expected) for op, expected in tests):
            return False
    return True


def _key(thread_id: str, tool: str, args: Any) -> tuple[str, str, str]:
    return thread_id, tool, canonical_json(args)


def recorded_calls(user: User, since: datetime, graph: str = "") -> tuple[list[Call], bool]:
    """The tool calls of the window that `user` may see, as they are shown to them (see
    the module docstring); whether it was cut short."""
    items = visible_items(user, ReviewItem.objects.all()).filter(
        kind=ReviewItem.Kind.TOOL_REVIEW, created_at__gte=since
    )
    executions = ToolExecution.objects.filter(
        started_at__gte=since, thread__in=visible_threads(user)
    )
    if graph:
        items = items.filter(graph=graph)
        executions = executions.filter(thread__graph=graph)
    reveal = can_reveal(user)

    def shown(args: Any) -> Any:
        return args if reveal else redact(args)

    calls: list[Call] = []
    ran_by_review: Counter[tuple[str, str, str]] = Counter()
    answers = dict(Decision.objects.filter(item__in=items).values_list("item_id", "answer_json"))
    for item in items.order_by("created_at")[:MAX_CALLS]:
        try:
            review = HITL.from_value(item.payload)
        except NotAReviewError:
            continue
        decided = json.loads(answers[item.pk]).get("decisions", []) if item.pk in answers else []
        for index, action in enumerate(review.action_requests):
            calls.append(
                Call(action.name, shown(dict(action.args)), item.thread_id, item.created_at, True)
            )
            chosen = decided[index] if index < len(decided) else {}
            if chosen.get("type") == "approve":
                ran_by_review[_key(item.thread_id, action.name, dict(action.args))] += 1
            elif chosen.get("type") == "edit":
                edited = chosen["edited_action"]
                ran_by_review[_key(item.thread_id, edited["name"], edited["args"])] += 1
    rows = executions.order_by("started_at").values_list("thread_id", "tool", "args", "started_at")
    for thread_id, tool, args, at in rows[:MAX_CALLS]:
        key = _key(thread_id, tool, args)
        if ran_by_review[key] > 0:
            ran_by_review[key] -= 1
            continue
        calls.append(Call(tool, shown(args), thread_id, at, False))
    return calls[:MAX_CALLS], len(calls) > MAX_CALLS


def simulate(candidates: Mapping[str, Candidate], calls: list[Call]) -> Simulation:
    """Count, per tool, the calls, the reviews they got, and the reviews the candidate
    would have created."""
    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for call in calls:
        row = stats[call.tool]
        row[0] += 1
        row[1] += int(call.reviewed)
        candidate = candidates.get(call.tool)
        if candidate is None:
            continue
        try:
            row[2] += int(needs_review(candidate, call.args))
        except Undecidable:
            row[2] += 1
            row[3] += 1
    for tool in candidates:
        stats.setdefault(tool, [0, 0, 0, 0])
    tools = [ToolResult(tool, *values) for tool, values in stats.items()]
    return Simulation(tools=sorted(tools, key=lambda t: (-t.calls, t.tool)))


def current_policy_example(calls: list[Call]) -> str:
    """A starting candidate: every tool seen, reviewed (`true`) if it was reviewed."""
    reviewed = {c.tool for c in calls if c.reviewed}
    tools = sorted({c.tool for c in calls})
    return json.dumps({tool: tool in reviewed for tool in tools}, indent=2) if tools else "{}"


__all__ = [
    "MAX_CALLS",
    "OPERATORS",
    "Call",
    "Candidate",
    "Simulation",
    "ToolResult",
    "Undecidable",
    "current_policy_example",
    "needs_review",
    "parse_policy",
    "recorded_calls",
    "simulate",
]
