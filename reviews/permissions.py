"""Who may see and decide what. Every view, the consumers, the API and the decision
service ask here, so a rule changes in one module.

Deny by default: without the `reviews.review` permission a user sees nothing, and an item
or thread the user may not see answers exactly like one that does not exist (404).

A thread, and the audit events of an item, are hidden along with any item the user may not
see (they show what the item reviews).

An item's deciders come from the review policy copied onto it (`reviews.policies`):
members of its reviewer groups, its allowed responders, its assignee, and, once it was
escalated, members of the escalation group. An item with no groups and no responders can
be decided by every reviewer. Deciders see the item; managers (`reviews.manage`) see
every item too, so they can reassign it or extend its deadline, but decide only what
they are deciders of. On top of that, the user who started the run may not approve it,
and an item claimed by someone else waits for its claimer.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.views import redirect_to_login
from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.sessions.models import Session
from django.db import connections
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Concat, Now
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

from beamweaver_core.models import Thread

REVIEW_PERMISSION = "reviews.review"
MANAGE_PERMISSION = "reviews.manage"
REVEAL_PERMISSION = "reviews.reveal_secrets"


@dataclass(frozen=True)
class Refusal:
    """Why a user may not do something to an item; `status` is the HTTP status."""

    status: int
    code: str
    message: str


def can_review(user: Any) -> bool:
    """Whether `user` may use the inbox at all (see and decide review items)."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and user.is_active
        and user.has_perm(REVIEW_PERMISSION)
    )


def can_manage(user: Any) -> bool:
    """Whether `user` may reassign any item, release claims and extend deadlines."""
    return can_review(user) and bool(user.has_perm(MANAGE_PERMISSION))


def can_reveal(user: Any) -> bool:
    """Whether `user` may reveal the secrets redaction withholds from the proposals they
    may see (`reviews.reveal`; every reveal is audited)."""
    return can_review(user) and bool(user.has_perm(REVEAL_PERMISSION))


def group_ids(user: Any) -> list[int]:
    """The ids of the user's groups (read once per user object; prefetched groups are
    used as they are)."""
    cached = getattr(user, "_bw_group_ids", None)
    if cached is None:
        cached = sorted(group.pk for group in user.groups.all())
        user._bw_group_ids = cached
    return list(cached)


def _decider_filter(user: Any, groups: Any = None) -> Q:
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


def visible_items(user: Any, items: QuerySet[Any]) -> QuerySet[Any]:
    """The review items of `items` that `user` may see."""
    if not can_review(user):
        return items.none()
    if can_manage(user):
        return items
    return items.filter(_decider_filter(user))


def is_decider(user: Any, item: Any) -> bool:
    """Whether the item's policy lets `user` decide it (the same rule as `visible_items`)."""
    return can_review(user) and policy_allows(user, item)


def policy_allows(user: Any, item: Any) -> bool:
    """Whether the item's policy names `user` among its deciders, for a user already known
    to hold the reviewer permission (e.g. one of `reviewers()`: no permission queries)."""
    if not item.reviewer_group_ids and not item.responder_ids:
        return True
    if user.pk in item.responder_ids or item.assignee_id == user.pk:
        return True
    groups = set(group_ids(user))
    if groups & set(item.reviewer_group_ids):
        return True
    return item.escalated_at is not None and item.escalation_group_id in groups


def decision_refusal(user: Any, item: Any, *, executes: bool) -> Refusal | None:
    """Why `user` may not answer `item` now (`None`: they may). `executes` says whether the
    answer lets something run (an approve or edit, or continuing past a breakpoint)."""
    if not is_decider(user, item):
        return Refusal(
            403,
            "not_allowed",
            "The review policy of this item does not let you decide it; a manager can "
            "reassign it to you.",
        )
    if executes and item.requested_by_id is not None and item.requested_by_id == user.pk:
        return Refusal(
            403,
            "self_approval",
            "You started this run, so you cannot approve it; another reviewer must.",
        )
    if item.claimed_by_id is not None and item.claimed_by_id != user.pk:
        claimer = item.claimed_by.get_username() if item.claimed_by else "another reviewer"
        return Refusal(
            409,
            "claimed",
            f"{claimer} claimed this item; ask them or a manager to release it.",
        )
    return None


