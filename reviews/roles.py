"""What a user's permissions make them in the inbox, and which items they decide.

The bottom of the inbox's access rules (`reviews.permissions` builds on it): the three
permissions, the reviewers and managers who hold them, and the decider rule as a filter
over review items' own columns. It imports no model of the inbox, so the models' querysets
(`ReviewItem.objects.visible_to`) can ask it without an import circle.
"""

from __future__ import annotations

from typing import TypeGuard, TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Model, Q, QuerySet

from beamweaver_core.users import AnyUser, User

REVIEW_PERMISSION = "reviews.review"
MANAGE_PERMISSION = "reviews.manage"
REVEAL_PERMISSION = "reviews.reveal_secrets"

GROUP_IDS = "_bw_group_ids"
"""The attribute a user object keeps its group ids in, once read (`group_ids`)."""

_Items = TypeVar("_Items", bound=QuerySet[Model])


def can_review(user: AnyUser | None) -> TypeGuard[User]:
    """Whether `user` may use the inbox at all (see and decide review items)."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and user.is_active
        and user.has_perm(REVIEW_PERMISSION)
    )


def can_manage(user: AnyUser | None) -> TypeGuard[User]:
    """Whether `user` may reassign any item, release claims and extend deadlines."""
    return can_review(user) and user.has_perm(MANAGE_PERMISSION)


def can_reveal(user: AnyUser | None) -> TypeGuard[User]:
    """Whether `user` may reveal the secrets redaction withholds from the proposals they
    may see (`reviews.reveal`; every reveal is audited)."""
    return can_review(user) and user.has_perm(REVEAL_PERMISSION)


def group_ids(user: User) -> list[int]:
    """The ids of the user's groups (read once per user object; prefetched groups are
    used as they are)."""
    cached: list[int] | None = getattr(user, GROUP_IDS, None)
    if cached is None:
        cached = sorted(group.pk for group in user.groups.all())
        setattr(user, GROUP_IDS, cached)
    return list(cached)


def decider_filter(
    user: User, groups: list[int] | QuerySet[Model, dict[str, int]] | None = None
) -> Q:
    """The items `user` decides. `groups`: the user's group ids, read from `user` when
    None, or a queryset of them (`values("group_id")`) read in the same statement."""
    if groups is None:
        groups = group_ids(user)
    rule = (
        Q(reviewer_group_ids=[], responder_ids=[])
        | Q(responder_ids__contains=[user.pk])
        | Q(assignee_id=user.pk)
    )
    if not isinstance(groups, list) or groups:
        rule |= Q(reviewer_group_ids__overlap=groups) | Q(
            escalated_at__isnull=False, escalation_group_id__in=groups
        )
    return rule


def visible_items(user: AnyUser | None, items: _Items) -> _Items:
    """The review items of `items` that `user` may see."""
    if not can_review(user):
        return items.none()
    if can_manage(user):
        return items
    return items.filter(decider_filter(user))


def _holders(permission: str) -> QuerySet[User]:
    app, codename = permission.split(".")
    ids = Permission.objects.filter(content_type__app_label=app, codename=codename)
    users = get_user_model().objects.filter(is_active=True)
    return users.filter(
        Q(is_superuser=True) | Q(user_permissions__in=ids) | Q(groups__permissions__in=ids)
    ).distinct()


def reviewers() -> QuerySet[User]:
    """Active users with the reviewer permission (directly, through a group, or as
    superusers), their groups prefetched."""
    return _holders(REVIEW_PERMISSION).prefetch_related("groups")


def manager_ids() -> set[int]:
    """The ids of active users with the manager permission."""
    return set(_holders(MANAGE_PERMISSION).values_list("pk", flat=True))


__all__ = [
    "GROUP_IDS",
    "MANAGE_PERMISSION",
    "REVEAL_PERMISSION",
    "REVIEW_PERMISSION",
    "can_manage",
    "can_reveal",
    "can_review",
    "decider_filter",
    "group_ids",
    "manager_ids",
    "reviewers",
    "visible_items",
]
