"""ASGI entry point: HTTP through Django (`asgi_handler`: a synchronous view's request in
one trip to its thread), websockets through Channels (origin-checked and
authenticated), and the `beamweaver.runs` worker channel for `manage.py runworker`; the
same application a host project builds (`beamweaver_core.embed.asgi`).

With no Redis (one process), the web process also runs the workers.
"""

from __future__ import annotations

import os

from beamweaver_core.asgi_handler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "beamweaver_core.settings")
django_asgi_app = get_asgi_application()

from beamweaver_core.embed.asgi import beamweaver_application  # noqa: E402

application = beamweaver_application(django_asgi_app)
