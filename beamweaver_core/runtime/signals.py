"""Signals the runtime sends, so other apps (the review inbox) react without the runtime
depending on them. Receivers run inside the runtime's transaction."""

from __future__ import annotations

from django.dispatch import Signal

run_paused = Signal()
"""A run paused: `run` (the Run), `interrupts` (tuple of `Interrupt`, all pending)."""

run_finished = Signal()
"""A run ended `succeeded`, `failed` or `cancelled`: `run` (the Run)."""

state_written = Signal()
"""A thread's state was written outside a run (`update_state`, a fork's edit): `thread`
(the Thread), `interrupts` (the questions still pending after the write), `user` (who wrote
it, or `None`)."""

worker_tick = Signal()
"""Sent by every worker loop about every lease third, outside any transaction, for
periodic maintenance (the review sweeper). Receivers must be quick, idempotent and safe to
run in several workers at once; their exceptions are logged, never raised."""

__all__ = ["run_finished", "run_paused", "state_written", "worker_tick"]
