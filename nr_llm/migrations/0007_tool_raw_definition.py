from django.db import migrations, models


# Existing rows are brought along, not rewritten: their pins hold what the first schema rule kept
# (pinned_raw=False, set here for every row that exists now). The first import after the upgrade
# applies that rule to what the server sends: if it gives the pin, the server did not change the
# tool, and the row is re-pinned on the raw definition and stays enabled (catalogue._pin). Rows
# created later are pinned on what the server sent (the default True).
class Migration(migrations.Migration):
    dependencies = [
        ("nr_llm", "0006_tool_calls"),
    ]

    operations = [
        migrations.AddField(
            model_name="mcptool",
            name="raw_definition",
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
        migrations.AddField(
            model_name="mcptool",
            name="pinned_raw",
            field=models.BooleanField(default=False, editable=False),
        ),
        migrations.AlterField(
            model_name="mcptool",
            name="pinned_raw",
            field=models.BooleanField(default=True, editable=False),
        ),
    ]
