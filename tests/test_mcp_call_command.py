"""``manage.py mcp_call``: exit codes 0/1/2/3, --resume, and what it prints, against the SDK server."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool
from tests.manage_process import SEED_HELD_TOOL, manage_in
from tests.peers import sdk_server

from .factories import McpServerFactory
from .governance.helpers import approver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture(scope="module")
def url():
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def servers(url, settings):
    """The SDK server imported twice: 'demo' runs calls at once, 'guarded' holds them for approval."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    for identifier, approval in (("demo", False), ("guarded", True)):
        server = McpServerFactory.create(identifier=identifier, name=identifier.title(), url=url)
        assert import_catalogue(server).ok
        McpServer.objects.filter(pk=server.pk).update(requires_approval=approval)
    McpTool.objects.update(enabled=True)


def run(*args: str) -> tuple[str, str, CommandError | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("mcp_call", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def tool_calls_seen(url: str) -> int:
    log = requests.get(url.replace("/mcp", "/requests"), timeout=10).json()
    return sum(1 for entry in log if entry["method"] == "tools/call")


def test_a_call_that_answers_prints_the_answer_and_exits_0(servers):
    """The tool's text on stdout, the call's id on stderr, no error."""
    out, err, error = run("mcp_demo_echo", "--args", '{"text": "hello"}', "--actor", "deploy")
    assert (out, error) == ("hello\n", None)
    assert err.startswith("tool call ") and err.endswith(" succeeded\n")


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("mcp_demo_fail", "--args", '{"reason": "no stock"}'), 'MCP server "Demo" (demo) reported an error'),
        (("mcp_nope",), "unknown tool 'mcp_nope'"),
        (("mcp_demo_echo", "--args", '{"text": "x"}', "--ceiling", "publicContent"), "above this caller's"),
    ],
    ids=["is-error", "unknown", "above-the-ceiling"],
)
def test_a_failed_call_prints_why_and_exits_1(servers, args, text):
    """A failing tool, an unknown name or a tool above --ceiling is exit 1 with the result's text."""
    McpServer.objects.filter(identifier="demo").update(data_class="sourceCode")
    out, _, error = run(*args)
    assert error is not None and error.returncode == 1, (out, error)
    assert text in out
    assert "failed" in str(error)


def test_a_call_held_for_approval_exits_3_and_prints_its_id_without_contacting_the_server(servers, url):
    """Exit 3, the id and where to approve it; the server saw no tools/call."""
    before = tool_calls_seen(url)
    out, _, error = run("mcp_guarded_echo", "--args", '{"text": "later"}')
    assert error is not None and error.returncode == 3
    result_id = str(error).split("tool call ", 1)[1].split(" ", 1)[0]
    assert f"/admin/nr_llm/toolcall/{result_id}/change/" in str(error)
    assert f"manage.py mcp_call --resume {result_id}" in str(error)
    assert result_id in out and "has not run" in out
    assert tool_calls_seen(url) == before


def test_resume_runs_the_approved_call_once_and_then_reads_its_outcome(servers, url):
    """--resume after an approval: exit 0 and the answer; again: exit 0 and the recorded outcome,
    the server having run it once."""
    held = tools.execute("mcp_guarded_echo", {"text": "approved text"})
    tools.approve(held.call_id, approver())
    before = tool_calls_seen(url)
    out, _, error = run("--resume", str(held.call_id))
    assert (out, error) == ("approved text\n", None)
    out, _, error = run("--resume", str(held.call_id))
    assert error is None and "already ran (succeeded)" in out and "approved text" in out
    assert tool_calls_seen(url) == before + 1


