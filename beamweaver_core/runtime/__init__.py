"""Durable runs: the queue in Postgres, leases and fencing, workers, live events.

Use the service functions (`start_run`, `resume_thread`, `cancel_run`, `requeue_run`) from
views, commands and tests; run workers with `manage.py beamweaver_worker` (or let the web
process run them when there is no Redis).
"""
