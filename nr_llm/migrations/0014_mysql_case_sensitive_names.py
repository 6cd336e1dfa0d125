# MySQL and MariaDB compare text by the column's collation, and their default ones
# (utf8mb4_unicode_ci, utf8mb4_general_ci) ignore case: "Search" and "search" would be one tool
# name to the unique index and to every lookup, where MCP and every function-calling API tell
# them apart. The columns that hold a tool's names compare bytes (utf8mb4_bin) there. Other
# databases compare text exactly already: nothing runs on them.

from typing import Any

from django.db import migrations

#: (table, column, type): the names a call is looked up and recorded by.
COLUMNS = [
    ("nr_llm_mcptool", "tool_name", "varchar(64)"),
    ("nr_llm_mcptool", "remote_name", "varchar(255)"),
    ("nr_llm_toolcall", "tool_name", "varchar(200)"),
    ("nr_llm_toolcall", "remote_name", "varchar(255)"),
]


def _collate(collation: str) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "mysql":
            return
        quote = schema_editor.quote_name
        for table, column, kind in COLUMNS:
            schema_editor.execute(
                f"ALTER TABLE {quote(table)} MODIFY {quote(column)} {kind} "
                f"CHARACTER SET utf8mb4 COLLATE {collation} NOT NULL"
            )

    return run


class Migration(migrations.Migration):
    # MySQL cannot roll DDL back, and Django refuses DDL inside a transaction there.
    atomic = False

    dependencies = [("nr_llm", "0013_resources_prompts")]

    operations = [
        migrations.RunPython(_collate("utf8mb4_bin"), _collate("utf8mb4_unicode_ci"), elidable=False),
    ]