def test_resume_of_a_denied_call_exits_1_and_of_a_waiting_one_3(servers):
    """A denied call is a failure to the script; one still waiting is exit 3 again."""
    waiting = tools.execute("mcp_guarded_echo", {"text": "x"})
    _, _, error = run("--resume", str(waiting.call_id))
    assert error is not None and error.returncode == 3
    tools.deny(waiting.call_id, approver(), "no")
    out, _, error = run("--resume", str(waiting.call_id))
    assert error is not None and error.returncode == 1
    assert "was denied by approver: no" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either a tool name or --resume CALL_ID"),
        (("mcp_demo_echo", "--resume", "x"), "give either a tool name or --resume CALL_ID"),
        (("mcp_demo_echo", "--args", "{text: hi}"), "--args is not JSON"),
        (("mcp_demo_echo", "--args", "[1, 2]"), "--args must be a JSON object"),
        (("--resume", "not-an-id"), "'not-an-id' is not a tool call id"),
        (("--resume", "00000000-0000-4000-8000-000000000000"), "There is no tool call 00000000-"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(servers, args, message):
    """Bad input never runs anything and says what was wrong."""
    _, _, error = run(*args)
    assert error is not None and error.returncode == 2
    assert message in str(error)


def test_json_output_for_scripts(servers):
    """--json prints status, is_error, server, call_id and text."""
    out, _, error = run("mcp_demo_echo", "--args", '{"text": "j"}', "--json")
    document = json.loads(out)
    assert error is None
    assert {key: document[key] for key in ("status", "is_error", "server", "text")} == {
        "status": "succeeded",
        "is_error": False,
        "server": "demo",
        "text": "j",
    }
    assert McpServer.objects.filter(identifier="demo").exists() and document["call_id"]


def test_the_real_process_exits_with_the_documented_codes(tmp_path: Path):
    """Through manage.py itself: 3 for a held call, 1 for an unknown tool, 2 for a bad id."""
    manage = manage_in(tmp_path)
    seeded = manage("shell", "-c", SEED_HELD_TOOL)
    assert seeded.returncode == 0, seeded.stderr
    held = manage("mcp_call", "mcp_held_echo", "--args", '{"text": "x"}')
    assert held.returncode == 3, held.stderr
    assert "awaits approval" in held.stderr
    assert manage("mcp_call", "mcp_nope").returncode == 1
    assert manage("mcp_call", "--resume", "nope").returncode == 2


def test_a_held_call_names_the_absolute_admin_link_when_the_public_base_url_is_set(servers, settings):
    """With NR_LLM_PUBLIC_BASE_URL set, the approval link is absolute: an operator opens it from a
    deploy log on another machine."""
    settings.NR_LLM_PUBLIC_BASE_URL = "https://site.example/"
    _, _, error = run("mcp_guarded_echo", "--args", '{"text": "later"}')
    assert error is not None and error.returncode == 3
    result_id = str(error).split("tool call ", 1)[1].split(" ", 1)[0]
    assert f"approve it in the admin at https://site.example/admin/nr_llm/toolcall/{result_id}/change/" in (
        str(error)
    )


def test_the_real_process_prints_a_held_call_as_a_notice_not_as_an_error(tmp_path: Path):
    """Through manage.py: exit 3, stderr is the notice itself (no "CommandError: "), with the absolute
    admin link the site's public base URL makes; the tool's text is still on stdout."""
    manage = manage_in(tmp_path, NR_LLM_PUBLIC_BASE_URL="https://site.example")
    seeded = manage("shell", "-c", SEED_HELD_TOOL)
    assert seeded.returncode == 0, seeded.stderr
    held = manage("mcp_call", "mcp_held_echo", "--args", '{"text": "x"}')
    assert held.returncode == 3, held.stderr
    # The recorded arguments come first (what an approver reads), then the notice itself.
    notice = held.stderr.splitlines()[-1]
    call_id = notice.split("tool call ", 1)[1].split(" ", 1)[0]
    assert (
        held.stderr.startswith(f"arguments of tool call {call_id}:\n") and "CommandError" not in held.stderr
    )
    assert notice + "\n" == (
        f"tool call {call_id} awaits approval: approve it in the admin at "
        f"https://site.example/admin/nr_llm/toolcall/{call_id}/change/, "
        f"then run: manage.py mcp_call --resume {call_id}\n"
    )
    assert call_id in held.stdout
