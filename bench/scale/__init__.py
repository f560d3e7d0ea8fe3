"""Scale: the big database (issue 16, point 5) and what is measured on it.

`fixture` builds and keeps it (a million checkpointed threads, a hundred thousand pending
review items: `sample` writes threads through the runtime, `bulk` clones them with
`recipe`'s tokens); `plans` EXPLAINs the inbox's and the runtime's queries there; the
measurements run as `python -m bench --only scale` (`bench.workloads.scale`).
"""
