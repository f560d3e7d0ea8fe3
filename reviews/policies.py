"""Review policies: which one applies to a review item, and what it copies onto the item.

Two sources: `BEAMWEAVER["REVIEW_POLICIES"]` in settings (the defaults, a list of dicts)
and `ReviewPolicy` rows edited in the admin. A policy applies to an item when its `graph`
is empty or the item's graph, and its `tool` is empty or one of the item's tools. The most
specific one wins (graph and tool, then tool, then graph, then neither); at the same
specificity an admin row overrides settings. A batched review of several tools takes the
strictest of its tools' policies: the most required approvals, then the earliest
deadline. Without any policy, every reviewer may decide, one approval is enough and
nothing expires.

The policy is copied onto the item when it is created (`apply`), so editing a policy
never changes the rules of items already waiting; each copy records the policy version.

A settings policy (every key but `name` optional)::

    {"name": "refunds", "graph": "ops_assistant", "tool": "issue_refund",
     "groups": ["finance"], "responders": ["carol"], "assignee": "alice",
     "approvals": 2, "deadline_seconds": 14400, "remind_before_seconds": 1800,
     "escalate_to": "finance-leads", "on_expiry": "reject",
     "expiry_message": "Nobody approved the refund in time."}
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import router

from reviews import policy_cache
from reviews.conf import conf
from reviews.models import ReviewItem, ReviewPolicy
from reviews.models.policies import MAX_APPROVALS

logger = logging.getLogger(__name__)

DEFAULT_EXPIRY_MESSAGE = "Nobody decided in time."
_KEYS = frozenset(
    {
        "name",
        "graph",
        "tool",
        "groups",
        "responders",
        "assignee",
        "approvals",
        "deadline_seconds",
        "remind_before_seconds",
        "escalate_to",
        "on_expiry",
        "expiry_message",
    }
)


@dataclass(frozen=True)
class Policy:
    """One review policy, from settings, the admin, or the built-in default."""

    name: str
    source: str
    version: str
    graph: str = ""
    tool: str = ""
    groups: tuple[str, ...] = ()
    responders: tuple[str, ...] = ()
    assignee: str | None = None
    approvals: int = 1
    deadline: timedelta | None = None
    remind_before: timedelta | None = None
    escalate_to: str | None = None
    on_expiry: str = ReviewPolicy.OnExpiry.WAIT
    expiry_message: str = ""

    @property
    def specificity(self) -> int:
        return (2 if self.tool else 0) + (1 if self.graph else 0)

    def snapshot(self) -> dict[str, Any]:
        """The policy as JSON, as review items keep it."""
        return {
            "name": self.name,
            "source": self.source,
            "version": self.version,
            "graph": self.graph,
            "tool": self.tool,
            "groups": list(self.groups),
            "responders": list(self.responders),
            "assignee": self.assignee,
            "approvals": self.approvals,
            "deadline_seconds": _seconds(self.deadline),
            "remind_before_seconds": _seconds(self.remind_before),
            "escalate_to": self.escalate_to,
            "on_expiry": self.on_expiry,
            "expiry_message": self.expiry_message or DEFAULT_EXPIRY_MESSAGE,
        }


DEFAULT_POLICY = Policy(name="default", source="default", version="default")


def _seconds(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def _names(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"'{key}' must be a list of names, got {value!r}")
    if not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"'{key}' must hold non-empty strings, got {value!r}")
    return tuple(value)


def _duration(value: Any, key: str) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"'{key}' must be a positive number of seconds, got {value!r}")
    return timedelta(seconds=value)


def parse_settings_policy(raw: Any) -> Policy:
    """A policy from its settings dict; `ValueError` says what is wrong with it."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"a policy must be a dict, got {raw!r}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown}; known: {sorted(_KEYS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("'name' is required (a non-empty string)")
    for key in ("graph", "tool", "assignee", "escalate_to", "expiry_message"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise ValueError(f"'{key}' must be a string, got {raw[key]!r}")
    approvals = raw.get("approvals", 1)
    if isinstance(approvals, bool) or not isinstance(approvals, int):
        raise ValueError(f"'approvals' must be an integer, got {approvals!r}")
    if not 1 <= approvals <= MAX_APPROVALS:
        raise ValueError(f"'approvals' must be between 1 and {MAX_APPROVALS}, got {approvals}")
    deadline = _duration(raw.get("deadline_seconds"), "deadline_seconds")
    remind = _duration(raw.get("remind_before_seconds"), "remind_before_seconds")
    if remind is not None and (deadline is None or remind >= deadline):
        raise ValueError("'remind_before_seconds' needs a longer 'deadline_seconds'")
    on_expiry = raw.get("on_expiry", ReviewPolicy.OnExpiry.WAIT)
    if on_expiry not in ReviewPolicy.OnExpiry.values:
        raise ValueError(f"'on_expiry' must be one of {ReviewPolicy.OnExpiry.values}")
    if deadline is None and (raw.get("escalate_to") or on_expiry == ReviewPolicy.OnExpiry.REJECT):
        raise ValueError("'escalate_to' and on_expiry 'reject' need 'deadline_seconds'")
    text = json.dumps(dict(raw), sort_keys=True, default=str)
    return Policy(
        name=name,
        source="settings",
        version=f"settings:{name}@{hashlib.sha256(text.encode()).hexdigest()[:12]}",
        graph=raw.get("graph") or "",
        tool=raw.get("tool") or "",
        groups=_names(raw.get("groups"), "groups"),
        responders=_names(raw.get("responders"), "responders"),
        assignee=raw.get("assignee") or None,
        approvals=approvals,
        deadline=deadline,
        remind_before=remind,
        escalate_to=raw.get("escalate_to") or None,
        on_expiry=on_expiry,
        expiry_message=raw.get("expiry_message") or "",
    )


def settings_policies() -> list[Policy]:
    """The valid policies of `BEAMWEAVER["REVIEW_POLICIES"]` (system checks report the rest)."""
    found = []
    for index, raw in enumerate(conf.policies):
        try:
            found.append(parse_settings_policy(raw))
        except ValueError as exc:
            logger.error("BEAMWEAVER['REVIEW_POLICIES'][%d] is ignored: %s", index, exc)
    return found


def from_row(row: ReviewPolicy) -> Policy:
    """The policy an admin row states."""
    return Policy(
        name=row.name,
        source="admin",
        version=f"admin:{row.name}@v{row.version}",
        graph=row.graph,
        tool=row.tool,
        groups=tuple(sorted(g.name for g in row.reviewer_groups.all())),
        responders=tuple(sorted(u.get_username() for u in row.allowed_responders.all())),
        assignee=row.assignee.get_username() if row.assignee else None,
        approvals=row.required_approvals,
        deadline=row.deadline,
        remind_before=row.remind_before,
        escalate_to=row.escalate_to.name if row.escalate_to else None,
        on_expiry=row.on_expiry,
        expiry_message=row.expiry_message,
    )


def admin_policies() -> list[Policy]:
    """The enabled policies edited in the admin."""
    rows = ReviewPolicy.objects.filter(enabled=True).select_related("assignee", "escalate_to")
    return [from_row(row) for row in rows.prefetch_related("reviewer_groups", "allowed_responders")]


def all_policies() -> tuple[Policy, ...]:
    """Every policy in force: admin rows first, then the settings they do not override.

    Compiled once per change of either (`reviews.policy_cache`), not once per item."""
    using = router.db_for_read(ReviewPolicy)
    return policy_cache.compiled(using, conf.policies, _compile)


def _compile() -> tuple[Policy, ...]:
    admin = admin_policies()
    taken = {(p.graph, p.tool) for p in admin}
    return (*admin, *(p for p in settings_policies() if (p.graph, p.tool) not in taken))


def _applies(policy: Policy, graph: str, tool: str | None) -> bool:
    return policy.graph in ("", graph) and policy.tool in ("", tool or "")


def _for_tool(policies: Sequence[Policy], graph: str, tool: str | None) -> Policy:
    matching = [p for p in policies if _applies(p, graph, tool)]
    if not matching:
        return DEFAULT_POLICY
    return max(matching, key=lambda p: (p.specificity, p.source == "admin"))


def _strictness(policy: Policy) -> tuple[int, float]:
    deadline = policy.deadline.total_seconds() if policy.deadline else float("inf")
    return (policy.approvals, -deadline)


def resolve(graph: str, tools: Sequence[str]) -> Policy:
    """The policy for an item of `graph` reviewing `tools` (none: a question/breakpoint)."""
    policies = all_policies()
    candidates = [_for_tool(policies, graph, tool) for tool in sorted(tools)] or [
        _for_tool(policies, graph, None)
    ]
    return max(candidates, key=_strictness)


def _user_ids(names: Sequence[str]) -> list[int]:
    User = get_user_model()
    field = f"{User.USERNAME_FIELD}__in"
    return sorted(User.objects.filter(**{field: list(names)}).values_list("pk", flat=True))


def _group_ids(names: Sequence[str]) -> list[int]:
    # A group named by a policy but missing is created empty: nobody is in it, so the
    # policy fails closed, and the group shows up in the admin to be filled.
    return sorted(Group.objects.get_or_create(name=name)[0].pk for name in names)


def apply(item: ReviewItem, policy: Policy, *, now: datetime) -> None:
    """Copy `policy` onto `item` (not saved): deciders, approvals, deadline, reminder."""
    item.policy = policy.snapshot()
    item.policy_version = policy.version
    item.required_approvals = policy.approvals
    item.reviewer_group_ids = _group_ids(policy.groups)
    item.responder_ids = _user_ids(policy.responders)
    if policy.responders and not item.responder_ids and not item.reviewer_group_ids:
        logger.warning(
            "Policy %s names only unknown responders %s: only managers see its items",
            policy.name,
            ", ".join(policy.responders),
        )
        item.responder_ids = [0]  # no user has id 0: fail closed
    assignees = _user_ids([policy.assignee]) if policy.assignee else []
    item.assignee_id = assignees[0] if assignees else None
    item.escalation_group_id = _group_ids([policy.escalate_to])[0] if policy.escalate_to else None
    item.due_at = now + policy.deadline if policy.deadline else None
    item.remind_at = (
        item.due_at - policy.remind_before if item.due_at and policy.remind_before else None
    )


__all__ = [
    "DEFAULT_EXPIRY_MESSAGE",
    "DEFAULT_POLICY",
    "Policy",
    "admin_policies",
    "all_policies",
    "apply",
    "from_row",
    "parse_settings_policy",
    "resolve",
    "settings_policies",
]
