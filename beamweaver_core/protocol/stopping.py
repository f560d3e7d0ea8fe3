"""Cancelling or rolling back a run for a caller: the one place the protocol stops runs
(`runs.cancel`, the `interrupt` and `rollback` multitask strategies, a client leaving
with `on_disconnect="cancel"`), each under the inbox's rule of who may cancel a run
(`runtime.access.AccessPolicy.cancel_refusal`): cancelling also cancels the thread's
pending reviews."""

from __future__ import annotations

from typing import Any

from beamweaver_core.models import Run
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.runtime import service
from beamweaver_core.runtime.access import access
from beamweaver_core.runtime.rollback import rollback_run


def stop(user: Any, run: Run, action: str = "interrupt") -> None:
    """Cancel `run` (`action="rollback"`: roll it back) for `user`; 403 if they may not."""
    refusal = access().cancel_refusal(user, run)
    if refusal is not None:
        raise ProtocolError(403, refusal)
    if action == "rollback" and run.kind == Run.Kind.START:
        rollback_run(run.id, user=user)
    else:
        service.cancel_run(run.id, user=user)


__all__ = ["stop"]
