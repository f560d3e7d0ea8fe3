"""Django database backend: PostgreSQL with a pool that survives killed backends
(`ENGINE = "beamweaver_core.postgres"`; see `base`)."""
