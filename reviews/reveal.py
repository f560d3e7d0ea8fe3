"""Revealing what the redaction policy (`beamweaver_core.redaction`) withholds from a
review item's proposal.

Redaction withholds only credentials (see that module), and the inbox says which values
it withheld. A reviewer who must see them before approving (whose secret is it, which
account does it reach) and holds `reviews.reveal_secrets` can reveal them, on the item
page or through the API (`?reveal_secrets=1`). Each reveal is an audit event
(`revealed`) naming who revealed what, read by whoever may see the item.
"""

from __future__ import annotations

from beamweaver_core.redaction import withheld
from beamweaver_core.users import User
from reviews.models import AuditEvent, ReviewItem


def withheld_paths(item: ReviewItem) -> list[str]:
    """The paths in the item's payload of what redaction withholds."""
    return withheld(item.payload)


def record(item: ReviewItem, user: User, *, source: str) -> list[str]:
    """Audit that `user` revealed the item's withheld values; the paths revealed."""
    paths = withheld_paths(item)
    message = "Revealed: " + (", ".join(paths) if paths else "nothing was withheld")
    AuditEvent.objects.about(item, AuditEvent.Action.REVEALED, message, actor=user, source=source)
    return paths


__all__ = ["record", "withheld_paths"]
