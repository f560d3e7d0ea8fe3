"""`manage.py run_graph NAME --input JSON [--context JSON] [--thread ID]`: run a registered
graph now."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from beamweaver_core import json_input
from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.context import MAX_CONTEXT_BYTES
from beamweaver_core.runtime.foreground import run_here, run_outcome

MAX_INPUT_BYTES = 256 * 1024
"""The largest `--input`, as the API's largest body."""


class Command(BaseCommand):
    help = (
        "Start a run of a registered graph and execute it in this process; print its outcome "
        "(and the pending interrupts, if it paused) as JSON. --input and --context are parsed "
        "as the review API parses a body: at most 256 KiB / 64 KiB and 32 levels deep, no key "
        "twice, no NUL, lone surrogate or NaN. Exit status: 0 completed or paused, 1 bad "
        "input, 2 the run failed."
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
            "--context",
            default=None,
            help="The run's context (the graph's runtime.context) as a JSON object, e.g. "
            '\'{"user_id": 7, "strict": true}\'; the thread\'s resumes reuse it.',
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

    def handle(
        self,
        *args: Any,
        name: str,
        input: str,
        context: str | None,
        thread: str | None,
        **options: Any,
    ) -> None:
        payload = _json_object("--input", input, MAX_INPUT_BYTES)
        run_context = None if context is None else _json_object("--context", context)
        try:
            run = service.start_run(name, payload, thread_id=thread, context=run_context)
        except (BeamWeaverError, LookupError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if not run_here(run.id, owner="run_graph"):
            raise CommandError(
                f"Run {run.id} was taken by a worker; follow it with `manage.py pending`."
            )
        run.refresh_from_db()
        self.stdout.write(json.dumps(run_outcome(run), indent=2, sort_keys=True))
        if run.status == Run.Status.FAILED:
            raise CommandError(f"Run {run.id} failed.", returncode=2)


def _json_object(option: str, text: str, max_bytes: int = MAX_CONTEXT_BYTES) -> dict[str, Any]:
    """`text` parsed as the API parses a body (size, depth and number limits, a key twice,
    NUL, lone surrogates, NaN refused); a `CommandError` (exit status 1) naming `option`."""
    try:
        value = json_input.parse_json(text, what=option, max_bytes=max_bytes)
    except json_input.PayloadError as exc:
        message = str(exc)
        raise CommandError(
            message if message.startswith(option) else f"{option}: {message}"
        ) from None
    if not isinstance(value, dict):
        raise CommandError(
            f"{option} must be a JSON object, got {type(value).__name__}: {text[:100]}"
        )
    return value
