# Leases (governance/leases.py): a server's "calls at once" and a tool's "run alone" counted
# across processes and hosts, each row expiring on the database's clock.

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("nr_llm", "0016_grant_configuration"),
    ]

    operations = [
        migrations.CreateModel(
            name="CallLease",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("tool_name", models.CharField(max_length=64, verbose_name="tool")),
                ("alone", models.BooleanField(default=False)),
                ("expires_at", models.DateTimeField()),
                ("holder", models.CharField(blank=True, max_length=200)),
                (
                    "server",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="nr_llm.mcpserver"
                    ),
                ),
            ],
            options={
                "verbose_name": "call lease",
                "indexes": [models.Index(fields=["server", "expires_at"], name="nr_llm_calllease_server")],
            },
        ),
        migrations.AlterField(
            model_name="mcpserver",
            name="max_concurrent_calls",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Calls to this server running at the same time, across the whole site (all turns and processes); empty: no site-wide cap, and a turn's own bound NR_LLM_TOOL_CONCURRENCY_PER_SERVER.",
                null=True,
                validators=[django.core.validators.MinValueValidator(1)],
                verbose_name="calls at once",
            ),
        ),
        migrations.AlterField(
            model_name="mcpserver",
            name="run_writes_alone",
            field=models.BooleanField(
                default=False,
                help_text="Tools this server does not annotate read-only (readOnlyHint) run after a turn's other calls, one at a time, and across the site never beside another call of this server.",
                verbose_name="run tools that may write alone",
            ),
        ),
        migrations.AlterField(
            model_name="mcptool",
            name="run_alone",
            field=models.BooleanField(
                default=False,
                help_text="Run after a turn's other calls, one at a time: for a tool that must not run beside others. Across the site it never runs beside itself, nor beside any call of its server when the server has calls at once set or runs its writes alone.",
            ),
        ),
    ]
