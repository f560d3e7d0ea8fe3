"""The project's own system checks (ids `beamweaver.E0xx` / `beamweaver.W0xx`)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

from beamweaver_core import ratelimit
from beamweaver_core.accounts import mail_is_delivered
from beamweaver_core.conf import DEFAULTS, as_written
from beamweaver_core.runtime.mcp_servers import config_problems


@checks.register(checks.Tags.security, deploy=True)
def check_allowed_hosts(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """`*` in ALLOWED_HOSTS also disables the websocket Origin check: refuse it."""
    if any(host == "*" or host.startswith(".") for host in settings.ALLOWED_HOSTS):
        return [
            checks.Error(
                "ALLOWED_HOSTS contains a wildcard ('*' or a leading-dot pattern).",
                hint=(
                    "List every host name exactly. The websocket origin check trusts "
                    "ALLOWED_HOSTS, so with a wildcard a page on a domain rebound to this "
                    "server could open an authenticated websocket to the inbox."
                ),
                id="beamweaver.E001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def check_channel_layer(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    if backend.endswith("InMemoryChannelLayer"):
        return [
            checks.Error(
                "The channel layer is in-memory.",
                hint="Set REDIS_URL so that web processes and workers share one channel layer.",
                id="beamweaver.E002",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def check_email_backend(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """Mail that is printed (or written, or dropped) instead of delivered: notifications
    never arrive, and password reset is off (its links would be printed to the log)."""
    if mail_is_delivered():
        return []
    return [
        checks.Warning(
            f"EMAIL_BACKEND is {settings.EMAIL_BACKEND}: mail is not delivered, so review "
            "notifications never arrive and the password-reset pages answer 404 (a reset "
            "link printed to the log would let its readers take over the account).",
            hint=(
                "Set EMAIL_HOST (with EMAIL_HOST_USER and EMAIL_HOST_PASSWORD) so that mail "
                "goes out over SMTP; until then set passwords with `manage.py changepassword`."
            ),
            id="beamweaver.W040",
        )
    ]


@checks.register(checks.Tags.database, deploy=True)
def check_conn_max_age(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for alias, db in settings.DATABASES.items():
        if db.get("CONN_MAX_AGE", 0) != 0:
            errors.append(
                checks.Error(
                    f"DATABASES[{alias!r}]['CONN_MAX_AGE'] is not 0.",
                    hint="Under ASGI use the psycopg pool (OPTIONS['pool']) instead.",
                    id="beamweaver.E003",
                )
            )
    return errors


@checks.register()
def check_graph_registry(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    graphs = as_written("GRAPHS")
    if graphs is None:
        graphs = {}
    errors: list[checks.CheckMessage] = []
    if not isinstance(graphs, dict):
        return [
            checks.Error(
                "BEAMWEAVER['GRAPHS'] must be a dict of name -> 'module.path:attribute'.",
                id="beamweaver.E010",
            )
        ]
    for name, target in graphs.items():
        if not isinstance(target, str) or ":" not in target:
            errors.append(
                checks.Error(
                    f"BEAMWEAVER['GRAPHS'][{name!r}] = {target!r} is not 'module.path:attribute'.",
                    hint="Example: 'myapp.agents:RefundAgent'.",
                    id="beamweaver.E011",
                )
            )
    return errors


@checks.register()
def check_mcp_servers(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """`BEAMWEAVER["MCP_SERVERS"]` is well formed, and the `mcp` SDK is there to use it."""
    servers = as_written("MCP_SERVERS")
    if servers is None:
        servers = {}
    errors: list[checks.CheckMessage] = [
        checks.Error(
            problem,
            hint="See the MCP section of docs/tools-and-models.md for the options.",
            id="beamweaver.E030",
        )
        for problem in config_problems(servers)
    ]
    if servers and importlib.util.find_spec("mcp") is None:
        errors.append(
            checks.Error(
                "BEAMWEAVER['MCP_SERVERS'] declares MCP servers, but the `mcp` SDK is not "
                "installed.",
                hint="pip install 'beamweaver[mcp]'",
                id="beamweaver.E031",
            )
        )
    return errors


@checks.register()
def check_webhook_settings(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """The settings of the webhook URL rule (`beamweaver_core.webhook_urls`) are well formed:
    a malformed one would refuse every webhook, or (a string "false") allow what it should
    refuse."""
    errors: list[checks.CheckMessage] = []
    ports = as_written("WEBHOOK_PORTS")
    if ports is not None and not (
        isinstance(ports, list | tuple)
        and ports
        and all(type(p) is int and 0 < p < 65536 for p in ports)
    ):
        errors.append(
            checks.Error(
                f"BEAMWEAVER['WEBHOOK_PORTS'] is {ports!r}, not a list of port numbers.",
                hint="List the ports webhooks may go to, e.g. [80, 443] (the default).",
                id="beamweaver.E060",
            )
        )
    for key in ("WEBHOOK_PRIVATE_ADDRESSES", "WEBHOOK_HTTPS_ONLY"):
        found = as_written(key)
        if found is not None and not isinstance(found, bool):
            errors.append(
                checks.Error(
                    f"BEAMWEAVER[{key!r}] is {found!r}, not True or False.",
                    id="beamweaver.E061",
                )
            )
    hosts = as_written("LG_WEBHOOK_HOSTS")
    if hosts is not None and not (
        isinstance(hosts, list | tuple) and all(isinstance(h, str) and h for h in hosts)
    ):
        errors.append(
            checks.Error(
                f"BEAMWEAVER['LG_WEBHOOK_HOSTS'] is {hosts!r}, not a list of host names.",
                hint="List the hosts run webhooks may call: 'hooks.example.com' or "
                "'*.example.com' for its subdomains.",
                id="beamweaver.E062",
            )
        )
    return errors


@checks.register()
def check_rate_limits(
    app_configs: Sequence[AppConfig] | None, **kwargs: object
) -> list[checks.CheckMessage]:
    """Every rate limit reads as "count/seconds" (an empty one is its default); a malformed
    one would otherwise raise at each request or handshake it guards."""
    errors: list[checks.CheckMessage] = []
    for name in ratelimit.SETTINGS:
        raw = as_written(name)
        if not raw:
            continue
        try:
            ratelimit.Limit.parse(raw)
        except ValueError as exc:
            errors.append(
                checks.Error(
                    f"BEAMWEAVER[{name!r}]: {exc}",
                    hint=f"The default is {DEFAULTS[name]!r}.",
                    id="beamweaver.E070",
                )
            )
    return errors
