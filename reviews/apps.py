from __future__ import annotations

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from beamweaver_core.runtime.signals import run_finished, run_paused
        from reviews import receivers

        run_paused.connect(receivers.on_run_paused, dispatch_uid="reviews.run_paused")
        run_finished.connect(receivers.on_run_finished, dispatch_uid="reviews.run_finished")
