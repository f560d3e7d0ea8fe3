"""A thread page's socket: run events as they happen, status, state, items, decisions."""

from __future__ import annotations

from typing import Any

from beamweaver_core.runtime.groups import thread_group
from reviews import partials
from reviews.converters import ThreadIdConverter
from reviews.live.base import LiveConsumer
from reviews.live.events import event_fragment
from reviews.live.frames import split_frames
from reviews.permissions import visible_threads

THREAD_PARTS = (
    "thread-status",
    "thread-items",
    "thread-decisions",
    "thread-state",
    "thread-history",
)


class ThreadConsumer(LiveConsumer):
    """A thread page (rendered for its own user; a run event's HTML is everyone's)."""

    def page_groups(self) -> list[str]:
        return [thread_group(self.thread_id)]

    def setup(self) -> None:
        # The page encodes an id outside the thread id rule (`reviews.converters`).
        self.thread_id = ThreadIdConverter().to_python(
            str(self.scope["url_route"]["kwargs"]["thread_id"])
        )

    def page(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id}

    def allowed(self) -> bool:
        return visible_threads(self.user).filter(id=self.thread_id).exists()

    def _context(self) -> dict[str, Any]:
        thread = visible_threads(self.user).get(id=self.thread_id)
        context = partials.thread_context(thread, self.user)
        context["oob"] = True
        return context

    def snapshot(self) -> str:
        context = self._context()
        del context["oob"]
        # A top-level fragment without hx-swap-oob replaces the element with its id.
        return partials.render(partials.THREAD, "thread-live", context)

    def _parts(self, *names: str) -> str:
        context = self._context()
        return "".join(partials.render(partials.THREAD, name, context) for name in names)

    def frames(self, batch: dict[tuple[str, str], str]) -> list[str]:
        # The run events in the order they came, then the parts, with one context.
        parts = [html for (kind, _), html in batch.items() if kind == "event"]
        names = [name for name in THREAD_PARTS if ("part", name) in batch]
        if names:
            parts.append(self._parts(*names))
        return split_frames(parts)

    async def review_created(self, message: dict[str, Any]) -> None:
        for name in ("thread-items", "thread-decisions"):
            self.note(("part", name))

    async def run_status(self, message: dict[str, Any]) -> None:
        if message.get("thread_id") != self.thread_id:
            return
        names = ["thread-status"]
        if message.get("status") != "running":
            names += ["thread-items", "thread-decisions", "thread-state", "thread-history"]
        for name in names:
            self.note(("part", name))

    async def run_event(self, message: dict[str, Any]) -> None:
        record = message.get("event")
        if message.get("thread_id") != self.thread_id or not isinstance(record, dict):
            return
        fragment = event_fragment(message.get("run_id"), record)
        if fragment is not None:
            # The event's HTML is the same for every socket; only the check is theirs.
            self.note(("event", fragment[0]), fragment[1])
