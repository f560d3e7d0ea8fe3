"""Watching BeamWeaver run: metrics, traces, health, structured logs (docs/production.md).

Layers: `context` and `instruments` import nothing of the project, `tracing` only the
Django-free redaction policy (the engine uses `tracing`); `logs` and `asgi` use that
policy too; `runs`, `pool` and `collectors` are runtime-level (the runtime's tables and Django's connections);
`access`, `health`, `views`, `urls` and `checks` are project wiring. The review inbox
adds its own metrics (`reviews.metrics`).
"""
