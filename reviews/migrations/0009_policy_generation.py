"""The generation of the review policies: one row that Postgres rewrites, in the same
transaction, whenever something a compiled policy depends on changes, so that every
process can keep its compiled policies until the row changes (`reviews.policy_cache`).

Triggers rather than Django signals, because policies also change without signals: a
queryset `update()` (an admin bulk action), raw SQL, a fixture, a data migration, a
group or user renamed (a policy names its groups and users). Each bump takes a value of
a sequence, which a rollback never hands out again, so a generation a process saw inside
a transaction that was rolled back can never match a later, committed one. The table is
not a model: `flush`, `dumpdata` and `loaddata` must not write it.
"""

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import migrations

BUMP = """
CREATE SEQUENCE bw_review_policy_generation_seq;
CREATE TABLE bw_review_policy_generation (
    id smallint PRIMARY KEY CHECK (id = 1),
    generation bigint NOT NULL
);
INSERT INTO bw_review_policy_generation VALUES (1, nextval('bw_review_policy_generation_seq'));
CREATE FUNCTION bw_review_policy_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An upsert: the row is back after a TRUNCATE of every table (a test's flush).
    INSERT INTO bw_review_policy_generation (id, generation)
    VALUES (1, nextval('bw_review_policy_generation_seq'))
    ON CONFLICT (id) DO UPDATE SET generation = EXCLUDED.generation;
    RETURN NULL;
END $$;
"""

UNBUMP = """
DROP FUNCTION bw_review_policy_bump() CASCADE;
DROP TABLE bw_review_policy_generation;
DROP SEQUENCE bw_review_policy_generation_seq;
"""


def _every_change(table: str) -> str:
    return (
        f"CREATE TRIGGER bw_review_policy_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        f'ON "{table}" FOR EACH STATEMENT EXECUTE FUNCTION bw_review_policy_bump()'
    )


def _renamed(table: str, column: str) -> str:
    return (
        f'CREATE TRIGGER bw_review_policy_bump AFTER UPDATE OF "{column}" ON "{table}" '
        f'FOR EACH ROW WHEN (OLD."{column}" IS DISTINCT FROM NEW."{column}") '
        f"EXECUTE FUNCTION bw_review_policy_bump()"
    )


def create_triggers(apps: Any, schema_editor: Any) -> None:
    policy = apps.get_model("reviews", "ReviewPolicy")
    group = apps.get_model("auth", "Group")
    user = apps.get_model(settings.AUTH_USER_MODEL)
    # A historical model has no USERNAME_FIELD: the model of today names it.
    username = user._meta.get_field(get_user_model().USERNAME_FIELD).column
    tables = [policy._meta.db_table] + [
        policy._meta.get_field(name).remote_field.through._meta.db_table
        for name in ("reviewer_groups", "allowed_responders")
    ]
    for table in tables:
        schema_editor.execute(_every_change(table))
    schema_editor.execute(_renamed(group._meta.db_table, "name"))
    schema_editor.execute(_renamed(user._meta.db_table, username))


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0008_outcome_codes"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(BUMP, UNBUMP),
        # Reversed by UNBUMP's CASCADE, which drops the triggers with their function.
        migrations.RunPython(create_triggers, migrations.RunPython.noop),
    ]
