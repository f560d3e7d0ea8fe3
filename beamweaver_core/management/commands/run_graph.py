"""`manage.py run_graph NAME --input JSON [--thread ID]`: run a registered graph now."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_run
from beamweaver_core.runtime.worker import WorkerSettings


class Command(BaseCommand):
    help = (
        "Start a run of a registered graph and execute it in this process; print its outcome "
        "(and the pending interrupts, if it paused) as JSON. Exit status: 0 completed or "
        "paused, 1 bad input, 2 the run failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "name", help=f"Registered graph name ({', '.join(registry.registered_names())})."
        )
        parser.add_argument(
            "--input",
            required=True,
            help="The input state as a JSON object, e.g. '{\"messages\": [...]}'.",
        )
        parser.add_argument(
            "--thread",
            default=None,
            help="Thread id (default: a new thread): 1 to 128 ASCII letters, digits, '-', '_', "
            "'.' or ':', starting with a letter or digit.",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="Print the outcome as JSON (the default; accepted like the other commands).",
        )

    def handle(self, *args: Any, name: str, input: str, thread: str | None, **options: Any) -> None:
        try:
            payload = json.loads(input)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--input is not valid JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise CommandError(f"--input must be a JSON object, got {type(payload).__name__}.")
        try:
            run = service.start_run(name, payload, thread_id=thread)
        except (BeamWeaverError, LookupError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        conf = WorkerSettings.from_django()
        claim = claim_run(run.id, "run_graph", conf.lease_seconds)
        if claim is None:
            raise CommandError(
                f"Run {run.id} was taken by a worker; follow it with `manage.py pending`."
            )
        execute(claim)
        run.refresh_from_db()
        self.stdout.write(json.dumps(describe(run), indent=2, sort_keys=True))
        if run.status == Run.Status.FAILED:
            raise CommandError(f"Run {run.id} failed.", returncode=2)


def describe(run: Run) -> dict[str, Any]:
    return {
        "run_id": str(run.id),
        "thread_id": run.thread_id,
        "graph": run.graph,
        "status": run.status,
        "result": run.result,
        "error": run.error or None,
    }
