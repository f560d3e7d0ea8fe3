"""The user model, whichever it is: the host project's `AUTH_USER_MODEL` or Django's.

Nothing else in the project names `User` or its `username` field: a host whose user
model logs in by e-mail (`USERNAME_FIELD = "email"`) or is called `Account` works the
same. The model must keep Django's permissions (`PermissionsMixin`, as `AbstractUser`
does): reviewers are the users with the `reviews.review` permission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from django.contrib.auth import get_user_model

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, _User

User: TypeAlias = "_User"
"""The user model as a type: django-stubs' placeholder, which its mypy plugin reads as the
configured `AUTH_USER_MODEL` (so a host's own model is checked as itself)."""

AnyUser: TypeAlias = "_User | AnonymousUser"
"""Who a request's `user` is: a user, or the anonymous user before logging in."""


def username_field() -> str:
    """The name of the user model's login field (`username`, `email`, ...)."""
    return str(get_user_model().USERNAME_FIELD)


def username_path(relation: str = "") -> str:
    """The ORM path to the login field, through `relation` (`"user"` -> `user__email`)."""
    return f"{relation}__{username_field()}" if relation else username_field()


def find_user(name: str) -> User | None:
    """The user whose login field is `name`, or `None`."""
    model = get_user_model()
    return model._default_manager.filter(**{username_field(): name}).first()


__all__ = ["AnyUser", "User", "find_user", "username_field", "username_path"]
