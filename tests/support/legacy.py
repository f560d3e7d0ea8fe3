"""Data the current rules no longer let in, for tests of how the inbox shows it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from beamweaver_core.runtime import thread_ids


@contextmanager
def unchecked_thread_ids() -> Iterator[None]:
    """Let `start_run` take any thread id meanwhile, as it did before the thread id rule
    (`beamweaver_core.runtime.thread_ids`): such threads are still in databases, and the
    engine's checkpointer still writes any id it is given."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(thread_ids, "check", lambda thread_id: thread_id)
        yield
