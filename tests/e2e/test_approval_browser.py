"""The approval path in a real browser: a call waits, an approver opens it and approves it, the
agent loop's resume answers, and the Tool calls list shows each state.

Debian's Chromium driven by Playwright, the site on pytest-django's live server, the official
Python SDK server as the MCP peer; all on 127.0.0.1. Screenshots go to test-artifacts/; with
NR_LLM_DOC_IMAGES=1 the operator guide's go to docs/img/ instead.
"""

from __future__ import annotations

import os
import re

import pytest
import requests

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall, ToolCallStatus
from tests.e2e.chromium import log_in
from tests.e2e.test_admin_browser import ARTIFACTS, _assert_changelist_fits, browser_page
from tests.peers import ROOT, sdk_server

__all__ = ["browser_page"]  # the fixture, shared with the operator's browser test

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DOCS_IMG = ROOT / "docs" / "img" if os.environ.get("NR_LLM_DOC_IMAGES") == "1" else ARTIFACTS


def _tool_calls_seen(url: str) -> int:
    log = requests.get(url.replace("/mcp", "/requests"), timeout=10).json()
    return sum(1 for entry in log if entry["method"] == "tools/call")


def test_a_call_waits_an_approver_approves_it_and_resume_answers(
    live_server, admin_user, browser_page, settings
):
    """Index "Approvals (1 waiting)" → the inbox lists the waiting call only; server list → "1
    awaiting approval"; the call's page with Approve and Deny in its first screen (arguments,
    digest, the tool as it was below) → Approve with a note → the agent's resume runs it once;
    a second call is denied; the Tool calls list shows Succeeded, Denied and Awaiting approval
    under the per-server summary, and fits 1280 px."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    with sdk_server("--stateless") as mcp_url:
        server = McpServer.objects.create(
            identifier="guarded",
            name="Guarded demo server",
            url=mcp_url,
            data_class="editorContent",
            enabled=True,
            requires_approval=True,
        )
        assert import_catalogue(server).ok
        McpTool.objects.filter(remote_name__in=["echo", "add"]).update(enabled=True)

        # The agent loop's call: held, the server not contacted.
        before = _tool_calls_seen(mcp_url)
        waiting = tools.execute("mcp_guarded_echo", {"text": "hello, approver"}, actor="support-bot")
        assert waiting.status == "awaiting_approval" and waiting.call_id is not None
        assert _tool_calls_seen(mcp_url) == before

        log_in(page, live_server.url)

        # The admin index counts the waiting call beside Approvals.
        assert page.get_by_role("link", name="Approvals (1 waiting)").count() >= 1

        # The server list counts the waiting call and links to it.
        page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/")
        _assert_changelist_fits(page)
        page.get_by_role("link", name="1 awaiting approval").click()
        page.wait_for_selector("#result_list")
        assert "Awaiting approval" in page.locator("#result_list tbody tr").first.inner_text()
        _assert_changelist_fits(page)

        # The inbox, from the index: the waiting call and nothing else.
        page.goto(f"{live_server.url}/admin/")
        page.get_by_role("link", name="Approvals (1 waiting)").first.click()
        page.wait_for_selector("#result_list")
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == 1 and "Awaiting approval" in rows.first.inner_text()
        chosen = page.locator("#changelist-filter li.selected").first.inner_text()
        assert "Waiting (to decide or to run)" in chosen
        page.screenshot(path=str(DOCS_IMG / "admin-approvals.png"))
        _assert_changelist_fits(page)

        # The call's page: Approve and Deny at the top, in the first screen (1280x800, not
        # scrolled); below them the arguments as JSON, the digest, the tool as it was.
        rows.first.locator("th a").click()
        page.wait_for_selector("#tool-call-decision")
        assert page.evaluate("window.scrollY") == 0
        height = page.viewport_size["height"]
        for name in ("Approve", "Deny"):
            box = page.get_by_role("button", name=name, exact=True).bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height, (name, box)
        arguments = page.locator("div.field-arguments_column pre").inner_text()
        assert '"text": "hello, approver"' in arguments
        call = ToolCall.objects.get(pk=waiting.call_id)
        assert call.arguments_digest in page.locator("div.field-digest_column").inner_text()
        assert "Echo" in page.locator("div.field-tool_description").inner_text() or "text" in (
            page.locator("div.field-schema_column").inner_text()
        )
        page.fill("#id_note", "Checked the text; fine to send.")
        page.screenshot(path=str(DOCS_IMG / "admin-tool-call-approve.png"))  # the first screen
        page.get_by_role("button", name="Approve", exact=True).click()
        page.wait_for_selector("ul.messagelist")
        message = page.locator("ul.messagelist").inner_text()
        assert re.search(
            r"Tool call [0-9a-f-]{36} approved \(self-approved\)|Tool call [0-9a-f-]{36} approved", message
        )
        assert page.get_by_role("button", name="Approve", exact=True).count() == 0
        assert page.get_by_role("button", name="Run approved call").count() == 1

        # The agent loop resumes: the tool runs once and answers.
        resumed = tools.resume(waiting.call_id)
        assert (resumed.status, resumed.text) == ("succeeded", "hello, approver")
        assert _tool_calls_seen(mcp_url) == before + 1
        again = tools.resume(waiting.call_id)
        assert again.status == "succeeded" and "already ran" in again.text
        assert _tool_calls_seen(mcp_url) == before + 1

        # A second call is denied from its page; a third is left waiting.
        denied = tools.execute("mcp_guarded_add", {"a": 2, "b": 3}, actor="support-bot")
        tools.execute("mcp_guarded_echo", {"text": "still waiting"}, actor="nightly-report")
        page.goto(f"{live_server.url}/admin/nr_llm/toolcall/{denied.call_id}/change/")
        page.fill("#id_note", "Not during the release freeze.")
        page.get_by_role("button", name="Deny").click()
        page.wait_for_selector("ul.messagelist")
        assert "denied; it will not run" in page.locator("ul.messagelist").inner_text()
        denied_result = tools.resume(denied.call_id)
        assert denied_result.status == "denied"
        assert "Not during the release freeze." in denied_result.text

        # The list shows the states, newest first, and fits the screen beside its filters.
        page.goto(f"{live_server.url}/admin/nr_llm/toolcall/")
        statuses = [
            cell.splitlines()[0]
            for cell in page.locator("#result_list td.field-status_column").all_inner_texts()
        ]
        assert statuses == ["Awaiting approval", "Denied", "Succeeded"], statuses
        # Above it, the per-server summary: three calls in 24 h, one failed none, one waiting.
        summary = page.locator("#tool-call-summary tbody tr").first.inner_text()
        assert summary.split()[:2] == ["guarded", "3"], summary
        page.screenshot(path=str(DOCS_IMG / "admin-tool-calls.png"))
        _assert_changelist_fits(page)

    assert ToolCall.objects.get(pk=waiting.call_id).status == ToolCallStatus.SUCCEEDED
