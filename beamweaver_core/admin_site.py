"""The admin site: every model page checks the model permission before any lookup.

Django's change, history and delete pages look the object up first and redirect for an id
that does not exist, but answer 403 for one that does; a staff user without the model
permission could tell which threads, runs or review items exist by trying ids. On this
site every registered `ModelAdmin` (ours, the auth app's, any later one) is given
`PermissionFirst`, which answers 403 for every id when the model is not viewable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest

_ModelT = TypeVar("_ModelT", bound=Model)


class PermissionFirst(admin.ModelAdmin[_ModelT]):
    """Refuse object pages of a model the user may not view, before looking anything up."""

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> _ModelT | None:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return super().get_object(request, object_id, from_field)


class BeamWeaverAdminSite(admin.AdminSite):
    """The default admin site (see `apps.BeamWeaverAdminConfig`)."""

    def register(
        self,
        model_or_iterable: type[_ModelT] | Iterable[type[_ModelT]],
        admin_class: type[admin.ModelAdmin[_ModelT]] | None = None,
        **options: Any,  # ModelAdmin attributes, as Django's `register` takes them
    ) -> None:
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, PermissionFirst):
            admin_class = type(
                admin_class.__name__,
                (PermissionFirst, admin_class),
                {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__},
            )
        super().register(model_or_iterable, admin_class, **options)


__all__ = ["BeamWeaverAdminSite", "PermissionFirst"]
