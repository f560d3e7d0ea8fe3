"""Watching BeamWeaver run: metrics, traces, health, structured logs (docs/production.md).

Layers: `context`, `tracing`, `instruments` and `logs` import nothing of the project
(the engine uses `tracing`); `runs`, `pool` and `collectors` are runtime-level (the
runtime's tables and Django's connections); `asgi`, `health`, `views`, `urls` and
`checks` are project wiring.
"""
