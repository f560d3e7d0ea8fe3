"""What a user's permissions make them in the inbox, and which items they decide.

The bottom of the inbox's access rules (`reviews.permissions` builds on it): the three
permissions, the reviewers and managers who hold them, and the decider rule as a filter
over review items' own columns. It imports no model of the inbox, so the models' querysets
(`ReviewItem.objects.visible_to`) can ask it without an import circle.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from typing import Any, TypeGuard, TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    Model,
    OuterRef,
    Q,
    QuerySet,
)

from beamweaver_core import statements
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
    """The ids of the user's groups (read once per user object; those `reviewers()` read
    and prefetched groups are used as they are)."""
    cached: list[int] | None = getattr(user, GROUP_IDS, None)
    if cached is None:
        read: list[int] | None = getattr(user, "bw_groups", None)  # a user of `reviewers()`
        cached = sorted(read if read is not None else (group.pk for group in user.groups.all()))
        setattr(user, GROUP_IDS, cached)
    return list(cached)


EVERY_REVIEWER = Q(reviewer_group_ids=[], responder_ids=[])
"""The items every reviewer decides (and so sees): their policy named no deciders."""


def decider_filter(
    user: User, groups: list[int] | QuerySet[Model, dict[str, int]] | None = None
) -> Q:
    """The items `user` decides. `groups`: the user's group ids, read from `user` when
    None, or a queryset of them (`values("group_id")`) read in the same statement."""
    if groups is None:
        groups = group_ids(user)
    rule = EVERY_REVIEWER | Q(responder_ids__contains=[user.pk]) | Q(assignee_id=user.pk)
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


def visibility(user: AnyUser | None) -> Hashable:
    """Everything `visible_items` decides on, as a key (`beamweaver_core.statements`): nothing
    without the permission, every item for a manager, else the user and their groups."""
    if not can_review(user):
        return ("nothing",)
    if can_manage(user):
        return ("every item",)
    return ("deciders", user.pk, tuple(group_ids(user)))


def _holds(permission: str) -> Q:
    """The users holding `permission` (directly, through a group, or as superusers), as
    a condition on the user row: EXISTS, so that no join multiplies the users."""
    app, codename = permission.split(".")
    ids = Permission.objects.filter(content_type__app_label=app, codename=codename)
    model = get_user_model()
    direct = model._meta.get_field("user_permissions")
    membership = model._meta.get_field("groups")
    own = direct.remote_field.through.objects.filter(  # type: ignore[union-attr]
        **{f"{direct.m2m_field_name()}_id": OuterRef("pk")},
        permission__in=ids,
    )
    through_groups = membership.remote_field.through.objects.filter(  # type: ignore[union-attr]
        **{f"{membership.m2m_field_name()}_id": OuterRef("pk")},
        group__permissions__in=ids,
    )
    return Q(is_superuser=True) | Exists(own) | Exists(through_groups)


def _holders(permission: str) -> QuerySet[User]:
    return get_user_model().objects.filter(Q(is_active=True) & _holds(permission))


def reviewers() -> QuerySet[User]:
    """Active users with the reviewer permission (directly, through a group, or as
    superusers), each with their group ids (`group_ids` asks nothing more) and whether
    they manage (`bw_manager`), read in the same statement."""
    model = get_user_model()
    membership = model._meta.get_field("groups")
    groups = membership.remote_field.through.objects.filter(  # type: ignore[union-attr]
        **{f"{membership.m2m_field_name()}_id": OuterRef("pk")}
    )
    group_id = f"{membership.m2m_reverse_field_name()}_id"
    return _holders(REVIEW_PERMISSION).annotate(
        bw_groups=ArraySubquery(groups.order_by(group_id).values(group_id)),
        bw_manager=ExpressionWrapper(_holds(MANAGE_PERMISSION), output_field=BooleanField()),
    )


def reviewer_list() -> list[User]:
    """`reviewers()` by id, as a list: their statement is compiled once per process (it
    has no input; building and compiling its EXISTS cost more CPU than running it) and
    prepared once per connection (planning it costs Postgres several times what running
    it does: `beamweaver_core.statements`)."""
    model = get_user_model()
    database = model._default_manager.db
    sql, params, fields, annotations = _reviewers_statement(database)
    users = []
    for row in statements.fetch(database, (sql, params), prepared=True):
        user = model.from_db(database, fields, row[: len(fields)])
        for name, value in zip(annotations, row[len(fields) :], strict=True):
            setattr(user, name, value)
        users.append(user)
    return users


@functools.cache
def _reviewers_statement(database: str) -> tuple[str, tuple[Any, ...], list[str], list[str]]:
    """`reviewers()`'s statement and parameters, then the names of its columns: the
    user's fields, then what it annotates."""
    fields = [f.attname for f in get_user_model()._meta.concrete_fields]
    users = reviewers().using(database).order_by("pk")
    query = users.values_list(*fields, *users.query.annotations).query
    sql, params = query.sql_with_params()
    return sql, tuple(params), fields, list(query.annotation_select)


def manager_ids() -> set[int]:
    """The ids of active users with the manager permission."""
    return set(_holders(MANAGE_PERMISSION).values_list("pk", flat=True))


__all__ = [
    "EVERY_REVIEWER",
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
    "reviewer_list",
    "reviewers",
    "visibility",
    "visible_items",
]
