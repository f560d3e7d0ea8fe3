from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("beamweaver_core.embed.urls")),
]

handler500 = "beamweaver_core.errors.server_error"
