"""`/healthz`, `/readyz`, `/metrics` (no namespace: include them where probes look)."""

from __future__ import annotations

from django.urls import path

from beamweaver_core.observability import views

urlpatterns = [
    path("healthz", views.healthz_view, name="beamweaver_healthz"),
    path("readyz", views.readyz_view, name="beamweaver_readyz"),
    path("metrics", views.metrics_view, name="beamweaver_metrics"),
]
