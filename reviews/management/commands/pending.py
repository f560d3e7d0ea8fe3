"""`manage.py pending [--graph NAME] [--json]`: the review items waiting for an answer."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from beamweaver_core.runtime import registry
from reviews.models import ReviewItem


def describe(item: ReviewItem) -> dict[str, Any]:
    """A pending item as JSON: enough to answer it with `manage.py resume`."""
    return {
        "id": item.pk,
        "thread_id": item.thread_id,
        "graph": item.graph,
        "interrupt_id": item.interrupt_id,
        "kind": item.kind,
        "node": item.node,
        "tools": list(item.tool_names),
        "created_at": item.created_at.isoformat(),
        "due_at": item.due_at.isoformat() if item.due_at else None,
        "assignee": item.assignee.get_username() if item.assignee else None,
        "claimed_by": item.claimed_by.get_username() if item.claimed_by else None,
        "required_approvals": item.required_approvals,
        "policy_version": item.policy_version,
        "digest": item.digest,
        "payload": item.payload,
    }


class Command(BaseCommand):
    help = (
        "List the pending review items (tool reviews, interrupt() questions and "
        "breakpoints), oldest first. Answer one with `manage.py resume THREAD_ID ...`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--graph", default=None, help="Only items of this registered graph.")
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="Print a JSON list (with payloads and digests).",
        )

    def handle(self, *args: Any, graph: str | None, as_json: bool, **options: Any) -> None:
        items = (
            ReviewItem.objects.pending()
            .select_related("thread", "assignee", "claimed_by")
            .order_by("created_at", "id")
        )
        if graph is not None:
            names = registry.registered_names()
            if graph not in names and not items.filter(graph=graph).exists():
                raise CommandError(f"No graph named {graph!r}; registered: {', '.join(names)}.")
            items = items.filter(graph=graph)
        found = list(items)
        if as_json:
            self.stdout.write(_dumps([describe(item) for item in found]))
            return
        if not found:
            self.stdout.write("No pending review items.")
            return
        now = timezone.now()
        for item in found:
            what = ", ".join(item.tool_names) or (
                f"{item.timing} {item.node}" if item.kind == "breakpoint" else item.node
            )
            age = int((now - item.created_at).total_seconds())
            self.stdout.write(
                f"#{item.pk}  {item.kind:<11} {what}  graph={item.graph}  "
                f"thread={item.thread_id}  interrupt={item.interrupt_id}  age={age}s"
            )


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
