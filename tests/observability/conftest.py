"""Fixtures for the observability tests: captured logs, signals and a test URLconf."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import django
import pytest
from django.core.signals import got_request_exception

from .drivers import Capture


@pytest.fixture
def logs() -> Iterator[Capture]:
    """Every record reaching the root (django.*, nr_llm.*) plus the events, which do not propagate."""
    capture = Capture()
    loggers = [logging.getLogger(name) for name in ("", "nr_llm.requests")]
    for logger in loggers:
        logger.addHandler(capture)
    try:
        yield capture
    finally:
        for logger in loggers:
            logger.removeHandler(capture)


@pytest.fixture
def signals_sent() -> Iterator[list[object]]:
    sent: list[object] = []

    def receiver(sender, request=None, **kwargs):
        sent.append(request)

    got_request_exception.connect(receiver)
    try:
        yield sent
    finally:
        got_request_exception.disconnect(receiver)


@pytest.fixture
def site(settings, db):
    """Test URLconf and admins that would be mailed on a 500.

    ``db``: Django's handlers close stale connections at each request's start and end.
    """
    settings.ROOT_URLCONF = "tests.observability.urls"
    # Django 6 takes plain addresses and deprecates (name, address) pairs.
    address = "ops@example.invalid"
    settings.ADMINS = [address] if django.VERSION >= (6, 0) else [("Ops", address)]
    if django.VERSION >= (6, 1):
        # Without a configured mailer Django 6.1 warns on every mail_admins().
        settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    return settings
