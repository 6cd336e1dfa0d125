"""A tool's Try page answers the server's questions (elicitation), in real Chromium against the
official SDK server (tests/peers/features_server.py): the form drawn from the requested schema
with its defaults, accept / decline / cancel reaching the waiting call, an invalid answer
refused on the page, and a URL-mode request shown as text only (its hostile scheme never a link,
never opened)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool, ToolCall
from tests.e2e.chromium import chromium_page, log_in
from tests.factories import McpServerFactory
from tests.peers import ROOT, VERIFY_URL, running

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def browser_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from django.db import connections

    # Playwright's sync API runs an event loop in this thread; the ORM reads stay synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with chromium_page(tmp_path / "chromium-profile", width=1280, height=900) as page:
        try:
            yield page
        finally:
            connections.close_all()


@pytest.fixture(params=["handshake", "modern"])
def tools(request: pytest.FixtureRequest, settings: Any) -> Iterator[dict[str, McpTool]]:
    """reserve (a form) and verify (a URL) of the features peer, in either protocol era."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    era = ["--no-discover"] if request.param == "handshake" else ["--modern-only"]
    with running([sys.executable, "-m", "tests.peers.features_server", *era]) as port:
        server = McpServerFactory.create(identifier="feat", url=f"http://127.0.0.1:{port}/mcp")
        assert import_catalogue(server).ok
        McpTool.objects.update(enabled=True)
        yield {tool.remote_name: tool for tool in McpTool.objects.all()}


def _run(page: Any, site: str, tool: McpTool) -> None:
    page.goto(f"{site}/admin/nr_llm/mcptool/{tool.pk}/try/")
    page.fill("#id_arguments", "{}")
    page.get_by_role("button", name="Run tool").click()


def _result(page: Any) -> str:
    page.wait_for_selector("#try-tool-result")
    return str(page.inner_text("#try-tool-text"))


def test_the_operator_answers_a_form_and_the_call_gets_it(
    live_server: Any, admin_user: Any, browser_page: Any, tools: dict[str, McpTool]
) -> None:
    """The requested schema as fields (defaults filled in), a missing required field refused on
    the page, then the answer accepted: the server books with it and the schema's defaults."""
    page = browser_page
    log_in(page, live_server.url)
    _run(page, live_server.url, tools["reserve"])
    page.wait_for_selector("#try-tool-answer")
    assert page.inner_text("#try-tool-question-message") == "When would you like to come?"
    assert page.input_value("#id_answer-guests") == "2"
    assert page.is_checked("#id_answer-confirm")
    assert page.input_value("#id_answer-date") == ""
    page.get_by_role("button", name="Accept").click()
    page.wait_for_selector("#try-tool-answer .errorlist")
    assert "This field is required." in page.inner_text("#try-tool-answer")
    page.fill("#id_answer-date", "Friday")
    page.fill("#id_answer-guests", "3")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "try-elicitation-form.png"))
    page.get_by_role("button", name="Accept").click()
    assert _result(page) == "reserved Friday for 3 (confirm=True)"
    row = ToolCall.objects.get(tool_name="mcp_feat_reserve")
    assert (row.status, row.actor_label) == ("succeeded", "admin")


@pytest.mark.parametrize("action", ["Decline", "Cancel"])
def test_decline_and_cancel_reach_the_call(
    live_server: Any, admin_user: Any, browser_page: Any, tools: dict[str, McpTool], action: str
) -> None:
    page = browser_page
    log_in(page, live_server.url)
    _run(page, live_server.url, tools["reserve"])
    page.wait_for_selector("#try-tool-answer")
    page.get_by_role("button", name=action).click()
    assert _result(page) == f"not reserved: {action.lower()}"


def test_a_url_request_is_text_never_a_link_and_never_opened(
    live_server: Any, admin_user: Any, browser_page: Any, tools: dict[str, McpTool], request: Any
) -> None:
    """The server's javascript: URL is shown as text; nothing on the page links to it, no dialog
    opens, no request leaves for it; the operator's accept reaches the server."""
    if "modern" in request.node.callspec.id:
        # The SDK 2.3 refuses ctx.elicit_url there: "no back-channel for server-initiated requests".
        pytest.skip("the SDK server sends URL-mode elicitation in the handshake era only")
    page = browser_page
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    log_in(page, live_server.url)
    _run(page, live_server.url, tools["verify"])
    page.wait_for_selector("#try-tool-answer")
    assert page.inner_text("#try-tool-question-url") == VERIFY_URL
    assert page.evaluate("() => document.querySelectorAll('#try-tool-question a').length") == 0
    assert page.evaluate("() => document.querySelectorAll('a[href^=\"javascript\"]').length") == 0
    page.get_by_role("button", name="Accept").click()
    assert _result(page) == "verify: accept"
    assert dialogs == []
