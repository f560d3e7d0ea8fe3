"""Adding BeamWeaver to an existing Django project (docs/production.md, "Embedding").

Three pieces, one per file a Django project already has:

- settings.py: `configure(globals())` after the host's own settings
  (`beamweaver_core.embed.settings`);
- urls.py: `path("review/", include("beamweaver_core.embed.urls"))`;
- asgi.py: `application = beamweaver_application(get_asgi_application())`
  (`beamweaver_core.embed.asgi`).

This package is project wiring: it may import every layer below it.
"""
