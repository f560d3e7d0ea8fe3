"""JSON typed on the command line (issue 13, finding 11; reliability.md, hostile corpus:
CLI JSON). `manage.py run_graph --input/--context` used plain `json.loads`: duplicate keys
were accepted (which value wins is up to the parser), nesting was bounded only by Python's
recursion limit, and NUL or lone surrogates reached Postgres. Now they go through the
parser the API and the forms use, and every refusal is a `CommandError` (exit status 1)
that says what to fix, with nothing started."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from beamweaver_core.models import Run
from tests.support.processes import ROOT

pytestmark = pytest.mark.django_db

HOSTILE = [
    ('{"amount": 1, "amount": 1000000}', "appears twice"),
    ("[" * 5000 + "]" * 5000, "nested more than"),
    ('{"a": ' + "[" * 100 + "]" * 100 + "}", "nested more than"),
    ('{"note": "a\\u0000b"}', "NUL"),
    ('{"note": "\\ud800"}', "lone surrogate"),
    ('{"amount": NaN}', "NaN is not valid JSON"),
    ('{"amount": 1e999}', "too large"),
    ('{"amount": ' + "9" * 500 + "}", "digits"),
    ('{"blob": "' + "x" * (300 * 1024) + '"}', "larger than"),
    ('{"amount": 1', "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
]


@pytest.mark.parametrize("option", ["--input", "--context"])
@pytest.mark.parametrize(("text", "message"), HOSTILE)
def test_run_graph_refuses_hostile_json_clearly(option: str, text: str, message: str) -> None:
    args = {"--input": "{}", option: text}

    with pytest.raises(CommandError) as refused:
        call_command(
            "run_graph",
            "approval",
            "--input",
            args["--input"],
            *(["--context", args["--context"]] if "--context" in args else []),
            stdout=io.StringIO(),
        )

    assert message in str(refused.value)
    assert str(refused.value).startswith(option)
    assert refused.value.returncode == 1
    assert not Run.objects.exists()


def test_a_5000_deep_input_is_exit_status_1_without_a_traceback() -> None:
    """The command as an operator runs it: a message on stderr, status 1."""
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "run_graph",
            "approval",
            "--input",
            "[" * 5000 + "]" * 5000,
        ],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "--input" in result.stderr and "nested more than 32 levels" in result.stderr


def test_plain_json_objects_still_start_the_run() -> None:
    out = io.StringIO()
    call_command(
        "run_graph",
        "approval",
        "--input",
        '{"amount": 7, "note": "Grüße ✓"}',
        "--context",
        '{"tenant": "acme"}',
        stdout=out,
    )

    run = Run.objects.get()
    assert run.input == {"amount": 7, "note": "Grüße ✓"} and run.context == {"tenant": "acme"}
