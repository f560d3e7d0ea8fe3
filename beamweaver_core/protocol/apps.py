"""The protocol's Django app: its run records and its receivers of the runtime's signals
(run webhooks, cleaning up stateless runs' threads)."""

from __future__ import annotations

from django.apps import AppConfig


class ProtocolConfig(AppConfig):
    name = "beamweaver_core.protocol"
    label = "beamweaver_protocol"
    verbose_name = "LangGraph Platform protocol"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from beamweaver_core.protocol import receivers
        from beamweaver_core.runtime.signals import run_finished, run_paused, worker_tick

        run_paused.connect(receivers.on_run_ended, dispatch_uid="protocol.run_paused")
        run_finished.connect(receivers.on_run_ended, dispatch_uid="protocol.run_finished")
        worker_tick.connect(receivers.on_worker_tick, dispatch_uid="protocol.worker_tick")
