# Leases (governance/leases.py): a server's "calls at once" and a tool's "run alone" counted
# across processes and hosts, each row expiring on the database's clock.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("nr_llm", "0014_mysql_case_sensitive_names"),
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
    ]
