"""``manage.py mcp_import`` against the official Python SDK server on 127.0.0.1.

A small paged catalogue (10 tools, 3 per page) keeps these quick; the 500-tool walk is
tests/catalogue/test_catalogue_sdk.py's.
"""

import io
import json

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError

from nr_llm import catalogue, tools
from nr_llm.models import McpTool

from . import catalogue_peers
from .factories import McpServerFactory

# Shared fixtures, registered in this module under their own names.
small_catalogue_url = catalogue_peers.small_catalogue_url
loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.django_db, pytest.mark.e2e, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def url(small_catalogue_url):
    return small_catalogue_url


class Terminal(io.StringIO):
    """stderr as an interactive terminal would be."""

    def isatty(self):
        return True


def run(*args, stderr=None, **options):
    out, err = io.StringIO(), stderr or io.StringIO()
    try:
        call_command("mcp_import", *args, stdout=out, stderr=err, **options)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def test_one_server_prints_one_line_and_exits_zero(url):
    """`<identifier>: N imported, N skipped, N orphaned`, nothing else, exit 0."""
    McpServerFactory.create(identifier="sdk", url=url)
    out, err, error = run("sdk")
    assert (out, err, error) == ("sdk: 10 imported, 0 skipped, 0 orphaned\n", "", None)


def test_running_it_twice_changes_nothing(url):
    """The second run prints the same line and leaves every tool row as it was."""
    McpServerFactory.create(identifier="sdk", url=url)
    first, _, _ = run("sdk")
    rows = list(McpTool.objects.order_by("tool_name").values())
    second, _, error = run("sdk")
    assert (second, error) == (first, None)
    assert list(McpTool.objects.order_by("tool_name").values()) == rows


def test_all_goes_on_after_a_failing_server_and_then_fails(url):
    """An unreachable server is refused; the next one is still imported; the exit is non-zero."""
    McpServerFactory.create(identifier="a_down", url=catalogue_peers.closed_port_url())
    McpServerFactory.create(identifier="b_up", url=url)
    out, _, error = run("--all")
    lines = out.splitlines()
    assert lines[0].startswith("a_down: refused — ")
    assert "a_down" in lines[0][len("a_down: refused — ") :]
    assert lines[1:] == ["b_up: 10 imported, 0 skipped, 0 orphaned"]
    assert error is not None and error.returncode == 1
    assert str(error) == "1 of 2 import(s) refused: a_down"
    assert McpTool.objects.filter(server__identifier="b_up").count() == 10


def test_skip_reasons_are_printed_one_per_line_and_a_partial_import_exits_zero(url):
    """Two remote tools colliding with local tools: counted, each reason on its own line, exit 0."""
    McpServerFactory.create(identifier="sdk", url=url)
    for name in ("mcp_sdk_echo", "mcp_sdk_add"):
        tools.register(name, "The site's own.", {"type": "object"}, lambda: "local")
    try:
        out, _, error = run("sdk")
    finally:
        tools.unregister("mcp_sdk_echo")
        tools.unregister("mcp_sdk_add")
    assert error is None
    assert out.splitlines() == [
        "sdk: 8 imported, 2 skipped, 0 orphaned",
        "  skipped: 'echo': local name mcp_sdk_echo is taken by a locally registered tool",
        "  skipped: 'add': local name mcp_sdk_add is taken by a locally registered tool",
    ]


def test_progress_goes_to_a_terminal(url):
    """On a terminal, stderr shows which server is done and how many tools were fetched."""
    McpServerFactory.create(identifier="sdk", url=url)
    out, err, error = run("sdk", stderr=Terminal())
    assert error is None
    assert "[1/1] sdk: fetching the catalogue" in err
    assert "[1/1] sdk: 1 page(s), 3 tools fetched" in err
    assert "[1/1] sdk: 4 page(s), 10 tools fetched" in err
    assert "[1/1] sdk: fetched 10 tools" in err
    assert out == "sdk: 10 imported, 0 skipped, 0 orphaned\n"


def test_progress_is_plain_and_only_a_refusal_is_red_on_a_colour_terminal(url):
    """With colours, progress on stderr carries no style (Django's default there is the error
    style, bold red); a refused server's line is in the error style, an imported one's plain."""
    McpServerFactory.create(identifier="a_down", url=catalogue_peers.closed_port_url())
    McpServerFactory.create(identifier="b_up", url=url)
    out, err, error = run("--all", stderr=Terminal(), force_color=True)
    assert error is not None
    assert "[2/2] b_up: fetched 10 tools" in err
    assert "\x1b[" not in err.replace("\x1b[K", "")  # only the line clearing, never a colour
    refused, imported = out.splitlines()
    assert refused.startswith("\x1b[31;1ma_down: refused — ") and refused.endswith("\x1b[0m")
    assert imported == "b_up: 10 imported, 0 skipped, 0 orphaned"


def test_no_progress_when_stderr_is_not_a_terminal(url):
    """Piped into a log, the command prints results only."""
    McpServerFactory.create(identifier="sdk", url=url)
    _, err, _ = run("sdk")
    assert err == ""


def test_json_prints_the_reports(url):
    """--json is the whole report per server, parseable by a deploy script."""
    McpServerFactory.create(identifier="sdk", url=url)
    out, _, error = run("sdk", "--json")
    [report] = json.loads(out)
    assert error is None
    assert report == {
        "identifier": "sdk",
        "imported": 10,
        "skipped": 0,
        "orphaned": 0,
        "skip_reasons": [],
        "refused": "",
        "changed": [],
        # The SDK server offers no resources or prompts: the walk found none.
        "features": {
            "resources": 0,
            "templates": 0,
            "prompts": 0,
            "skipped": 0,
            "orphaned": 0,
            "skip_reasons": [],
            "changed": [],
            "refused": "",
        },
        "status": "ok",
        "ok": True,
    }


@pytest.fixture
def mutable_url():
    from tests.peers import sdk_server

    with sdk_server("--stateless", "--mutable") as url:
        yield url


def test_a_changed_enabled_tool_is_listed_in_text_and_json(mutable_url):
    """The server rewrites the enabled echo's description between imports: the text report names
    it and what changed, exit 0; after it is accepted and changed again, --json lists it too."""
    McpServerFactory.create(identifier="sdk", url=mutable_url)
    run("sdk")
    echo = McpTool.objects.get(remote_name="echo")
    assert catalogue.enable_tools([echo.pk]).count == 1
    base = mutable_url.removesuffix("/mcp")
    requests.post(
        f"{base}/tools/echo", json={"description": "Echo, now different."}, timeout=10
    ).raise_for_status()

    out, _, error = run("sdk")
    assert error is None
    assert out.splitlines() == [
        "sdk: 5 imported, 0 skipped, 0 orphaned, 1 disabled: definition changed",
        "  disabled until reviewed: mcp_sdk_echo (description)",
    ]
    echo.refresh_from_db()
    assert catalogue.accept_definition(echo.pk, echo.definition_fingerprint) == ""
    requests.post(f"{base}/tools/echo", json={"title": "Echo"}, timeout=10).raise_for_status()
    out, _, error = run("sdk", "--json")
    assert error is None
    [report] = json.loads(out)
    assert report["changed"] == [{"tool_name": "mcp_sdk_echo", "parts": ["title"]}]
    assert report["status"] == "ok"
