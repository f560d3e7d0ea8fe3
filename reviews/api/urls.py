"""The review API's URLs (namespace `reviews:api`), mounted at `/api/v1/`."""

from __future__ import annotations

from django.urls import path

from reviews.api import views

app_name = "api"

urlpatterns = [
    path("items/", views.items_view, name="items"),
    path("items/<int:pk>/", views.item_view, name="item"),
    path("items/<int:pk>/decisions/", views.decisions_view, name="decisions"),
    path("threads/<path:thread_id>/cancel/", views.cancel_run_view, name="cancel_run"),
    path("openapi.json", views.openapi_view, name="openapi"),
]
