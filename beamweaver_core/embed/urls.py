"""BeamWeaver's URLs, to include where the host wants them::

    path("review/", include("beamweaver_core.embed.urls")),

gives the inbox at `/review/`, the review API at `/review/api/v1/`, the LangGraph
Platform protocol at `/review/lg/` and `/review/healthz`, `/review/readyz`,
`/review/metrics` (docs/production.md). Include it without a namespace of its own: the
pages and the rate limits know their views as `reviews:...`.
"""

from __future__ import annotations

from importlib import import_module

from django.urls import include, path

urlpatterns = [
    path("", include("beamweaver_core.observability.urls")),
]


def _protocol_urls() -> str | None:
    """The LangGraph Platform protocol's URL module, when this version has it."""
    name = "beamweaver_core.protocol.urls"
    try:
        import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            return None
        raise
    return name


# The /lg protocol (issue 15) is included once its package exists; when it is merged,
# this becomes a plain `path("lg/", include("beamweaver_core.protocol.urls"))`.
_protocol = _protocol_urls()
if _protocol is not None:
    urlpatterns.append(path("lg/", include(_protocol)))

urlpatterns.append(path("", include("reviews.urls")))
