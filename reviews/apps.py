from __future__ import annotations

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from beamweaver_core.runtime.access import register_access
        from beamweaver_core.runtime.answers import register_answers
        from beamweaver_core.runtime.signals import run_finished, run_paused, worker_tick
        from reviews import checks, receivers, sweeper  # noqa: F401  (checks registers)
        from reviews.ports import ReviewsAccess, ReviewsAnswers

        run_paused.connect(receivers.on_run_paused, dispatch_uid="reviews.run_paused")
        run_finished.connect(receivers.on_run_finished, dispatch_uid="reviews.run_finished")
        worker_tick.connect(sweeper.on_worker_tick, dispatch_uid="reviews.sweeper")
        # The protocol under /lg authenticates, filters and decides through these.
        register_access(ReviewsAccess())
        register_answers(ReviewsAnswers())
