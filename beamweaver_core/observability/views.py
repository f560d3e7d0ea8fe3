"""`/healthz`, `/readyz` and `/metrics`: for load balancers, orchestrators and Prometheus.

`/healthz` answers 200 whenever the process serves requests, touching nothing else.
`/readyz` answers 200 when the database and the channel layer answer and every
migration is applied, else 503 naming the failed checks (the reasons go to the log).
Neither needs a login. `/metrics` answers what `access` allows; in multiprocess mode
(`PROMETHEUS_MULTIPROC_DIR`) it adds up every process of the machine.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from beamweaver_core.observability import access, health, instruments, pool
from beamweaver_core.observability.collectors import DatabaseCollector

logger = logging.getLogger(__name__)


@never_cache
def healthz_view(request: HttpRequest) -> HttpResponse:
    """The process is alive."""
    return JsonResponse({"status": "ok"})


def _readiness() -> dict[str, str | None]:
    return {"database": health.database_problem(), "migrations": health.migrations_problem()}


@never_cache
async def readyz_view(request: HttpRequest) -> HttpResponse:
    """The process can do its work: database, channel layer, migrations."""
    problems = await sync_to_async(_readiness)()
    problems["channel_layer"] = await health.channel_layer_problem()
    failed = sorted(name for name, problem in problems.items() if problem)
    for name in failed:
        logger.warning("Not ready: %s: %s", name, problems[name])
    checks = {name: ("failed" if problems[name] else "ok") for name in sorted(problems)}
    return JsonResponse(
        {"status": "failed" if failed else "ok", "checks": checks}, status=503 if failed else 200
    )


class _ThisProcess:
    """The default registry's metrics (this process only), as one collector."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def registry() -> CollectorRegistry:
    """What one scrape reads: the counted metrics (every process's in multiprocess
    mode) and those read from the database."""
    combined = CollectorRegistry(auto_describe=False)
    if instruments.MULTIPROCESS:
        from prometheus_client import multiprocess

        # prometheus_client leaves this constructor unannotated.
        multiprocess.MultiProcessCollector(combined)  # type: ignore[no-untyped-call]
    else:
        combined.register(_ThisProcess())
    combined.register(DatabaseCollector())
    return combined


@never_cache
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus's text format, for the clients `access` allows."""
    refused = access.refusal(request)
    if refused is not None:
        response = HttpResponse(
            refused.message, status=refused.status, content_type="text/plain; charset=utf-8"
        )
        if refused.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    pool.sample()
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


__all__ = ["healthz_view", "metrics_view", "readyz_view", "registry"]
