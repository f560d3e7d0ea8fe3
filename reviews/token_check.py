"""An API token's check in one SQL statement: the token, its user, and the user's
permissions and groups.

Hand-written (compiled from a queryset once per process, not built per request) because
the ORM's way costs four round trips for every request of the protocol under `/lg` and
of the review API: the token with its user, the user's permissions (two queries, in
`has_perm`) and the user's groups (in `group_ids`, when what the user sees is decided).
This statement reads them together, as `reviews.live_check` does for a live page, and
primes the user as `ModelBackend` and `group_ids` cache them, so `can_review`,
`can_manage`, `group_ids` and `visible_threads` on it ask nothing more in the request.
The rules stay in Python: whether the text is the live token's is `ApiToken.accepts`
(constant-time), the user's permission `can_review`.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, QuerySet, Value
from django.db.models.functions import Concat

from beamweaver_core.statements import bound, compiled, fetch, stand_ins_taken
from reviews.live_check import LiveCheck, prime
from reviews.models.tokens import ApiToken, token_key

STAND_IN = "bw-token-check-key"
"""The key the statement is compiled with; each call puts the token's key in its place."""

_EXTRA = ("bw_user_perms", "bw_group_perms", "bw_groups")


@functools.cache
def _fields() -> tuple[list[str], list[str]]:
    tokens = [f.attname for f in ApiToken._meta.concrete_fields]
    users = [f.attname for f in get_user_model()._meta.concrete_fields]
    return tokens, users


def _names(permissions: QuerySet[Permission]) -> ArraySubquery:
    name = Concat("content_type__app_label", Value("."), "codename")
    return ArraySubquery(permissions.annotate(bw_name=name).order_by().values("bw_name"))


def _build(database: str) -> tuple[str, tuple[Any, ...]]:
    """The statement for the token `STAND_IN`: the token's and its user's columns, then
    the user's own permissions, those through groups (as `app_label.codename`), and its
    group ids."""
    token_fields, user_fields = _fields()
    user = OuterRef("user_id")
    query = (
        ApiToken.objects.using(database)
        .filter(key=STAND_IN)
        .order_by()
        .annotate(
            bw_user_perms=_names(Permission.objects.filter(user=user)),
            bw_group_perms=_names(Permission.objects.filter(group__user=user)),
            bw_groups=ArraySubquery(Group.objects.filter(user=user).order_by("pk").values("pk")),
        )
        .values_list(*token_fields, *(f"user__{name}" for name in user_fields), *_EXTRA)
        .query
    )
    sql, params = query.sql_with_params()
    return sql, stand_ins_taken(params, [STAND_IN])


def live_token(raw: str) -> ApiToken | None:
    """The live token whose secret is `raw`, or `None` (malformed, unknown, revoked,
    expired), as `ApiToken.objects.authenticate`, with its user's permissions and groups
    primed (`reviews.live_check.prime`). One statement; with another authentication
    backend than the model backend, the ORM's queries (which decide permissions there)."""
    if not LiveCheck.applies():
        return ApiToken.objects.authenticate(raw)
    key = token_key(raw)
    if key is None:
        return None
    database = ApiToken.objects.db
    statement = compiled(("token check", database), lambda: _build(database))
    # Prepared (`beamweaver_core.statements`): every request of `/lg` and the review API runs it,
    # and its plan (a unique key, the user's id) is the same for every token.
    rows = fetch(database, bound(statement, {STAND_IN: key}), prepared=True)
    if not rows:
        return None
    row = rows[0]
    token_fields, user_fields = _fields()
    n, m = len(token_fields), len(token_fields) + len(user_fields)
    token = ApiToken.from_db(database, token_fields, row[:n])
    if not token.accepts(raw):
        return None
    user = get_user_model().from_db(database, user_fields, row[n:m])
    own, through_groups, groups = row[m:]
    prime(user, groups=groups, own=own, through_groups=through_groups)
    token.user = user
    return token


__all__ = ["STAND_IN", "live_token"]