@dataclass(frozen=True)
class DecisionOffer:
    """Which kinds of answer `decision_offer` lets a user give on an item now.

    `decide`: any answer at all; `execute`: answers that let something run (approve,
    edit, continue a breakpoint); `edit`: an edit. `why` names the rule that holds
    something back ("" when nothing is): `not_allowed`, `self_approval` (the user started
    the run) or `already_approved` (their approval counts towards a quorum already); an
    item that needs several approvals never offers an edit."""

    decide: bool
    execute: bool
    edit: bool
    why: str = ""


def decision_offer(user: Any, item: Any) -> DecisionOffer:
    """What the item page offers `user` (the same rules `decision_refusal` enforces; a
    claim by someone else is left to the refusal, since it changes while the page is
    open)."""
    # Imported here: quorum imports this module.
    from reviews import quorum

    if not is_decider(user, item):
        return DecisionOffer(False, False, False, "not_allowed")
    if item.kind == "interrupt":  # answers, never approvals
        return DecisionOffer(True, True, True)
    edit = not quorum.applies(item)
    if item.requested_by_id is not None and item.requested_by_id == user.pk:
        return DecisionOffer(True, False, False, "self_approval")
    if quorum.applies(item) and any(a.user_id == user.pk for a in quorum.counted(item)):
        return DecisionOffer(True, False, False, "already_approved")
    return DecisionOffer(True, True, edit)


def _holders(permission: str) -> QuerySet[Any]:
    app, codename = permission.split(".")
    ids = Permission.objects.filter(content_type__app_label=app, codename=codename)
    users = get_user_model().objects.filter(is_active=True)
    return users.filter(
        Q(is_superuser=True) | Q(user_permissions__in=ids) | Q(groups__permissions__in=ids)
    ).distinct()


def reviewers() -> QuerySet[Any]:
    """Active users with the reviewer permission (directly, through a group, or as
    superusers), their groups prefetched."""
    return _holders(REVIEW_PERMISSION).prefetch_related("groups")


def manager_ids() -> set[int]:
    """The ids of active users with the manager permission."""
    return set(_holders(MANAGE_PERMISSION).values_list("pk", flat=True))


def _hidden_item_ids(user: Any) -> QuerySet[Any]:
    # Imported here: the models import this module (ReviewItem.objects.visible_to).
    from reviews.models import ReviewItem

    return ReviewItem.objects.exclude(_decider_filter(user))


