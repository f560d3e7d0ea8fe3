"""BeamWeaver's URLs, to include where the host wants them::

    path("review/", include("beamweaver_core.embed.urls")),

gives the inbox at `/review/`, the review API at `/review/api/v1/`, the LangGraph
Platform protocol at `/review/lg/` and `/review/healthz`, `/review/readyz`,
`/review/metrics` (docs/production.md). Include it without a namespace of its own: the
pages and the rate limits know their views as `reviews:...`.
"""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("", include("beamweaver_core.observability.urls")),
    path("lg/", include("beamweaver_core.protocol.urls")),
    path("", include("reviews.urls")),
]
