"""`/lg`: the URL patterns of `protocol.routes` (and the OpenAPI document)."""

from __future__ import annotations

import re
from typing import Any

from django.urls import URLPattern, path

from beamweaver_core.protocol import openapi
from beamweaver_core.protocol.endpoint import aendpoint, endpoint
from beamweaver_core.protocol.routes import ROUTES

app_name = "lg"


def _django(route: str) -> str:
    return re.sub(r"\{(\w+)\}", r"<str:\1>", route.lstrip("/"))


def _patterns() -> list[URLPattern]:
    patterns = []
    for route in ROUTES:
        streams = {m: op for m, op in route.operations.items() if op.stream}
        view: Any
        if streams:
            ((method, op),) = streams.items()
            view = aendpoint(method, op.handler)
        else:
            view = endpoint(
                public=route.public, **{m: op.handler for m, op in route.operations.items()}
            )
        name = next(iter(route.operations.values())).operation_id
        patterns.append(path(_django(route.path), view, name=name))
    patterns.append(path("openapi.json", endpoint(public=True, GET=openapi.view), name="openapi"))
    return patterns


urlpatterns = _patterns()

__all__ = ["urlpatterns"]