def visible_threads(user: Any) -> Any:
    """The threads `user` may see (a queryset; empty without the permission): all of them
    for managers; for other reviewers, those without a review item they may not see (a
    thread's state and history show what its items review)."""
    if not can_review(user):
        return Thread.objects.none()
    if can_manage(user):
        return Thread.objects.all()
    # NOT EXISTS, not NOT IN: Postgres answers it with an anti-join on the items'
    # thread index; NOT IN hashed every hidden item of the table for each page.
    return Thread.objects.filter(~Exists(_hidden_item_ids(user).filter(thread_id=OuterRef("id"))))


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
        # Imported here: the models import this module (ReviewItem.objects.visible_to).
        from reviews.models import ReviewItem

        user_pk = inputs["user"]
        users = self.model._default_manager.filter(pk=user_pk)
        # The membership table's columns are named after the user model (`account_id`
        # for a host's `Account`), so they are asked of the relation, not assumed.
        relation = self.model._meta.get_field("groups")
        groups = relation.remote_field.through.objects.filter(
            **{f"{relation.m2m_field_name()}_id": user_pk}
        ).values(f"{relation.m2m_reverse_field_name()}_id")

        def names(permissions: QuerySet[Any]) -> Any:
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
        decides = _decider_filter(users.model(pk=user_pk), groups)
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

    def run(self) -> tuple[Any, str | None] | None:
        """(the fresh user, the session's data or None) or None without a user row."""
        database = self.model._default_manager.db
        connection = connections[database]
        connection.ensure_connection()
        # Bound on the server and prepared once per connection (as the checkpointer's
        # statements, unless BEAMWEAVER_DB_PREPARE=0): the plan of this statement costs
        # more than running it, and it runs for every push to every socket.
        prepare = "prepare_threshold" in connection.settings_dict["OPTIONS"]
        started = time.monotonic()
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(self.sql, self.params, prepare=prepare)
            row = cursor.fetchone()
        if connection.queries_logged:  # counted as Django's own cursors are
            connection.queries_log.append(
                {"sql": self.sql, "time": f"{time.monotonic() - started:.3f}"}
            )
        if row is None:
            return None
        n = len(self.fields)
        user = self.model.from_db(database, self.fields, row[:n])
        extra = dict(zip(self.extra, row[n:], strict=True))
        user._bw_group_ids = sorted(extra["bw_groups"] or [])
        if not user.is_superuser:  # a superuser's permissions are never read (has_perm)
            own, through_groups = set(extra["bw_user_perms"]), set(extra["bw_group_perms"])
            # What ModelBackend.get_all_permissions caches, read in this statement.
            user._user_perm_cache = own
            user._group_perm_cache = through_groups
            user._perm_cache = own | through_groups
        self.exists = bool(extra.get("bw_exists", True))
        self.hidden = bool(extra.get("bw_hidden", False))
        return user, extra["bw_session"]

    def sees(self, user: Any) -> bool:
        """Whether `user` (from the last `run()`) may see the page's thread or item: as
        `visible_threads` / `visible_items`, managers everything, others what hides
        nothing from them (a thread) or what they decide (an item)."""
        if not can_review(user):
            return False
        if not self.page:
            return True
        return self.exists and (can_manage(user) or not self.hidden)


def visible_audit(user: Any, events: QuerySet[Any]) -> QuerySet[Any]:
    """The audit events `user` may read: managers all of them; other reviewers those of
    items they may see, and their own events of no item (an attempt on an item that does
    not exist). Events whose item was deleted since are left to managers: they may tell
    what a hidden item was. An attempt on an item hidden from its author is audited
    against that item, so it is read by those who may see the item."""
    if not can_review(user):
        return events.none()
    if can_manage(user):
        return events
    seen = Q(item__isnull=False) & ~Exists(_hidden_item_ids(user).filter(pk=OuterRef("item_id")))
    return events.filter(seen | Q(item__isnull=True, actor_id=user.pk))


def can_see_thread(user: Any, thread_id: str) -> bool:
    return visible_threads(user).filter(id=thread_id).exists()


def reviewer_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log in first (an htmx request is sent to the login page as a whole page, never
    swapped into a fragment), then require the reviewer permission (403 page)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            login = redirect_to_login(request.get_full_path())
            if getattr(request, "htmx", False):
                current = request.htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(current)["Location"])
            return login
        if not can_review(request.user):
            return render(request, "reviews/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


__all__ = [
    "MANAGE_PERMISSION",
    "REVEAL_PERMISSION",
    "REVIEW_PERMISSION",
    "DecisionOffer",
    "LiveCheck",
    "Refusal",
    "can_manage",
    "can_reveal",
    "can_review",
    "can_see_thread",
    "decision_offer",
    "decision_refusal",
    "group_ids",
    "is_decider",
    "manager_ids",
    "policy_allows",
    "reviewer_required",
    "reviewers",
    "visible_audit",
    "visible_items",
    "visible_threads",
]
