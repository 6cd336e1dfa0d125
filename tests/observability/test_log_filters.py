"""One line per request: django.request's 4xx warnings give way to the access record."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.core.handlers.wsgi import WSGIHandler

from nr_llm.observability.log_filters import AccessRecordedFilter

from .drivers import wrapped_wsgi, wsgi_call

ACCESS = logging.getLogger("nr_llm.access")


def levels(logs, name: str) -> list[str]:
    return [record.levelname for record in logs.named(name)]


@pytest.fixture
def access_off() -> Iterator[None]:
    """Nothing listens to nr_llm.access below ERROR, as in a site that does not route it."""
    before = ACCESS.level
    ACCESS.setLevel(logging.ERROR)
    try:
        yield
    finally:
        ACCESS.setLevel(before)


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/missing/", "404"), ("POST", "/reason/", "400")]
)
def test_a_4xx_is_one_access_record_and_no_django_request_warning(site, logs, method, path, status):
    """With the demo's LOGGING, a 404 or a 400 is the access WARNING alone: the filter on
    django.request drops Django's "Not Found"/"Bad Request" for a request the access record covers."""
    got, _ = wsgi_call(wrapped_wsgi(), method, path, body=b"{oops" if method == "POST" else b"")
    assert got.startswith(status)
    assert levels(logs, "django.request") == []
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("WARNING", int(status))


def test_the_warning_stays_when_nothing_records_the_access(site, logs, access_off):
    """Where nr_llm.access is not listened to at WARNING, Django's warning is the only line and stays."""
    got, _ = wsgi_call(wrapped_wsgi(), "GET", "/missing/")
    assert got.startswith("404")
    assert logs.named("nr_llm.access") == []
    assert levels(logs, "django.request") == ["WARNING"]


def test_the_warning_stays_for_a_request_no_completion_saw(site, logs):
    """Without the wrapper and the middleware there is no access record, so the warning stays."""
    site.MIDDLEWARE = [entry for entry in site.MIDDLEWARE if not entry.startswith("nr_llm.")]
    got, _ = wsgi_call(WSGIHandler(), "GET", "/missing/")  # type: ignore[arg-type]
    assert got.startswith("404")
    assert logs.named("nr_llm.access") == []
    assert levels(logs, "django.request") == ["WARNING"]


def test_errors_always_pass():
    """An ERROR record (a 5xx and its traceback) passes whatever the request."""
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "boom", None, None)
    record.request = object()
    assert AccessRecordedFilter().filter(record) is True


def test_the_demo_logging_installs_the_filter_on_django_request():
    """project/settings.py's LOGGING puts the filter on django.request (the demo's console)."""
    filters = logging.getLogger("django.request").filters
    assert any(isinstance(entry, AccessRecordedFilter) for entry in filters)
