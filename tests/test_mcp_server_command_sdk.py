"""``manage.py mcp_server --import --enable-tool`` against the official Python SDK server on 127.0.0.1:
the catalogue service imports, named tools are enabled, a second run changes nothing."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from nr_llm import tools
from nr_llm.models import McpServer, McpTool

from . import catalogue_peers

# Shared fixtures, registered in this module under their own names.
small_catalogue_url = catalogue_peers.small_catalogue_url
loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.django_db, pytest.mark.e2e, pytest.mark.usefixtures("loopback_allowed")]


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("mcp_server", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def test_a_deploy_creates_imports_and_enables_named_tools_and_a_second_run_changes_nothing(
    small_catalogue_url,
):
    """One command: the server created (enabled, no approval step), its 10 tools imported, echo (by
    its remote name) and mcp_sdk_add (by its local name) enabled and offered; the same command
    again prints 'unchanged' and the same import line, and leaves every tool row as it was."""
    args = (
        "sdk",
        "--url",
        small_catalogue_url,
        "--data-class",
        "publicContent",
        "--enabled",
        "--no-requires-approval",
        "--import",
        "--enable-tool",
        "echo",
        "--enable-tool",
        "mcp_sdk_add",
    )
    out, _, error = run(*args)
    assert error is None, out
    assert out.splitlines() == [
        "sdk: created: name, url, enabled, data_class, requires_approval",
        "  import: 10 imported, 0 skipped, 0 orphaned",
        "  enabled: mcp_sdk_echo",
        "  enabled: mcp_sdk_add",
    ]
    assert {spec["function"]["name"] for spec in tools.definitions("openai")} == {
        "mcp_sdk_echo",
        "mcp_sdk_add",
    }
    rows = list(McpTool.objects.order_by("tool_name").values())
    again, _, error = run(*args)
    assert error is None
    assert again.splitlines()[0] == "sdk: unchanged"
    assert again.splitlines()[1:] == out.splitlines()[1:]
    assert list(McpTool.objects.order_by("tool_name").values()) == rows


def test_a_tool_the_catalogue_lacks_is_exit_1_after_the_rest_is_done(small_catalogue_url):
    """A misspelt tool: the server is saved and imported, echo enabled, the unknown name reported,
    exit 1 (the deploy asked for something that did not happen)."""
    out, _, error = run(
        "sdk", "--url", small_catalogue_url, "--data-class", "publicContent", "--import",
        "--enable-tool", "echo", "--enable-tool", "ecko", "--json",
    )  # fmt: skip
    assert error is not None and error.returncode == 1
    assert str(error) == "1 of 1 server(s) saved, not ready as asked: sdk"
    (report,) = json.loads(out)
    assert report["enabled_tools"] == ["mcp_sdk_echo"]
    assert report["not_enabled"] == ["ecko: not in the catalogue of sdk (import it first)"]
    assert report["imported"]["imported"] == 10 and report["imported"]["status"] == "ok"
    assert McpTool.objects.get(tool_name="mcp_sdk_echo").enabled


def test_an_import_refused_for_want_of_a_data_class_enables_nothing_and_exits_1(small_catalogue_url):
    """No data class: the import service refuses, the tools are not enabled, the output says why."""
    out, _, error = run("sdk", "--url", small_catalogue_url, "--import", "--enable-tool", "echo")
    assert error is not None and error.returncode == 1
    lines = out.splitlines()
    assert (
        "  import refused — no data class is declared; declare what data this server may see first" in lines
    )
    assert "  not enabled: echo: not enabled, the import was refused" in lines
    assert not McpTool.objects.exists()
    assert McpServer.objects.get(identifier="sdk").import_error.startswith("no data class")


def test_import_on_the_command_line_imports_every_server_of_a_file(small_catalogue_url, tmp_path):
    """--file with --import: each server of the file is saved, then imported by the import service."""
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "servers": [
                    {"identifier": "one", "url": small_catalogue_url, "data_class": "publicContent"},
                    {"identifier": "two", "url": small_catalogue_url, "data_class": "sourceCode"},
                ]
            }
        )
    )
    out, _, error = run("--file", str(path), "--import")
    assert error is None, out
    assert out.count("  import: 10 imported, 0 skipped, 0 orphaned") == 2
    assert McpTool.objects.filter(server__identifier="one").count() == 10
    assert McpTool.objects.filter(server__identifier="two").count() == 10


def test_a_skipped_tool_is_printed_with_its_reason_and_named_so_when_asked_for(settings):
    """--import prints each skipped tool with its reason, as mcp_import does, and --enable-tool of
    a skipped tool says it was skipped and why, not "import it first" (and --json carries both)."""
    from tests.peers import pydantic_server

    with pydantic_server("--network-ref") as url:
        args = (
            "py",
            "--url",
            url,
            "--data-class",
            "publicContent",
            "--import",
            "--enable-tool",
            "fetch_remote",
        )
        out, _, error = run(*args)
        as_json, _, _ = run(*args, "--json")
    assert error is not None and error.returncode == 1
    lines = out.splitlines()
    assert "  import: 12 imported, 1 skipped, 0 orphaned" in lines
    reason = next(line for line in lines if line.startswith("  skipped: 'fetch_remote': "))
    assert "points outside the schema" in reason and "never fetched" in reason
    assert any(
        line.startswith("  not enabled: fetch_remote: skipped by the import, 'fetch_remote': ")
        for line in lines
    )
    (report,) = json.loads(as_json)
    assert report["imported"]["skip_reasons"] == [reason.removeprefix("  skipped: ")]
    assert report["not_enabled"][0].startswith("fetch_remote: skipped by the import")
