"""Django admin for threads, runs, checkpoints and pending writes.

Storage rows are read-only (the engine owns them) and shown as pretty-printed JSON with
secrets redacted. A thread's page shows its decoded state, what it waits for, its history
and its runs (`threads`); a checkpoint's page its decoded values (`storage`). Runs can be
cancelled (with `beamweaver_core.cancel_run`), and failed runs re-queued (with
`change_run`), from the list (`runs`): every action names the permission it needs, so a
staff user who may only view runs runs neither.
"""

from beamweaver_core.admin import runs, storage, threads
from beamweaver_core.admin.display import ReadOnlyAdmin, pretty_json

__all__ = ["ReadOnlyAdmin", "pretty_json", "runs", "storage", "threads"]
