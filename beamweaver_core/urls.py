from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("beamweaver_core.accounts")),
    path("", include("beamweaver_core.embed.urls")),
]

handler404 = "beamweaver_core.error_views.not_found"
handler500 = "beamweaver_core.error_views.server_error"
