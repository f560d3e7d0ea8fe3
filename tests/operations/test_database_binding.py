"""The project's database settings: Django's queries bind their parameters on the server
(psycopg's own cursor and C dumpers, not Django's default quoting into the SQL text in
Python), and that prepares no statement the settings did not ask for, so a pooler in
transaction mode keeps working."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from beamweaver_core.models import Thread

pytestmark = pytest.mark.django_db


def _prepared() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def test_django_binds_parameters_on_the_server() -> None:
    with connection.cursor() as cursor:
        assert not isinstance(cursor.cursor, psycopg.ClientCursor)
        cursor.execute("SELECT %s::text, %s::int", ["it's; --", 7])
        assert cursor.fetchone() == ("it's; --", 7)


def test_binding_on_the_server_prepares_nothing_by_itself() -> None:
    before = _prepared()
    for _ in range(10):  # past psycopg's default threshold of 5 executions
        assert not Thread.objects.filter(id="no-such-thread").exists()
    assert _prepared() == before
