"""The README's test double ("Testing your agent loop without an MCP server") runs as written,
in a pytest of its own as a site would run it, and keeps the approval rule it describes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.peers import ROOT

# What the README says below the block, as a site would write it next to the README's test.
APPROVAL_TEST = """

@pytest.mark.django_db(transaction=True)
def test_an_approval_server_holds_the_call_until_it_is_approved_and_resumed(orders_server):
    from django.contrib.auth.models import User

    McpServer.objects.filter(identifier="orders").update(requires_approval=True)
    held = tools.execute("mcp_orders_lookup_order", {"id": "7"}, actor="test")
    assert held.status == "awaiting_approval" and orders_server.calls == []
    tools.approve(held.call_id, User.objects.create_superuser("approver"))
    result = tools.resume(held.call_id)
    assert (result.status, orders_server.calls) == ("succeeded", [("lookup_order", {"id": "7"})])
"""


def _readme_double() -> str:
    readme = (ROOT / "README.md").read_text()
    (block,) = [
        block
        for block in re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
        if "class FakeMcpServer" in block
    ]
    return str(block)


def test_the_readmes_test_double_runs_as_written_in_a_sites_pytest(tmp_path: Path) -> None:
    """The block, saved as a site's test module and run by pytest with pytest-django (warnings as
    errors), passes; so does the approval path the README describes under it. No MCP server runs."""
    (tmp_path / "test_agent_loop.py").write_text(_readme_double() + APPROVAL_TEST)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nDJANGO_SETTINGS_MODULE = tests.settings\nfilterwarnings = error\n"
    )
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith("PYTEST")},
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'site.sqlite3'}",
    }
    env.pop("ENV_FILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
