"""Debian's Chromium driven by Playwright (never a downloaded browser), for the browser tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 30_000


@contextlib.contextmanager
def chromium_page(profile: Path, *, width: int = 1600, height: int = 900) -> Iterator[Any]:
    """A page in a fresh headless Chromium profile; skips the test where Chromium is missing."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it with apt-get)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
            viewport={"width": width, "height": height},
        )
        context.set_default_timeout(TIMEOUT_MS)
        try:
            yield context.new_page()
        finally:
            context.close()


def log_in(page: Any, site: str, username: str = "admin", password: str = "password") -> None:
    """Sign in to the admin at ``site`` (pytest-django's admin_user by default)."""
    page.goto(f"{site}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#user-tools")
