"""What the protocol keeps about a run beyond the runtime's `Run`: the request as the
client sent it (assistant, metadata, stream modes, multitask strategy, webhook), so that
`runs.get`, `runs.list`, `join_stream` and the webhook answer as LangGraph's server does.
"""

from __future__ import annotations

from django.db import models

from beamweaver_core.models import Run
from beamweaver_core.webhook_urls import MAX_URL_CHARS


class ProtocolRun(models.Model):
    """A run started (or resumed) through `/lg`."""

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="protocol"
    )
    assistant_id = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)
    multitask_strategy = models.CharField(max_length=16, default="enqueue")
    kwargs = models.JSONField(
        default=dict,
        blank=True,
        help_text="The run request as given: input, command, config, context, stream_mode, "
        "stream_subgraphs, interrupt_before/after, on_completion, ...",
    )
    stateless = models.BooleanField(
        default=False, help_text="Started without a thread: its thread is the run's own."
    )
    on_completion = models.CharField(
        max_length=8,
        blank=True,
        default="",
        help_text="'delete': the thread goes when the run ends.",
    )
    webhook = models.CharField(max_length=MAX_URL_CHARS, blank=True, default="")
    webhook_sent_at = models.DateTimeField(null=True, blank=True)
    webhook_attempts = models.IntegerField(default=0)

    class Meta:
        db_table = "bw_protocol_run"
        indexes = [
            models.Index(
                fields=["webhook_sent_at"],
                name="bw_protocol_run_webhook_idx",
                condition=~models.Q(webhook=""),
            )
        ]

    def __str__(self) -> str:
        return f"/lg run {self.run_id}"


__all__ = ["ProtocolRun"]
