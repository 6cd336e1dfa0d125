"""A fresh site built from the wheel reaches its first tool call following only the README's
quickstart: ``django-admin startproject``, the app from the built wheel (not this checkout), the
quickstart's commands and its view, as printed, against the official SDK server.

The model is the one part that cannot run here: an ``openai`` module in the site stands in for
the client, asks for the echo tool, then answers with what the tool message told it. Building the
wheel takes a few seconds (pip fetches setuptools for the build unless it has it cached);
``-m "not wheel"`` leaves this out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.peers import ROOT, sdk_server

pytestmark = [pytest.mark.wheel, pytest.mark.e2e, pytest.mark.timeout(300)]

OPENAI_STAND_IN = '''
"""Stands in for the openai client: a tool call first, then the tool's answer as the reply."""
import json

NOT_GIVEN = object()
SENT = []


class _Message:
    def __init__(self, content, tool_calls=None):
        self.role, self.content, self.tool_calls = "assistant", content, tool_calls

    def model_dump(self, include=None, exclude_none=False):
        data = {"role": self.role, "content": self.content, "tool_calls": self.tool_calls}
        kept = {k: v for k, v in data.items() if include is None or k in include}
        return {k: v for k, v in kept.items() if v is not None or not exclude_none}


class _Completions:
    def create(self, *, model, messages, tools):
        SENT.append([dict(m) for m in messages])
        answered = [m for m in messages if m.get("role") == "tool"]
        if answered:
            message = _Message(" | ".join(f"{m['tool_call_id']}={m['content']}" for m in answered))
        else:
            offered = [tool["function"]["name"] for tool in tools]
            arguments = json.dumps({"text": "hello from the wheel"})
            function = {"name": offered[0], "arguments": arguments}
            call = {"id": "call_1", "type": "function", "function": function}
            message = _Message(None, [call])
        return type("Reply", (), {"choices": [type("Choice", (), {"message": message})()]})()


class OpenAI:
    def __init__(self):
        self.chat = type("Chat", (), {"completions": _Completions()})()
'''

ASK = """
import django, json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "mysite.settings"
django.setup()
import nr_llm
from django.test import Client
response = Client(HTTP_HOST="127.0.0.1").post("/converse/", {"question": "Echo something"})
from nr_llm.models import ToolCall
print(json.dumps({"status": response.status_code, "body": response.json(), "nr_llm": nr_llm.__file__,
                  "rows": [[r.tool_name, r.status] for r in ToolCall.objects.all()]}))
"""


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def _quickstart_commands() -> list[list[str]]:
    """The quickstart's ``python manage.py`` lines, in order."""
    section = _readme().split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        lines += [shlex.split(line) for line in block.splitlines() if line.startswith("python manage.py ")]
    return lines


def _view() -> str:
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", _readme(), re.DOTALL) if "def converse(" in b]
    return str(block)


def test_a_fresh_site_from_the_wheel_reaches_its_first_tool_call(tmp_path: Path) -> None:
    dist, target, site = tmp_path / "dist", tmp_path / "packages", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # The README's install lines: build the wheel in the checkout, install it. Its dependencies
    # are this interpreter's already; the wheel goes first on the path, before this checkout's.
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dist), str(ROOT)], check=True, timeout=240)
    (wheel,) = dist.glob("nr_llm-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, timeout=120
    )
    site.mkdir()
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTEST", "DJANGO", "DATABASE_URL", "ENV_FILE"))
        },
        "PYTHONPATH": os.pathsep.join([str(target), str(site)]),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(args, cwd=site, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    run(sys.executable, "-m", "django", "startproject", "mysite", ".")
    settings = site / "mysite" / "settings.py"
    # Step 1, and the README's note for a server on localhost.
    settings.write_text(
        settings.read_text().replace("INSTALLED_APPS = [", 'INSTALLED_APPS = [\n    "nr_llm",', 1)
        + "\nNR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True\n"
    )
    run(sys.executable, "manage.py", "migrate", "-v", "0")
    commands = _quickstart_commands()
    assert [c[2] for c in commands] == ["mcp_server", "mcp_import", "mcp_server"]
    with sdk_server("--stateless") as url:
        for command in commands:
            # The quickstart's server is docs.example; this one serves the SDK's echo tool.
            line = [url if part == "https://docs.example/mcp" else part for part in command[1:]]
            line = ["mcp_demo_echo" if part == "mcp_docs_search" else part for part in line]
            line = ["demo" if part == "docs" else part for part in line]
            run(sys.executable, *line)
        # Step 5: the view as printed, routed.
        (site / "views.py").write_text(_view())
        (site / "openai.py").write_text(OPENAI_STAND_IN)
        urls = site / "mysite" / "urls.py"
        urls.write_text(
            urls.read_text().replace(
                "urlpatterns = [",
                'import views\n\nurlpatterns = [\n    path("converse/", views.converse),',
                1,
            )
        )
        done = run(sys.executable, "-c", ASK)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert str(target) in answer["nr_llm"]  # the wheel's app, not this checkout's
    assert answer["status"] == 200
    assert answer["body"] == {"answer": "call_1=hello from the wheel", "waiting": []}
    assert answer["rows"] == [["mcp_demo_echo", "succeeded"]]
