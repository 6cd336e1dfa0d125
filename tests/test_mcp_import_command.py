"""``manage.py mcp_import``: arguments, output lines and exit codes (no server contacted here).

Imports against a real MCP server are in tests/test_mcp_import_command_sdk.py.
"""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from nr_llm.catalogue import import_catalogue
from nr_llm.models import ImportStatus, McpServer

from .factories import McpServerFactory

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("mcp_import", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


@pytest.mark.parametrize("args", [(), ("demo", "--all")], ids=["neither", "both"])
def test_exactly_one_of_identifier_and_all_is_required(args):
    """No target, or both, is a usage error that names the two choices."""
    McpServerFactory.create(identifier="demo")
    with pytest.raises(CommandError, match=r"identifier|--all"):
        call_command("mcp_import", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_an_unknown_identifier_fails_with_a_clear_message_and_exit_code_2():
    """A typo in a deploy script fails loudly and names what was asked for."""
    _, _, error = run("nope")
    assert error is not None
    assert error.returncode == 2
    assert "no MCP server with the identifier 'nope'" in str(error)


def test_all_with_no_enabled_server_warns_and_exits_zero():
    """Nothing to import is not a failure: a warning on stderr, exit 0, no output lines."""
    McpServerFactory.create(enabled=False)
    out, err, error = run("--all")
    assert error is None
    assert out == ""
    assert "no enabled MCP server" in err


def test_all_with_no_enabled_server_prints_an_empty_json_list():
    """--json still gives a deploy script something to parse."""
    out, _, error = run("--all", "--json")
    assert (error, json.loads(out)) == (None, [])


def test_a_refusal_prints_its_line_and_fails_through_command_error():
    """`<identifier>: refused — <reason>` on stdout, then a non-zero exit naming the server."""
    McpServerFactory.create(identifier="nodc", data_class="")
    out, _, error = run("nodc")
    assert out == "nodc: refused — no data class is declared; declare what data this server may see first\n"
    assert error is not None and error.returncode == 1
    assert str(error) == "1 of 1 import(s) refused: nodc"
    assert McpServer.objects.get(identifier="nodc").import_status == ImportStatus.ERROR


def test_all_reports_every_refused_server_and_skips_disabled_ones():
    """--all goes through every enabled server, in identifier order, and lists each refusal."""
    McpServerFactory.create(identifier="b_nourl", url="")
    McpServerFactory.create(identifier="a_nodc", data_class="")
    McpServerFactory.create(identifier="c_off", enabled=False, url="")
    out, _, error = run("--all")
    assert out.splitlines() == [
        "a_nodc: refused — no data class is declared; declare what data this server may see first",
        "b_nourl: refused — no URL is configured",
    ]
    assert str(error) == "2 of 2 import(s) refused: a_nodc, b_nourl"
    assert McpServer.objects.get(identifier="c_off").import_status == ImportStatus.NEVER_IMPORTED


def test_json_prints_the_reports_and_still_fails_on_a_refusal():
    """--json gives the whole report per server; a refusal still exits non-zero."""
    McpServerFactory.create(identifier="nourl", url="")
    out, _, error = run("nourl", "--json")
    assert json.loads(out) == [
        {
            "identifier": "nourl",
            "imported": 0,
            "skipped": 0,
            "orphaned": 0,
            "skip_reasons": [],
            "refused": "no URL is configured",
            "changed": [],
            "features": {},
            "status": "error",
            "ok": False,
        }
    ]
    assert error is not None and error.returncode == 1


def test_an_unexpected_failure_of_one_server_does_not_stop_all(monkeypatch, caplog):
    """A bug or database error importing one server is reported and logged; --all goes on."""

    def failing_for_a(server, **kwargs):
        if server.identifier == "a_boom":
            raise RuntimeError("database went away")
        return import_catalogue(server, **kwargs)

    monkeypatch.setattr("nr_llm.management.commands.mcp_import.import_catalogue", failing_for_a)
    McpServerFactory.create(identifier="a_boom")
    McpServerFactory.create(identifier="b_nourl", url="")
    out, _, error = run("--all")
    assert out.splitlines() == [
        "a_boom: refused — failed unexpectedly (RuntimeError); the traceback is in the log",
        "b_nourl: refused — no URL is configured",
    ]
    assert str(error) == "2 of 2 import(s) refused: a_boom, b_nourl"
    assert "importing MCP server a_boom failed" in caplog.text
    assert "database went away" in caplog.text
