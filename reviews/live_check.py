"""A live page's re-check of its user, session and object, compiled to one SQL statement.

The live consumers re-check who is on the other end before each push (`LiveCheck`); the
rules are those of `reviews.permissions`, read in one statement instead of five.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.sessions.models import Session
from django.db.models import Exists, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Concat, Now

from beamweaver_core import statements
from beamweaver_core.models import Thread
from beamweaver_core.users import AnyUser, User
from reviews.models import ReviewItem
from reviews.roles import GROUP_IDS, can_manage, can_review, decider_filter

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
_TEMPLATES: dict[tuple[str, bool], tuple[str, list[Any], dict[int, str]]] = {}
_EXTRA: dict[str, list[str]] = {}


class LiveCheck:
    """A live page's re-check in one SQL statement, compiled once per page.

    The statement reads the user's row; the session row `session_key` names if it is
    unexpired (its data, which the caller decodes); the user's permissions, directly and
    through groups, and group ids; and, for a thread or item page, whether the page's
    object exists and what `visible_threads` / `visible_items` need to decide whether
    the user sees it. `run()` returns the fresh user with that primed (so `can_review`,
    `can_manage` and `group_ids` on it ask nothing more) and the session data, or None
    when the user row is gone. The rules are those of this module: `sees(user)` decides
    with `can_manage` exactly as `visible_threads` and `visible_items` do.

    Only for the model backend (`applies()`): other backends decide permissions in
    Python, and a caller re-checks with the queries of this module instead."""

    def __init__(
        self,
        user_pk: Any,
        *,
        session_key: str | None,
        thread_id: str | None = None,
        item_id: int | None = None,
    ) -> None:
        self.model = get_user_model()
        self.page = "thread" if thread_id is not None else "item" if item_id is not None else ""
        self.fields = [f.attname for f in self.model._meta.concrete_fields]
        inputs = {"user": user_pk, "session": session_key, "thread": thread_id, "item": item_id}
        template = _TEMPLATES.get((self.page, session_key is None))
        if template is None:
            template = self._template(session_key is None)
        if template is not None:
            sql, compiled, slots = template
            params = list(compiled)
            for index, name in slots.items():
                kind = type(params[index])  # psycopg's Int4 as Django compiled it, or str
                params[index] = inputs[name] if kind in (int, str) else kind(inputs[name])
            self.sql, self.params = sql, tuple(params)
            self.extra = _EXTRA[self.page]
        else:
            self.sql, self.params, self.extra = self._compile(inputs)

    def _template(self, sessionless: bool) -> tuple[str, list[Any], dict[int, str]] | None:
        """The statement of this kind of page compiled once, with the positions of its
        inputs among the parameters (found by compiling it with two sets of stand-ins);
        None when they cannot be told apart (the statement is then compiled each time)."""
        stand_ins = [
            {
                "user": -1_000_000_001 - k,
                "session": None if sessionless else f"bw-live-session-{k}",
                "thread": f"bw-live-thread-{k}" if self.page == "thread" else None,
                "item": -1_000_000_011 - k if self.page == "item" else None,
            }
            for k in range(2)
        ]
        try:
            (sql, a, extra), (other, b, _) = (self._compile(v) for v in stand_ins)
        except Exception:
            return None
        if other != sql or len(a) != len(b):
            return None
        slots: dict[int, str] = {}
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            if x == y:
                continue
            names = [n for n, v in stand_ins[0].items() if v is not None and x == v]
            if len(names) != 1 or y != stand_ins[1][names[0]]:
                return None
            slots[index] = names[0]
        _TEMPLATES[(self.page, sessionless)] = (sql, list(a), slots)
        _EXTRA[self.page] = extra
        return sql, list(a), slots

    def _compile(self, inputs: dict[str, Any]) -> tuple[str, tuple[Any, ...], list[str]]:
        user_pk = inputs["user"]
        users = self.model._default_manager.filter(pk=user_pk)
        # The membership table's columns are named after the user model (`account_id`
        # for a host's `Account`), so they are asked of the relation, not assumed.
        relation = self.model._meta.get_field("groups")
        through = relation.remote_field.through
        assert through is not None  # a many-to-many field always has its table
        groups = through._default_manager.filter(
            **{f"{relation.m2m_field_name()}_id": user_pk}
        ).values(f"{relation.m2m_reverse_field_name()}_id")

        def names(permissions: QuerySet[Permission]) -> ArraySubquery:
            name = Concat("content_type__app_label", Value("."), "codename")
            return ArraySubquery(permissions.annotate(bw_name=name).order_by().values("bw_name"))

        sessions = Session.objects.filter(
            session_key=inputs["session"] or "", expire_date__gt=Now()
        )
        annotations: dict[str, Any] = {
            "bw_session": Subquery(sessions.values("session_data")[:1]),
            "bw_user_perms": names(Permission.objects.filter(user=OuterRef("pk"))),
            "bw_group_perms": names(Permission.objects.filter(group__user=OuterRef("pk"))),
            "bw_groups": ArraySubquery(
                Group.objects.filter(user=OuterRef("pk")).order_by("pk").values("pk")
            ),
        }
        decides = decider_filter(users.model(pk=user_pk), groups)
        if self.page == "thread":
            items = ReviewItem.objects.filter(thread_id=inputs["thread"])
            annotations["bw_exists"] = Exists(Thread.objects.filter(id=inputs["thread"]))
            annotations["bw_hidden"] = Exists(items.exclude(decides))
        elif self.page == "item":
            items = ReviewItem.objects.filter(pk=inputs["item"])
            annotations["bw_exists"] = Exists(items)
            annotations["bw_hidden"] = ~Exists(items.filter(decides))
        extra = list(annotations)
        query = users.annotate(**annotations).values_list(*self.fields, *extra).query
        sql, params = query.sql_with_params()
        return sql, tuple(params), extra

    @staticmethod
    def applies() -> bool:
        return list(settings.AUTHENTICATION_BACKENDS) == [MODEL_BACKEND]

    def run(self) -> tuple[User, str | None] | None:
        """(the fresh user, the session's data or None) or None without a user row."""
        database = self.model._default_manager.db
        # Prepared: its plan costs more than running it, and it runs for every push to
        # every socket.
        rows = statements.fetch(database, (self.sql, self.params), prepared=True)
        row = rows[0] if rows else None
        if row is None:
            return None
        n = len(self.fields)
        user = self.model.from_db(database, self.fields, row[:n])
        extra = dict(zip(self.extra, row[n:], strict=True))
        prime(
            user,
            groups=extra["bw_groups"],
            own=extra["bw_user_perms"],
            through_groups=extra["bw_group_perms"],
        )
        self.exists = bool(extra.get("bw_exists", True))
        self.hidden = bool(extra.get("bw_hidden", False))
        return user, extra["bw_session"]

    def sees(self, user: AnyUser | None) -> bool:
        """Whether `user` (from the last `run()`) may see the page's thread or item: as
        `visible_threads` / `visible_items`, managers everything, others what hides
        nothing from them (a thread) or what they decide (an item)."""
        if not can_review(user):
            return False
        if not self.page:
            return True
        return self.exists and (can_manage(user) or not self.hidden)


def prime(
    user: Any,
    *,
    groups: list[int] | None,
    own: list[str] | None,
    through_groups: list[str] | None,
) -> None:
    """Cache on `user` its group ids (as `group_ids` does) and its permissions by name,
    its own and through its groups (as `ModelBackend.get_all_permissions` does, under its
    attribute names), read by one of the statements here, so that `has_perm`,
    `can_review`, `can_manage` and `group_ids` on it ask nothing more."""
    setattr(user, GROUP_IDS, sorted(groups or []))
    if user.is_superuser:  # a superuser's permissions are never read (has_perm)
        return
    mine, theirs = set(own or []), set(through_groups or [])
    for cache, names in (
        ("_user_perm_cache", mine),
        ("_group_perm_cache", theirs),
        ("_perm_cache", mine | theirs),
    ):
        setattr(user, cache, names)


def prime_permissions(user: Any) -> None:
    """Read a request's user's permissions and groups in one statement (`LiveCheck`'s),
    where `has_perm` and `group_ids` would ask two or three, and cache them on `user` as
    they would (the model backend only; nothing for an anonymous user or one whose
    permissions were read already)."""
    if not getattr(user, "is_authenticated", False) or hasattr(user, "_perm_cache"):
        return
    if not LiveCheck.applies():
        return
    found = LiveCheck(user.pk, session_key=None).run()
    if found is None:
        return
    fresh = found[0]
    for name in (GROUP_IDS, "_user_perm_cache", "_group_perm_cache", "_perm_cache"):
        if hasattr(fresh, name):
            setattr(user, name, getattr(fresh, name))


__all__ = ["MODEL_BACKEND", "LiveCheck", "prime", "prime_permissions"]
