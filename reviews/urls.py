"""The inbox's URLs (namespace `reviews`)."""

from __future__ import annotations

from django.urls import path, register_converter

from reviews import views
from reviews.converters import ThreadIdConverter

register_converter(ThreadIdConverter, "thread_id")

app_name = "reviews"

urlpatterns = [
    path("", views.inbox_view, name="inbox"),
    path("items/<int:pk>/", views.item_view, name="item"),
    path("items/<int:pk>/decide/", views.decide_view, name="decide"),
    path("items/<int:pk>/actions/<int:index>/preview/", views.preview_edit_view, name="preview"),
    path("runs/new/", views.start_run_view, name="start_run"),
    path("audit/", views.audit_view, name="audit"),
    path("cancel-run/<thread_id:thread_id>/", views.cancel_run_view, name="cancel_run"),
    path("threads/<thread_id:thread_id>/", views.thread_view, name="thread"),
]
