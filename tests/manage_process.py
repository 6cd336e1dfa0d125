"""``manage.py`` in a process of its own, as an operator runs it: real exit codes and stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.peers import ROOT

Manage = Callable[..., subprocess.CompletedProcess[str]]

#: One tool on a server that requires approval (the default), seeded through the site's shell.
SEED_HELD_TOOL = (
    "from nr_llm.models import McpServer, McpTool; "
    "s = McpServer.objects.create(identifier='held', name='Held', url='https://mcp.example/mcp', "
    "data_class='publicContent', enabled=True); "
    "McpTool.objects.create(server=s, tool_name='mcp_held_echo', remote_name='echo', enabled=True)"
)


def manage_in(tmp_path: Path, **environment: str) -> Manage:
    """A ``manage(*args)`` for the demo project on a migrated SQLite file of its own; the test
    run's settings module and ENV_FILE are not inherited."""
    env = {
        **os.environ,
        "DEBUG": "true",
        "SECRET_KEY": "tests-only-secret-key-0123456789abcdef",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **environment,
    }
    for name in ("DJANGO_SETTINGS_MODULE", "ENV_FILE"):
        env.pop(name, None)

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    migrated = manage("migrate", "-v0")
    assert migrated.returncode == 0, migrated.stderr
    return manage
