"""The inbox's URLs (namespace `reviews`)."""

from __future__ import annotations

from django.urls import include, path, register_converter

from reviews import assignment_views, audit_views, fork_views, insight_views, thread_views, views
from reviews.converters import ThreadIdConverter

register_converter(ThreadIdConverter, "thread_id")

app_name = "reviews"

urlpatterns = [
    path("", views.inbox_view, name="inbox"),
    path("batch/", views.batch_view, name="batch"),
    path("items/<int:pk>/", views.item_view, name="item"),
    path("items/<int:pk>/decide/", views.decide_view, name="decide"),
    path("items/<int:pk>/reveal/", views.reveal_view, name="reveal"),
    path("items/<int:pk>/actions/<int:index>/preview/", views.preview_edit_view, name="preview"),
    path("items/<int:pk>/claim/", assignment_views.claim_view, name="claim"),
    path("items/<int:pk>/unclaim/", assignment_views.unclaim_view, name="unclaim"),
    path("items/<int:pk>/reassign/", assignment_views.reassign_view, name="reassign"),
    path("items/<int:pk>/extend/", assignment_views.extend_view, name="extend"),
    path("runs/new/", thread_views.start_run_view, name="start_run"),
    path("audit/", audit_views.audit_view, name="audit"),
    path("notifications/", views.preferences_view, name="preferences"),
    path("analytics/", insight_views.analytics_view, name="analytics"),
    path("simulate/", insight_views.simulate_view, name="simulate"),
    path("api/v1/", include("reviews.api.urls")),
    path("cancel-run/<thread_id:thread_id>/", thread_views.cancel_run_view, name="cancel_run"),
    path("threads/<thread_id:thread_id>/", thread_views.thread_view, name="thread"),
    path("fork/<str:checkpoint_id>/<thread_id:thread_id>/", fork_views.fork_view, name="fork"),
]
