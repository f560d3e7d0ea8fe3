"""Replaying or forking a thread is changing it: who may change the thread may, on the
thread page as over `/lg` (`reviews.thread_rights`), so the page's own permission
"Can replay or fork a thread from a past checkpoint" is gone, with its grants."""

from __future__ import annotations

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def delete_the_permission(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(
        content_type__app_label="beamweaver_core", codename="fork_thread"
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("beamweaver_core", "0010_thread_fork_permission"),
    ]

    operations = [
        migrations.AlterModelOptions(name="thread", options={"ordering": ["-updated_at"]}),
        migrations.RunPython(delete_the_permission, migrations.RunPython.noop),
    ]
