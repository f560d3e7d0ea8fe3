"""A change of the review policies locks the generation row before any policy row.

Migration 0009 bumped the generation AFTER each statement on the policy tables: a
transaction locked the policy rows it changed, then the generation row. Two transactions
changing two policies in opposite orders could then deadlock (the first holds policy A and
the generation row and waits for policy B; the second holds B and waits for the
generation row), and Postgres aborted one of them: an admin's save or a bulk action
failed with an error page. BEFORE each statement, every transaction that changes the
policy tables takes the generation row first and keeps it to its end: such transactions
wait for one another at their first change instead of holding a policy row each. A
rename of a group or a user still bumps after its row (a row trigger with a condition:
statement triggers have none), as before.
"""

from typing import Any

from django.db import migrations


def _tables(apps: Any) -> list[str]:
    policy = apps.get_model("reviews", "ReviewPolicy")
    return [policy._meta.db_table] + [
        policy._meta.get_field(name).remote_field.through._meta.db_table
        for name in ("reviewer_groups", "allowed_responders")
    ]


def _recreate(when: str) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        for table in _tables(apps):
            schema_editor.execute(f'DROP TRIGGER bw_review_policy_bump ON "{table}"')
            schema_editor.execute(
                f"CREATE TRIGGER bw_review_policy_bump {when} INSERT OR UPDATE OR DELETE OR "
                f'TRUNCATE ON "{table}" FOR EACH STATEMENT EXECUTE FUNCTION '
                "bw_review_policy_bump()"
            )

    return run


class Migration(migrations.Migration):
    dependencies = [("reviews", "0009_policy_generation")]

    operations = [migrations.RunPython(_recreate("BEFORE"), _recreate("AFTER"))]
