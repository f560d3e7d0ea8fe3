"""The thread page's studio parts, each read only when its partial is rendered: the graph
drawn with the current work marked (`graph_view`), the checkpoint timeline (`timeline`),
what the thread waits for (`pending`) and whether the user may time travel. A live push
renders a few partials of the page; the parts it does not show cost nothing."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from beamweaver_core.models import Thread
from beamweaver_core.users import User
from reviews import graph_view, timeline
from reviews.models import ReviewItem
from reviews.thread_rights import change_refusal
from reviews.threads import ThreadState


@dataclass(frozen=True)
class Waiting:
    """One pending interrupt: its node, what it asks, and its review item if any."""

    node: str
    note: str
    interrupt_id: str
    item: ReviewItem | None
    breakpoint: bool

    @property
    def waits_for(self) -> str:
        """Who must act, in words: the holder of the item, its groups or responders."""
        item = self.item
        if item is None:
            return "an operator to continue the run" if self.breakpoint else "an answer"
        if item.claimed_by is not None:
            return f"{item.claimed_by.get_username()} (claimed it)"
        if item.assignee is not None:
            return f"{item.assignee.get_username()} (assigned)"
        who = [str(g) for g in item.policy.get("groups") or []]
        who += [str(r) for r in item.policy.get("responders") or []]
        approvals = item.required_approvals
        need = f"{approvals} approvals from " if approvals > 1 else ""
        return need + (", ".join(who) if who else "any reviewer")


class ThreadStudio:
    """What the studio partials of one thread page show, for one user."""

    def __init__(
        self, thread: Thread, user: User, state: ThreadState, items: list[ReviewItem]
    ) -> None:
        self.thread = thread
        self.user = user
        self.state = state
        self.items = items

    @cached_property
    def picture(self) -> graph_view.Picture:
        return graph_view.picture(self.thread, self.state.interrupts, self.state.next)

    @cached_property
    def timeline(self) -> list[timeline.Step]:
        return timeline.timeline(self.thread)

    @cached_property
    def may_fork(self) -> bool:
        """Replay and fork are changes of the thread (`reviews.thread_rights`)."""
        return change_refusal(self.user, self.thread) is None

    @cached_property
    def pending(self) -> list[Waiting]:
        """The thread's pending interrupts, each with its pending review item."""
        by_interrupt = {i.interrupt_id: i for i in self.items if i.is_pending}
        return [
            Waiting(
                node=i.node,
                note=graph_view.interrupt_note(i),
                interrupt_id=i.id,
                item=by_interrupt.get(i.id),
                breakpoint=i.timing is not None,
            )
            for i in self.state.interrupts
        ]

    @cached_property
    def pending_items_without_interrupt(self) -> list[ReviewItem]:
        """Pending review items whose interrupt is not among the state's (a batch item)."""
        shown = {w.interrupt_id for w in self.pending}
        return [i for i in self.items if i.is_pending and i.interrupt_id not in shown]


__all__ = ["ThreadStudio", "Waiting"]
