"""Project wiring: settings from the environment, system checks, the engine without Django."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from beamweaver_core.settings import database_from_url

ROOT = Path(__file__).resolve().parent.parent


def test_database_url_is_translated_into_a_django_database() -> None:
    db = database_from_url("postgresql://bw:s%40cret@db.example:6543/beam?sslmode=require")
    assert db == {
        "ENGINE": "beamweaver_core.postgres",
        "NAME": "beam",
        "USER": "bw",
        "PASSWORD": "s@cret",
        "HOST": "db.example",
        "PORT": "6543",
        "OPTIONS": {"sslmode": "require"},
    }


def test_a_non_postgres_database_url_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="BeamWeaver runs on PostgreSQL only"):
        database_from_url("sqlite:///db.sqlite3")


@pytest.mark.django_db
def test_the_tests_run_on_a_real_postgres() -> None:
    with connection.cursor() as cursor:
        cursor.execute("select version()")
        assert cursor.fetchone()[0].startswith("PostgreSQL")


def test_the_engine_imports_and_runs_without_django_configured() -> None:
    script = (
        "import sys\n"
        "from beamweaver_core.graph import Graph, START, END, interrupt\n"
        "from beamweaver_core.checkpoint import MemoryCheckpointer\n"
        "from beamweaver_core.agent import Message\n"
        "from beamweaver_core.llm import init_chat_model\n"
        "g = Graph().add_node('a', lambda s: {'x': interrupt('q')}).add_edge(START, 'a')"
        ".compile(checkpointer=MemoryCheckpointer())\n"
        "c = {'configurable': {'thread_id': 't'}}\n"
        "g.invoke({}, c)\n"
        "print(g.resume(41, c).state['x'] + 1)\n"
        "assert 'django.conf' not in sys.modules or not __import__('django.conf').conf.settings.configured\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "42"


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    test_command = readme.split("**Run the tests:**")[1].split("```sh\n")[1].split("\n```")[0]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_the_readme_engine_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    example = (
        readme.split("## The engine in thirty lines")[1].split("```python\n")[1].split("\n```")[0]
    )
    exec(compile(example, "README.md", "exec"), {})  # our own documentation


ENVIRONMENT_READ = re.compile(
    r'(?:environ\.get\(|environ\[|getenv\(|_env_(?:bool|list|json)\()\s*"([A-Z][A-Z0-9_]*)"'
)
NOT_FOR_USERS = {"BEAMWEAVER_TEST_DB": "the test suite's own database name"}


def test_every_environment_variable_the_project_reads_is_in_the_readme_table() -> None:
    """The README's table of environment variables is where an operator looks; a variable
    the project reads and the table does not list is hard to find (seventeen were not
    listed, until 2026-12-06)."""
    sources = [*(ROOT / "beamweaver_core").rglob("*.py"), *(ROOT / "reviews").rglob("*.py")]
    read = {name for path in sources for name in ENVIRONMENT_READ.findall(path.read_text())}
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| variable | default | meaning |") :]
    table = table[: table.index("\n\n")]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]*)`", table))
    assert "DATABASE_URL" in read and "BEAMWEAVER_DB_PREPARE" in read  # the pattern works
    assert sorted(read - listed - set(NOT_FOR_USERS)) == []
