"""A checkpoint keeps the writes of the step that produced it, so the history can show
each task's `result` (`checkpoint.task_writes`). A nullable column: adding it rewrites no
row, and checkpoints written before it show no results for their parent's tasks."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("beamweaver_core", "0011_remove_thread_fork_permission"),
    ]

    operations = [
        migrations.AddField(
            model_name="checkpoint",
            name="task_writes",
            field=models.TextField(
                blank=True,
                help_text="JSON: the writes of the parent's tasks whose step produced this checkpoint, by task id (checkpoint.task_writes).",
                null=True,
            ),
        ),
    ]
