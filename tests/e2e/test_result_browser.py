"""The Try page in a real browser (Debian's Chromium, Playwright): an answer's image is drawn from
its data URL at a fixed size, and a hostile answer (SVG, MIME injections, a javascript: link)
runs nothing."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool
from tests.e2e.chromium import chromium_page
from tests.factories import McpServerFactory
from tests.peers import ROOT, running

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def browser_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from django.db import connections

    # Playwright's sync API runs an event loop in this thread; the ORM reads stay synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with chromium_page(tmp_path / "chromium-profile", width=1280, height=800) as page:
        try:
            yield page
        finally:
            connections.close_all()


def test_the_try_page_draws_the_image_and_runs_nothing_of_a_hostile_answer(
    live_server, admin_user, browser_page, settings
) -> None:
    """The crafted answer's one PNG is decoded and drawn at 160 px; no dialog opens, no script ran,
    and the page links nowhere a javascript: URI would take it."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    with running([sys.executable, "-m", "tests.peers.result_server"]) as port:
        server = McpServerFactory.create(
            identifier="results", name="Results", url=f"http://127.0.0.1:{port}/mcp"
        )
        assert import_catalogue(server).ok
        McpTool.objects.update(enabled=True)
        tool = McpTool.objects.get(tool_name="mcp_results_pictures")
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", "password")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_selector("#user-tools")
        page.goto(f"{live_server.url}/admin/nr_llm/mcptool/{tool.pk}/try/")
        page.fill("#id_arguments", "{}")
        page.get_by_role("button", name="Run tool").click()
        page.wait_for_selector("#try-tool-result")
        drawn = page.evaluate(
            """() => [...document.querySelectorAll('#try-tool-result img')].map((image) => ({
                complete: image.complete, natural: image.naturalWidth,
                width: image.clientWidth, height: image.clientHeight,
            }))"""
        )
        assert drawn == [{"complete": True, "natural": 1, "width": 160, "height": 160}]
        assert (
            page.evaluate(
                "() => document.querySelectorAll('#try-tool-result a[href^=\"javascript\"]').length"
            )
            == 0
        )
        assert "image/svg+xml can carry script" in page.locator("#try-tool-text").inner_text()
        # The long note wraps: nothing of the result needs horizontal scrolling.
        assert page.evaluate("() => document.scrollingElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(ARTIFACTS / "admin-try-tool-images.png"), full_page=True)
    assert dialogs == []
