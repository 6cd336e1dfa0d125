"""The running demo as a new user meets it: the banner's manage.py line, one console line per
request, and Connect to the OAuth-protected demo server followed by an import and a tool call.

One `make demo` for the module, on free ports, with its var folder in a temporary directory.
"""

from __future__ import annotations

import contextlib
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
import requests

from tests.oauth_peers import REQUEST_SECONDS, form_fields, page_form, sign_in_and_consent
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


def demo_database(demo: Demo) -> sqlite3.Connection:
    url = environ.Env.db_url_config(_env_values(env_file_of(demo))["DATABASE_URL"])
    return sqlite3.connect(url["NAME"])


def tool_names(demo: Demo, server: str) -> set[str]:
    with contextlib.closing(demo_database(demo)) as database:
        rows = database.execute(
            "SELECT tool.remote_name FROM nr_llm_mcptool AS tool"
            " JOIN nr_llm_mcpserver AS server ON tool.server_id = server.id WHERE server.identifier = ?",
            (server,),
        ).fetchall()
    return {name for (name,) in rows}


def test_the_banner_line_imports_the_demo_servers_tools(demo: Demo) -> None:
    """The banner's one line, run as printed from a clean shell, imports the demo MCP server's five
    tools into the demo's own database."""
    line = demo.banner_value("manage.py:")
    assert line.endswith("manage.py mcp_import demo")
    done = users_shell(line)
    assert done.returncode == 0, done.stderr
    assert "demo: 5 imported, 0 skipped, 0 orphaned" in done.stdout
    assert tool_names(demo, "demo") == DEMO_TOOLS


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
    assert set(values) == {
        "DEBUG",
        "SECRET_KEY",
        "DATABASE_URL",
        "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS",
        "NR_LLM_PUBLIC_BASE_URL",
    }
    assert (values["DEBUG"], values["NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS"]) == ("true", "true")
    assert values["NR_LLM_PUBLIC_BASE_URL"] == f"http://127.0.0.1:{demo.site_port}"
    assert len(values["SECRET_KEY"]) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_oauth_secrets_are_kept_where_only_their_owner_reads_them(demo: Demo) -> None:
    """The authorization server's secrets are made once in the var folder, owner-only, like the
    admin's password; its folder (database, seed.json) is the owner's only."""
    var_dir = env_file_of(demo).parent
    for name in ("operator-password", "client-secret", "resource-server-secret", "secret-key"):
        kept = var_dir / f"demo-oauth-{name}"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600, kept
        assert len(kept.read_text().strip()) >= 16
    assert stat.S_IMODE((var_dir / "oauth").stat().st_mode) == 0o700
    assert stat.S_IMODE((var_dir / "oauth" / "seed.json").stat().st_mode) == 0o600
    assert (
        demo.banner_value("its login:")
        == f"operator / {(var_dir / 'demo-oauth-operator-password').read_text()}"
    )


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


def _post(browser: requests.Session, url: str, data: dict[str, str]) -> requests.Response:
    """A POST from the admin's own page, as its form sends it (CSRF token and Referer included)."""
    page = browser.get(url, timeout=REQUEST_SECONDS)
    assert page.status_code == 200, (url, page.status_code)
    token = browser.cookies["csrftoken"]
    return browser.post(
        url,
        data={"csrfmiddlewaretoken": token, **data},
        headers={"Referer": url},
        allow_redirects=False,
        timeout=REQUEST_SECONDS,
    )


def protected_server(demo: Demo) -> dict[str, object]:
    """The seeded 'protected' row, as the demo's database holds it."""
    fields = (
        "id",
        "url",
        "auth_placement",
        "oauth_registration",
        "oauth_client_id",
        "oauth_scopes",
        "enabled",
    )
    with contextlib.closing(demo_database(demo)) as database:
        row = database.execute(
            f"SELECT {', '.join(fields)} FROM nr_llm_mcpserver WHERE identifier = 'protected'"
        ).fetchone()
    return dict(zip(fields, row, strict=True))


def enable_tool(demo: Demo, browser: requests.Session, tool_name: str) -> int:
    """Imported tools start disabled: the changelist's action enables one, as a newcomer would."""
    with contextlib.closing(demo_database(demo)) as database:
        (tool_pk,) = database.execute(
            "SELECT id FROM nr_llm_mcptool WHERE tool_name = ?", (tool_name,)
        ).fetchone()
    site = f"http://127.0.0.1:{demo.site_port}"
    enabled = _post(
        browser, f"{site}/admin/nr_llm/mcptool/", {"action": "enable_tools", "_selected_action": str(tool_pk)}
    )
    assert enabled.status_code == 302, enabled.text[:2000]
    return int(tool_pk)


