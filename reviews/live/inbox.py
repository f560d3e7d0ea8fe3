"""The inbox page's socket: rows, counts and pager as items come and go."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any
from urllib.parse import parse_qs

from beamweaver_core.users import User
from reviews import inbox, partials
from reviews.groups import INBOX_GROUP
from reviews.live.base import LiveConsumer, item_id_of
from reviews.live.frames import into_list, split_frames
from reviews.models import ReviewItem
from reviews.models.items import ReviewItemQuerySet
from reviews.permissions import can_manage, group_ids
from reviews.roles import visibility


def audience(user: User) -> Hashable:
    """Which items `user` sees, as `reviews.permissions.visible_items` decides it: every
    item for a manager; otherwise the items whose policy names the user or one of their
    groups (so it is the user and their groups)."""
    if can_manage(user):
        return ("every item",)
    return ("deciders", user.pk, tuple(sorted(group_ids(user))))


class InboxConsumer(LiveConsumer):
    """An inbox page: its filters and page number come in the query string. Every inbox
    with the same audience and query (as `InboxQuery` reads it) gets the same frames (the rows do not depend on who
    looks; the counts and pages depend only on which items they see)."""

    def page_groups(self) -> list[str]:
        return [INBOX_GROUP]

    def setup(self) -> None:
        raw = self.scope.get("query_string", b"").decode("latin-1")
        params = {k: v[0] for k, v in parse_qs(raw).items() if v}
        self.query = inbox.InboxQuery.from_params(params)

    def allowed(self) -> bool:
        return True

    def view(self) -> Hashable:
        return (type(self), audience(self.user), self.query)

    def _items(self) -> ReviewItemQuerySet:
        return ReviewItem.objects.visible_to(self.user)

    def snapshot(self) -> str:
        context = partials.inbox_context(self._items(), self.query)
        return partials.render(partials.INBOX, "inbox-list", context)

    async def review_created(self, message: dict[str, Any]) -> None:
        item_id = item_id_of(message)
        if item_id is None:
            return
        # All the rows noted during a render are rendered together, with one page, one
        # count and one pager.
        self.note(item_id)

    def frames(self, batch: dict[int, bool]) -> list[str]:
        return self._rows_frames(batch)

    def _rows_frames(self, batch: dict[int, bool]) -> list[str]:
        """The rows of `batch`, then the counts and the pager, in frames of at most
        `FRAME_BUDGET` bytes each: the counts, the page's ids and the rows of `batch` the
        user may see, three statements however many rows."""
        items = self._items()
        context = partials.inbox_counts_context(items, self.query, visibility(self.user))
        listed = set(inbox.page_ids(context["page"]))
        rows = items.select_related(*inbox.ROW_RELATED).in_bulk(list(batch))
        parts = [self._row_part(rows[item_id], listed) for item_id in batch if item_id in rows]
        context["oob"] = True
        parts.append(partials.render(partials.INBOX, "inbox-counts", context))
        parts.append(partials.render(partials.INBOX, "inbox-pager", context))
        return split_frames(parts)

    @staticmethod
    def _row_part(item: ReviewItem, listed: set[int]) -> str:
        """The row, put into the page's list (it replaces the row if the page has it), or
        a marker that removes the row if the page has it (the page does not list it now:
        it matches another page or no longer matches the filters)."""
        if item.pk not in listed:
            return into_list("inbox-rows", f'<li id="item-row-{item.pk}" data-remove hidden></li>')
        return into_list("inbox-rows", partials.render(partials.INBOX, "inbox-row", {"item": item}))
