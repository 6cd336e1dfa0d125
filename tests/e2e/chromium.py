"""Debian's Chromium driven by Playwright (never a downloaded browser), for the browser tests.

Without Chromium a browser test fails, saying how to install it: a green run that skipped
the admin's browser tests would read as "the admin was tested". ``NR_LLM_ALLOW_BROWSER_SKIP=1``
skips them instead, and the end of the run says so loudly (tests/conftest.py); CI never sets it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DEFAULT_CHROMIUM = "/usr/bin/chromium"
TIMEOUT_MS = 30_000
ALLOW_SKIP = "NR_LLM_ALLOW_BROWSER_SKIP"
INSTALL_COMMAND = "sudo apt-get install chromium"
#: Leads every browser skip's reason, so the end-of-run summary can find them.
SKIP_MARK = "browser test skipped:"


def chromium() -> Path:
    """The browser to drive: NR_LLM_CHROMIUM, else Debian's."""
    return Path(os.environ.get("NR_LLM_CHROMIUM") or DEFAULT_CHROMIUM)


def _missing(path: Path) -> None:
    """Fail (or, where allowed, skip) the test that needs a browser when there is none."""
    why = f"Debian's chromium is not installed ({path} is missing); install it with: {INSTALL_COMMAND}"
    if os.environ.get(ALLOW_SKIP) == "1":
        pytest.skip(f"{SKIP_MARK} {why}")
    pytest.fail(f"{why} (or set {ALLOW_SKIP}=1 to skip the browser tests)", pytrace=False)


@contextlib.contextmanager
def chromium_page(profile: Path, *, width: int = 1600, height: int = 900) -> Iterator[Any]:
    """A page in a fresh headless Chromium profile."""
    path = chromium()
    if not path.exists():
        _missing(path)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(path),
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
