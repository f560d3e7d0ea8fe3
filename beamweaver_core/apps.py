from __future__ import annotations

from django.apps import AppConfig


class BeamWeaverCoreConfig(AppConfig):
    name = "beamweaver_core"
    label = "beamweaver_core"
    verbose_name = "BeamWeaver"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from beamweaver_core import checks  # noqa: F401  (registers the system checks)
