"""Staff rights in the admin (issue 13, findings 2 and 3; reliability.md, hostile corpus:
admin staff rights).

Finding 2: a staff user with `add_apitoken` could mint a token for any user, a superuser
included, and act as them through the API. Tokens are now created by their owner, or by a
superuser for someone else (audited); the admin never offers other users.

Finding 3: `cancel_runs`, `requeue_runs`, `send_again` and `revoke` declared no
`permissions=`, so a staff user who could only view runs cancelled one. Every action now
names the permission it needs; the walk below finds the actions in the admin site's
registry, so an action added later without permissions fails it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_permission_codename
from django.contrib.auth.models import Group, Permission, User
from django.contrib.messages import get_messages
from django.db import models
from django.test import Client, RequestFactory

from beamweaver_core.models import Run
from reviews.models import (
    ApiToken,
    AuditEvent,
    NotificationPreference,
    OutboxMessage,
    ReviewPolicy,
)
from tests.reviews.conftest import PASSWORD, client_for, make_reviewer, pause

pytestmark = pytest.mark.django_db


def staff(username: str, *perms: str, reviewer: bool = True) -> User:
    """A staff user holding exactly `perms` ("app.codename") besides the reviewer one."""
    user = make_reviewer(username, reviewer=reviewer, is_staff=True)
    for perm in perms:
        app, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
    return User.objects.get(pk=user.pk)


@pytest.fixture
def root() -> User:
    return make_reviewer("root", is_staff=True, is_superuser=True)


# ----------------------------------------------------------------- finding 2: API tokens

TOKEN_PERMS = ("reviews.add_apitoken", "reviews.change_apitoken", "reviews.view_apitoken")


def test_the_token_form_offers_no_other_user_to_staff(root: User) -> None:
    sam = staff("sam", *TOKEN_PERMS)

    page = client_for(sam).get("/admin/reviews/apitoken/add/").content.decode()

    assert 'name="user"' not in page
    assert "root" not in page


def test_staff_cannot_mint_a_token_for_a_superuser(root: User) -> None:
    """The attack: POST the add form with `user` set to the superuser."""
    sam = staff("sam", *TOKEN_PERMS)

    response = client_for(sam).post(
        "/admin/reviews/apitoken/add/", {"name": "mine", "user": str(root.pk)}
    )

    assert response.status_code == 302
    token = ApiToken.objects.get()
    assert token.user == sam
    assert not ApiToken.objects.filter(user=root).exists()


def test_staff_see_and_revoke_only_their_own_tokens(root: User) -> None:
    sam = staff("sam", *TOKEN_PERMS)
    theirs, _ = ApiToken.objects.issue(root, "root's")
    mine, _ = ApiToken.objects.issue(sam, "sam's")
    client = client_for(sam)

    listing = client.get("/admin/reviews/apitoken/").content.decode()
    other_page = client.get(f"/admin/reviews/apitoken/{theirs.pk}/change/")
    client.post(
        "/admin/reviews/apitoken/",
        {"action": "revoke", "_selected_action": [str(theirs.pk), str(mine.pk)]},
    )

    assert "sam&#x27;s" in listing and "root&#x27;s" not in listing
    assert other_page.status_code == 302  # "doesn't exist", as for an unknown id
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert theirs.revoked_at is None and mine.revoked_at is not None


def test_staff_without_the_reviewer_permission_get_a_form_error_not_a_token() -> None:
    """A token acts as its user, who needs the reviewer permission (as `api_token create`
    says)."""
    sam = staff("sam", *TOKEN_PERMS, reviewer=False)

    response = client_for(sam).post("/admin/reviews/apitoken/add/", {"name": "mine"})

    assert response.status_code == 200
    assert "reviewer permission" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_superuser_may_create_a_token_for_a_reviewer_and_it_is_audited(root: User) -> None:
    bob = make_reviewer("bob")

    page = client_for(root).get("/admin/reviews/apitoken/add/").content.decode()
    response = client_for(root).post(
        "/admin/reviews/apitoken/add/", {"name": "bob's service", "user": str(bob.pk)}
    )

    assert 'name="user"' in page
    assert response.status_code == 302
    token = ApiToken.objects.get()
    assert token.user == bob
    event = AuditEvent.objects.get(action="token_issued")
    assert event.actor == root and event.source == "admin"
    assert "bob" in event.message and f"bw_{token.key}_" in event.message


def test_a_superuser_cannot_create_a_token_for_a_user_who_is_not_a_reviewer(root: User) -> None:
    mallory = make_reviewer("mallory", reviewer=False)

    response = client_for(root).post(
        "/admin/reviews/apitoken/add/", {"name": "x", "user": str(mallory.pk)}
    )

    assert response.status_code == 200 and not ApiToken.objects.exists()


def test_a_token_a_staff_user_creates_for_themselves_is_audited_too() -> None:
    sam = staff("sam", *TOKEN_PERMS)

    client_for(sam).post("/admin/reviews/apitoken/add/", {"name": "mine"})

    event = AuditEvent.objects.get(action="token_issued")
    assert event.actor == sam and "sam" in event.message


def test_api_token_create_is_audited_and_refuses_non_reviewers() -> None:
    """`manage.py api_token` is run by whoever holds the server's shell (a superuser in
    all but name): it may create a token for any reviewer, and it is audited."""
    from django.core.management import CommandError, call_command

    bob = make_reviewer("bob")
    make_reviewer("mallory", reviewer=False)

    call_command("api_token", "create", "--user", "bob", "--name", "svc", stdout=_Sink())
    with pytest.raises(CommandError, match="reviewer permission"):
        call_command("api_token", "create", "--user", "mallory", "--name", "x", stdout=_Sink())
    token = ApiToken.objects.get()
    call_command("api_token", "revoke", token.key, stdout=_Sink())

    issued = AuditEvent.objects.get(action="token_issued")
    revoked = AuditEvent.objects.get(action="token_revoked")
    assert token.user == bob
    assert issued.source == revoked.source == "command" and issued.actor is None
    assert "bob" in issued.message and "manage.py api_token" in issued.message


class _Sink:
    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


# ------------------------------------------------------------- finding 3: admin actions


def _rows(acting: User) -> dict[type[models.Model], Callable[[], models.Model]]:
    """One row of every model whose admin has actions, to run them on."""

    def run() -> Run:
        return Run.objects.get(id=pause("approval", {"amount": 5}).run_id)

    return {
        Run: run,
        ApiToken: lambda: ApiToken.objects.issue(acting, "walk")[0],
        OutboxMessage: lambda: OutboxMessage.objects.create(
            channel="email", target="x@example.com", event="review.created", payload={}
        ),
        User: lambda: User.objects.create_user("victim", password=PASSWORD),
        Group: lambda: Group.objects.create(name="victims"),
        ReviewPolicy: lambda: ReviewPolicy.objects.create(name="walked"),
        NotificationPreference: lambda: NotificationPreference.objects.create(
            user=User.objects.create_user("prefs", password=PASSWORD)
        ),
    }


def _perm(model: type[models.Model], name: str) -> str:
    opts = model._meta
    return f"{opts.app_label}.{get_permission_codename(name, opts)}"


def registered_actions() -> list[tuple[type[models.Model], Any, str, Any]]:
    """(model, model admin, action name, function) for every action of every registered
    admin, the site-wide ones (delete_selected) included, before any permission filter."""
    found = []
    for model, model_admin in admin.site._registry.items():
        for func, name, _ in model_admin._get_base_actions():
            found.append((model, model_admin, name, func))
    return found


def _offered(model_admin: Any, user: User) -> set[str]:
    request = RequestFactory().get("/admin/")
    request.user = user
    return set(model_admin.get_actions(request))


def test_the_walk_finds_the_actions_of_our_admins() -> None:
    names = {(m.__name__, n) for m, _, n, _ in registered_actions()}
    assert {
        ("Run", "cancel_runs"),
        ("Run", "requeue_runs"),
        ("OutboxMessage", "send_again"),
        ("ApiToken", "revoke"),
        ("User", "delete_selected"),
    } <= names


def test_every_admin_action_declares_the_permissions_it_needs() -> None:
    missing = [
        f"{model.__name__}.{name}"
        for model, _, name, func in registered_actions()
        if not getattr(func, "allowed_permissions", None)
    ]
    assert missing == [], "give these actions @admin.action(permissions=[...])"


REFUSED = ("No action selected", "Items must be selected")


def _run_action(client: Client, model: type[models.Model], name: str, pk: Any) -> list[str]:
    """POST `name` on the row `pk` from the changelist; what the action said: its messages,
    and "confirm" if it answered with a confirmation page (as delete_selected does). An
    action that did not run says nothing, or that no action was selected."""
    opts = model._meta
    response = client.post(
        f"/admin/{opts.app_label}/{opts.model_name}/",
        {"action": name, "_selected_action": [str(pk)], "index": "0"},
    )
    notes = [str(m) for m in get_messages(response.wsgi_request)]
    if response.status_code == 200 and b'name="post" value="yes"' in response.content:
        notes.append("confirm")
    return notes


def _ran(notes: list[str]) -> bool:
    return any(not note.startswith(REFUSED) for note in notes)


def _snapshot(model: type[models.Model], pk: Any) -> Any:
    return list(model._default_manager.filter(pk=pk).values())


def test_a_view_only_staff_user_is_refused_every_action(root: User) -> None:
    """For every action a superuser is offered: a staff user who may only view that model
    is not offered it, and posting it anyway changes nothing."""
    problems = []
    for model, model_admin, name, _ in registered_actions():
        if name not in _offered(model_admin, root):
            continue  # disabled for everyone (read-only models): nothing to refuse
        viewer = staff(f"view-{model._meta.model_name}-{name}"[:150], _perm(model, "view"))
        rows = _rows(viewer)
        assert model in rows, f"add a row of {model.__name__} to _rows to walk {name}"
        row = rows[model]()
        before = _snapshot(model, row.pk)
        if name in _offered(model_admin, viewer):
            problems.append(f"{model.__name__}.{name} is offered to a view-only user")
        notes = _run_action(client_for(viewer), model, name, row.pk)
        if _snapshot(model, row.pk) != before:
            problems.append(f"{model.__name__}.{name} changed a row for a view-only user")
        if _ran(notes):
            problems.append(f"{model.__name__}.{name} ran for a view-only user: {notes}")
    assert problems == []


def test_each_action_runs_with_the_permissions_it_declares(root: User) -> None:
    problems = []
    for model, model_admin, name, func in registered_actions():
        if name not in _offered(model_admin, root):
            continue
        perms = [_perm(model, p) for p in func.allowed_permissions]
        operator = staff(f"op-{model._meta.model_name}-{name}"[:150], _perm(model, "view"), *perms)
        row = _rows(operator)[model]()
        if name not in _offered(model_admin, operator):
            problems.append(f"{model.__name__}.{name} is not offered with {perms}")
            continue
        notes = _run_action(client_for(operator), model, name, row.pk)
        if not _ran(notes):
            problems.append(f"{model.__name__}.{name} was refused with {perms}: {notes}")
    assert problems == []


def test_cancelling_in_the_admin_needs_the_cancel_run_permission() -> None:
    """The reported attack, as it was done: `view_run` (and even `change_run`) alone do
    not cancel a run; `cancel_run` does."""
    run = Run.objects.get(id=pause("approval", {"amount": 5}).run_id)
    viewer = staff("viewer", "beamweaver_core.view_run", "beamweaver_core.change_run")
    operator = staff("operator", "beamweaver_core.view_run", "beamweaver_core.cancel_run")

    _run_action(client_for(viewer), Run, "cancel_runs", run.id)
    run.refresh_from_db()
    assert run.status == "interrupted"

    notes = _run_action(client_for(operator), Run, "cancel_runs", run.id)
    run.refresh_from_db()
    assert run.status == "cancelled" and "1 run(s) cancelled." in notes
