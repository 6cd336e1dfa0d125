"""The running demo as a new user meets it: the banner's manage.py line, one console line per request.

One `make demo` for the module, on free ports, with its var folder in a temporary directory.
"""

from __future__ import annotations

import http.client
import os
import sqlite3
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import environ
import pytest

from tests.peers import ROOT

from .demo_process import Demo, running_demo

# A cold `make demo` (a fresh SQLite migrated) on a busy 2-core machine can take a minute.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

DEMO_TOOLS = {"echo", "add", "slow", "pixel", "fail"}
WAIT_SECONDS = 15.0


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    with running_demo(tmp_path_factory.mktemp("demo-site")) as demo:
        yield demo


def users_shell(line: str) -> subprocess.CompletedProcess[str]:
    """Run ``line`` in the checkout from a shell with nothing of the test run's environment."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    return subprocess.run(
        ["sh", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def env_file_of(demo: Demo) -> Path:
    line = demo.banner_value("manage.py:")
    assert line.startswith("ENV_FILE=")
    return Path(line.split()[0].removeprefix("ENV_FILE="))


def test_the_banner_line_imports_the_demo_servers_tools(demo: Demo) -> None:
    """The banner's one line, run as printed from a clean shell, imports the demo MCP server's five
    tools into the demo's own database."""
    line = demo.banner_value("manage.py:")
    assert line.endswith("manage.py mcp_import --all")
    done = users_shell(line)
    assert done.returncode == 0, done.stderr
    assert "demo: 5 imported, 0 skipped, 0 orphaned" in done.stdout
    url = environ.Env.db_url_config(_env_values(env_file_of(demo))["DATABASE_URL"])
    with sqlite3.connect(url["NAME"]) as database:
        rows = database.execute(
            "SELECT tool.remote_name FROM nr_llm_mcptool AS tool"
            " JOIN nr_llm_mcpserver AS server ON tool.server_id = server.id WHERE server.identifier = 'demo'"
        ).fetchall()
    assert {name for (name,) in rows} == DEMO_TOOLS


def test_without_the_env_file_the_same_command_fails(demo: Demo) -> None:
    """The control: the same command without its ENV_FILE prefix stops at the missing SECRET_KEY,
    the first thing a new user met."""
    line = demo.banner_value("manage.py:")
    done = users_shell(line.split(" ", 1)[1])
    assert done.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in done.stderr


def _env_values(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value.strip("'")
    return values


def test_the_env_file_holds_what_manage_py_needs_and_only_its_owner_reads_it(demo: Demo) -> None:
    """var/demo.env names the database, DEBUG, the private-network allowance and the demo's
    SECRET_KEY; it is readable by its owner only."""
    path = env_file_of(demo)
    values = _env_values(path)
    assert set(values) == {"DEBUG", "SECRET_KEY", "DATABASE_URL", "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS"}
    assert (values["DEBUG"], values["NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS"]) == ("true", "true")
    assert len(values["SECRET_KEY"]) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _send(demo: Demo, method: str, path: str, rid: str, pieces: list[bytes] | None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", demo.site_port, timeout=WAIT_SECONDS)
    try:
        headers = {"X-Request-ID": rid, "Content-Type": "application/json"}
        if pieces is not None:
            headers["Transfer-Encoding"] = "chunked"
        connection.request(
            method, path, body=iter(pieces) if pieces else None, headers=headers, encode_chunked=True
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("method", "path", "pieces", "status"),
    [
        ("GET", "/missing-{rid}/", None, 404),
        ("GET", "/demo/echo/", None, 405),
        ("POST", "/demo/echo/", [b"{oops"], 400),
        ("POST", "/demo/echo/", [b'{"a"', b": 1}"], 200),
    ],
    ids=["404", "405", "400", "chunked-200"],
)
def test_each_request_is_one_console_line(
    demo: Demo, method: str, path: str, pieces: list[bytes] | None, status: int
) -> None:
    """A 404, a 405, a 400 and a chunked 200 each show once in the demo's console: the access
    line, without django.request's "Not Found"/"Method Not Allowed"/"Bad Request" warning."""
    rid = uuid.uuid4().hex
    path = path.format(rid=rid)
    before = len(demo.console_text())
    assert _send(demo, method, path, rid, pieces) == status
    deadline = time.monotonic() + WAIT_SECONDS
    while f"rid={rid}" not in demo.console_text()[before:] and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [line for line in demo.console_text()[before:].splitlines() if path in line]
    assert len(lines) == 1, lines
    assert f"nr_llm.access {method} {path} {status} " in lines[0]