def sign_in_to_admin(demo: Demo, browser: requests.Session) -> None:
    """The admin's login form, with the banner's login."""
    site = f"http://127.0.0.1:{demo.site_port}"
    admin, _, password = demo.banner_value("login:").partition(" / ")
    signed_in = _post(
        browser, f"{site}/admin/login/", {"username": admin, "password": password, "next": "/admin/"}
    )
    assert signed_in.status_code == 302, signed_in.text[:2000]


def connect_protected(demo: Demo, browser: requests.Session) -> str:
    """Sign in to the admin with the banner's login, press Connect on 'protected', sign in and
    consent at the authorization server as the banner's operator; returns the page the callback
    lands on (the server's change page)."""
    site = f"http://127.0.0.1:{demo.site_port}"
    issuer = f"http://127.0.0.1:{demo.auth_port}"
    operator, _, operator_password = demo.banner_value("its login:").partition(" / ")
    pk = protected_server(demo)["id"]
    change_page = f"{site}/admin/nr_llm/mcpserver/{pk}/change/"
    sign_in_to_admin(demo, browser)
    page = browser.get(change_page, timeout=REQUEST_SECONDS)
    # The redirect URI the page tells an operator to register is the one the AS was seeded with.
    assert f"{site}/admin/nr_llm/mcpserver/oauth/callback/" in page.text
    # The Connect button submits the change form to its own formaction.
    form = page_form(page.text, "mcpserver_form")
    connect = browser.post(
        f"{site}/admin/nr_llm/mcpserver/{pk}/oauth/connect/",
        data={"csrfmiddlewaretoken": form_fields(form)["csrfmiddlewaretoken"]},
        headers={"Referer": change_page},
        allow_redirects=False,
        timeout=REQUEST_SECONDS,
    )
    assert connect.status_code == 302, connect.text[:2000]
    assert connect.headers["Location"].startswith(f"{issuer}/authorize/?")
    callback = sign_in_and_consent(
        browser, connect.headers["Location"], f"{issuer}/accounts/login/", operator, operator_password
    )
    assert callback.startswith(f"{site}/admin/nr_llm/mcpserver/oauth/callback/?")
    back = browser.get(callback, timeout=REQUEST_SECONDS)
    assert back.url == change_page
    return back.text


def import_protected(demo: Demo) -> subprocess.CompletedProcess[str]:
    """The banner's manage.py line, for the protected server."""
    return users_shell(demo.banner_value("manage.py:").replace("mcp_import demo", "mcp_import protected"))


def test_a_newcomer_connects_the_protected_server_imports_it_and_tries_a_tool(demo: Demo) -> None:
    """The banner's path over HTTP as a browser walks it: admin login, Connect on the seeded
    'protected' server, the authorization server's sign-in (the banner's operator) and consent,
    back at the callback "Connected", then the banner's manage.py line imports the server's
    tools and the admin's Try tool calls one with the operator's token."""
    site = f"http://127.0.0.1:{demo.site_port}"
    assert demo.banner_value("OAuth MCP server:") == (
        f"http://127.0.0.1:{demo.protected_mcp_port}/mcp (seeded as 'protected')"
    )
    assert demo.banner_value("authorization srv:").startswith(f"http://127.0.0.1:{demo.auth_port}/ ")
    operator = demo.banner_value("its login:").partition(" / ")[0]
    server = protected_server(demo)
    assert {key: value for key, value in server.items() if key != "id"} == {
        "url": f"http://127.0.0.1:{demo.protected_mcp_port}/mcp",
        "auth_placement": "oauth",
        "oauth_registration": "preregistered",
        "oauth_client_id": "nr-llm-demo",
        "oauth_scopes": "mcp:tools",
        "enabled": 1,
    }
    assert demo.banner_value("try OAuth:") == (
        f"open {site}/admin/nr_llm/mcpserver/{server['id']}/change/ and click Connect"
    )

    # One session for both sites, as one browser: their cookies have different names.
    with requests.Session() as browser:
        page = connect_protected(demo, browser)
        assert "Connected protected: scopes mcp:tools, expires " in page, page[:3000]

        done = import_protected(demo)
        assert done.returncode == 0, done.stderr
        assert "protected: 3 imported, 0 skipped, 0 orphaned" in done.stdout
        assert tool_names(demo, "protected") == {"whoami", "echo", "admin_report"}

        tool_pk = enable_tool(demo, browser, "mcp_protected_whoami")
        tried = _post(
            browser, f"{site}/admin/nr_llm/mcptool/{tool_pk}/try/", {"arguments": "{}", "_run": "Run tool"}
        )
        assert tried.status_code == 200, tried.text[:2000]
        assert "The tool answered" in tried.text, tried.text[:3000]
        # whoami reports the token: nr_llm's pre-registered client, acting for the operator.
        result = tried.text.split('id="try-tool-text">', 1)[1].split("</pre>", 1)[0]
        assert "nr-llm-demo" in result and operator in result, result


