from __future__ import annotations

import django_stubs_ext
from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig

# The classes that django-stubs types as generic (`ModelAdmin[Run]`, `TextField[...]`) take
# type arguments at runtime too; done here, before any app's models or admin are imported.
django_stubs_ext.monkeypatch()


class BeamWeaverCoreConfig(AppConfig):
    name = "beamweaver_core"
    label = "beamweaver_core"
    verbose_name = "BeamWeaver"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db import connections

        from beamweaver_core import (
            checks,  # noqa: F401  (registers the system checks)
            ratelimit,  # noqa: F401  (counts failed logins)
        )
        from beamweaver_core.conf import conf
        from beamweaver_core.embed import checks as embed_checks  # noqa: F401
        from beamweaver_core.graph.threads import register_thread_cleanup
        from beamweaver_core.observability import checks as observability_checks  # noqa: F401
        from beamweaver_core.observability import tracing

        tracing.configure(record_arguments=conf.trace_tool_arguments is True)

        # Graph tasks run on pooled threads; one that used the database (a nested graph's
        # checkpoints, a tool) gives its connection back to the pool when it finishes.
        register_thread_cleanup(connections.close_all)


class BeamWeaverAdminConfig(AdminConfig):
    """`django.contrib.admin` with the project's site (permission before lookup)."""

    default_site = "beamweaver_core.admin_site.BeamWeaverAdminSite"
