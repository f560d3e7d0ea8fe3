from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("beamweaver_core", "0009_run_options_waiting"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="thread",
            options={
                "ordering": ["-updated_at"],
                "permissions": [
                    ("fork_thread", "Can replay or fork a thread from a past checkpoint")
                ],
            },
        ),
    ]