def test_a_second_make_demo_keeps_its_secrets_and_needs_only_a_reconnect(tmp_path: Path) -> None:
    """`make demo` twice on one var folder and its ports: the kept secrets still match between the
    rebuilt authorization server and the server row, the first run's grant (its tokens gone with
    the old authorization server) is refused with "reconnect", and one Connect makes the import
    work again."""
    with running_demo(tmp_path) as first, requests.Session() as browser:
        assert "Connected protected: " in connect_protected(first, browser)
        assert import_protected(first).returncode == 0
    with running_demo(tmp_path, first.ports) as second:
        assert second.banner_value("its login:") == first.banner_value("its login:")
        stale = import_protected(second)
        assert stale.returncode == 1
        assert "reconnect" in stale.stdout, stale.stdout
        with requests.Session() as browser:
            assert "Connected protected: " in connect_protected(second, browser)
        done = import_protected(second)
        assert done.returncode == 0, done.stderr
        assert "protected: 3 imported, 0 skipped, 0 orphaned" in done.stdout


def test_a_newcomer_sees_a_call_wait_approves_it_and_resumes_it(demo: Demo) -> None:
    """The banner's approval path on the seeded 'guarded' server: import it, enable echo, mcp_call
    exits 3 with the call's id, the admin's Approve records the decision, mcp_call --resume answers."""
    site = f"http://127.0.0.1:{demo.site_port}"
    manage = demo.banner_value("manage.py:").removesuffix("mcp_import demo")
    assert "mcp_call mcp_guarded_echo" in demo.banner
    done = users_shell(manage + "mcp_import guarded")
    assert done.returncode == 0, done.stderr
    with requests.Session() as browser:
        sign_in_to_admin(demo, browser)
        enable_tool(demo, browser, "mcp_guarded_echo")

        waiting = users_shell(manage + """mcp_call mcp_guarded_echo --args '{"text": "hi from the demo"}'""")
        assert waiting.returncode == 3, (waiting.stdout, waiting.stderr)
        # The recorded arguments come first (what an approver reads), the notice with the id last.
        call_id = waiting.stderr.splitlines()[-1].split("tool call ", 1)[1].split(" ", 1)[0]
        assert str(uuid.UUID(call_id)) == call_id
        assert waiting.stderr.startswith(f"arguments of tool call {call_id}:")

        change_page = f"{site}/admin/nr_llm/toolcallapproval/{call_id}/change/"
        page = browser.get(change_page, timeout=REQUEST_SECONDS)
        assert "hi from the demo" in page.text and 'name="_approve"' in page.text
        fields = form_fields(page_form(page.text, "toolcallapproval_form"))
        approved = browser.post(
            f"{site}/admin/nr_llm/toolcallapproval/{call_id}/approve/",
            data={
                "csrfmiddlewaretoken": fields["csrfmiddlewaretoken"],
                "digest": fields["digest"],
                "note": "ok",
            },
            headers={"Referer": change_page},
            timeout=REQUEST_SECONDS,
        )
        assert f"Tool call {call_id} approved" in approved.text, approved.text[:3000]

    resumed = users_shell(manage + f"mcp_call --resume {call_id}")
    assert (resumed.returncode, resumed.stdout) == (0, "hi from the demo\n"), resumed.stderr


def test_the_console_shows_the_sites_requests_not_the_assets_a_page_pulls_in(demo: Demo) -> None:
    """A page, its stylesheet and the favicon as a browser asks for them: the page's line only.
    The favicon is served (an icon, no 404 warning); a missing static file still shows (a fault)."""
    site = f"http://127.0.0.1:{demo.site_port}"
    rid = uuid.uuid4().hex
    before = len(demo.console_text())
    with requests.Session() as browser:

        def get(path: str, suffix: str) -> requests.Response:
            return browser.get(f"{site}{path}", headers={"X-Request-ID": rid + suffix}, timeout=WAIT_SECONDS)

        assert get("/admin/login/", "page").status_code == 200
        assert get("/static/admin/css/base.css", "css").status_code == 200
        icon = get("/favicon.ico", "icon")
        assert (icon.status_code, icon.headers["Content-Type"]) == (200, "image/x-icon")
        assert icon.content.startswith(b"\x00\x00\x01\x00")  # an ICO header
        assert get(f"/static/missing-{rid}.css", "missing").status_code == 404
        # Last, so every line above has been written once its own is there.
        assert get("/demo/echo/", "marker").status_code == 405
    deadline = time.monotonic() + WAIT_SECONDS
    while f"rid={rid}marker" not in demo.console_text()[before:] and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [line for line in demo.console_text()[before:].splitlines() if rid in line]
    assert len(lines) == 3, lines
    assert "nr_llm.access GET /admin/login/ 200 " in lines[0]
    assert f"WARNING nr_llm.access GET /static/missing-{rid}.css 404 " in lines[1]
    assert "nr_llm.access GET /demo/echo/ 405 " in lines[2]
    assert "favicon" not in demo.console_text()[before:]
