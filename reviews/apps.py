from __future__ import annotations

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from beamweaver_core.observability import collectors
        from beamweaver_core.runtime.access import register_access
        from beamweaver_core.runtime.answers import register_answers
        from beamweaver_core.runtime.signals import (
            run_finished,
            run_paused,
            state_written,
            worker_tick,
        )
        from reviews import checks, metrics, receivers, sweeper  # noqa: F401  (checks registers)
        from reviews.models import Decision
        from reviews.ports import ReviewsAccess, ReviewsAnswers

        collectors.register(metrics.pending_metrics)
        post_save.connect(
            metrics.on_decision_saved, sender=Decision, dispatch_uid="reviews.decision_metrics"
        )

        run_paused.connect(receivers.on_run_paused, dispatch_uid="reviews.run_paused")
        run_finished.connect(receivers.on_run_finished, dispatch_uid="reviews.run_finished")
        state_written.connect(receivers.on_state_written, dispatch_uid="reviews.state_written")
        worker_tick.connect(sweeper.on_worker_tick, dispatch_uid="reviews.sweeper")
        # The protocol under /lg authenticates, filters and decides through these.
        register_access(ReviewsAccess())
        register_answers(ReviewsAnswers())
