"""Migration 0008: the audit log's HTTP statuses become outcome codes, in batches, and
back again when the migration is reversed."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("reviews", "0007_audit_forks")
AFTER = ("reviews", "0008_outcome_codes")
MIGRATION = importlib.import_module("reviews.migrations.0008_outcome_codes")

# (action, summary, status_code) as the service of the day wrote them -> the code.
STORED = [
    ("decided", "approve", 200, "accepted"),
    ("approved", "approve", 202, "approval_recorded"),
    ("refused", "already_decided", 409, "already_decided"),
    ("refused", "stale", 409, "stale"),
    ("refused", "self_approval", 403, "self_approval"),
    ("refused", "key_reused", 422, "key_reused"),
    ("refused", "not_found", 404, "not_found"),
    ("refused", "gone", 410, "gone"),
    ("refused", "something else", 422, "invalid"),  # not a code: the status says
    ("claimed", "claimed", None, ""),  # no decision request, no code
]


def _migrate(target: tuple[str, str]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return MigrationExecutor(connection).loader.project_state([target]).apps


@pytest.fixture
def before_0008() -> Iterator[Any]:
    apps = _migrate(BEFORE)
    try:
        yield apps
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_backfill_turns_stored_statuses_into_codes_in_batches(
    before_0008: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MIGRATION, "BATCH", 3)  # several batches over the ten rows
    old = before_0008.get_model("reviews", "AuditEvent")
    ids = [
        old.objects.create(action=action, summary=summary, status_code=status).pk
        for action, summary, status, _ in STORED
    ]

    new = _migrate(AFTER).get_model("reviews", "AuditEvent")

    rows = dict(new.objects.filter(pk__in=ids).values_list("pk", "outcome"))
    assert [rows[pk] for pk in ids] == [code for *_, code in STORED]
    assert "status_code" not in {f.name for f in new._meta.get_fields()}
    decision = new.objects.model._meta.apps.get_model("reviews", "Decision")
    assert "status_code" not in {f.name for f in decision._meta.get_fields()}


@pytest.mark.django_db(transaction=True)
def test_reversing_the_migration_fills_the_statuses_back_in(
    before_0008: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MIGRATION, "BATCH", 4)
    old = before_0008.get_model("reviews", "AuditEvent")
    ids = [
        old.objects.create(action=action, summary=summary, status_code=status).pk
        for action, summary, status, _ in STORED
    ]
    _migrate(AFTER)

    back = _migrate(BEFORE).get_model("reviews", "AuditEvent")

    rows = dict(back.objects.filter(pk__in=ids).values_list("pk", "status_code"))
    assert [rows[pk] for pk in ids] == [status for _, _, status, _ in STORED]
