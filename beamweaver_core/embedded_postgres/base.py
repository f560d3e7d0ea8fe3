"""Django database backend: PostgreSQL that starts the embedded server on first connect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beamweaver_core.embedded_postgres import ensure_server
from beamweaver_core.postgres import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        params["host"] = ensure_server(Path(self.settings_dict["PGDATA"]))
        return params
