"""Audit events and decisions keep the outcome code (`reviews.outcomes.Code`), not the HTTP
status the inbox answered with: the statuses belong to the edge (`reviews.http_statuses`).

`AuditEvent.outcome` is added and filled from what each event stored, in batches (the
audit log grows without bound, so no single statement rewrites it): a decided event was
`accepted`, an approval of several `approval_recorded`, and a refusal's `summary` always
held its code (`reviews.outcomes.refuse`); a refusal with another summary falls back on
its status. `Decision.outcome` already held the code (every decision is `accepted`, the
200 its `status_code` repeated), so both `status_code` columns go. Reversing fills the
statuses back in from the codes.
"""

from typing import Any

from django.db import migrations, models, transaction
from django.db.models import Case, F, Value, When

BATCH = 2000

# Frozen copies of the tables of their day: a migration must not follow later edits.
REFUSAL_CODES = (
    "not_found",
    "key_reused",
    "already_decided",
    "gone",
    "not_allowed",
    "self_approval",
    "claimed",
    "stale",
    "payload_changed",
    "already_approved",
    "invalid",
    "busy",
)
CODE_OF_STATUS = {
    403: "not_allowed",
    404: "not_found",
    409: "conflict",
    410: "gone",
    422: "invalid",
}
STATUS_OF_CODE = {  # every other code of its day was a 409
    "accepted": 200,
    "approval_recorded": 202,
    "not_allowed": 403,
    "self_approval": 403,
    "not_found": 404,
    "gone": 410,
    "key_reused": 422,
    "invalid": 422,
}


def _in_batches(events: Any, value: Any) -> None:
    """`events.update(<field>=value)`, `BATCH` rows per transaction, in id order."""
    last = 0
    while True:
        with transaction.atomic(using=events.db):
            ids = list(
                events.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:BATCH]
            )
            if not ids:
                return
            events.model.objects.using(events.db).filter(pk__in=ids).update(**value)
        last = ids[-1]


def codes_from_statuses(apps: Any, schema_editor: Any) -> None:
    AuditEvent = apps.get_model("reviews", "AuditEvent")
    events = AuditEvent.objects.using(schema_editor.connection.alias).filter(
        status_code__isnull=False, outcome=""
    )
    code = Case(
        When(action="decided", then=Value("accepted")),
        When(action="approved", then=Value("approval_recorded")),
        When(action="refused", summary__in=REFUSAL_CODES, then=F("summary")),
        *(When(status_code=s, then=Value(c)) for s, c in CODE_OF_STATUS.items()),
        When(status_code=200, then=Value("accepted")),
        When(status_code=202, then=Value("approval_recorded")),
        default=Value(""),
    )
    _in_batches(events, {"outcome": code})


def statuses_from_codes(apps: Any, schema_editor: Any) -> None:
    AuditEvent = apps.get_model("reviews", "AuditEvent")
    events = AuditEvent.objects.using(schema_editor.connection.alias).exclude(outcome="")
    status = Case(
        *(When(outcome=c, then=Value(s)) for c, s in STATUS_OF_CODE.items()),
        default=Value(409),
        output_field=models.PositiveSmallIntegerField(),
    )
    _in_batches(events.filter(status_code__isnull=True), {"status_code": status})


class Migration(migrations.Migration):
    # Each batch of the backfill commits on its own.
    atomic = False

    dependencies = [
        ("reviews", "0007_audit_forks"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="outcome",
            field=models.CharField(
                blank=True,
                default="",
                help_text="The outcome code of a decision request (reviews.outcomes.Code); "
                "empty for other events.",
                max_length=32,
            ),
        ),
        migrations.AlterField(
            model_name="decision",
            name="outcome",
            field=models.CharField(
                default="accepted",
                help_text="The outcome code (reviews.outcomes.Code).",
                max_length=32,
            ),
        ),
        migrations.RunPython(codes_from_statuses, statuses_from_codes),
        migrations.RemoveField(model_name="auditevent", name="status_code"),
        migrations.RemoveField(model_name="decision", name="status_code"),
    ]
