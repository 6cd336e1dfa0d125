"""URI templates: a URI built from a model's input is read only when the template describes it."""

from __future__ import annotations

import pytest

from nr_llm.mcp.protocol.templates import TemplateError, expand_template, template_matches


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("notes://{topic}/page", "notes://rust/page"),
        ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/12"),
        ("file:///srv/{+path}", "file:///srv/a/b/c.txt"),
        ("api://items{?page,size}", "api://items?page=2&size=10"),
        ("api://items{?page,size}", "api://items"),
    ],
)
def test_a_uri_the_template_describes_matches(template: str, uri: str) -> None:
    assert template_matches(template, uri)


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("notes://{topic}/page", "notes://a/b/page"),  # a simple value is one segment
        ("notes://{topic}/page", "notes://../page"),
        ("notes://{topic}/page", "notes://%2e%2e/page"),
        ("file:///srv/{+path}", "file:///srv/../etc/passwd"),
        ("file:///srv/{+path}", "file:///srv/a/%2E%2E/%2E%2E/etc/passwd"),
        ("notes://{topic}/page", "other://rust/page"),
        ("notes://{topic}/page", "notes://rust/page?x=1"),
        ("notes://{topic}/page", "notes://ru st/page"),
        ("notes://{topic/page", "notes://x/page"),
    ],
)
def test_a_uri_that_escapes_the_template_does_not_match(template: str, uri: str) -> None:
    assert not template_matches(template, uri)


def test_expansion_percent_encodes_what_would_leave_the_segment() -> None:
    assert expand_template("notes://{topic}/page", {"topic": "a/b?c"}) == "notes://a%2Fb%3Fc/page"
    with pytest.raises(TemplateError, match="climbs out"):
        expand_template("file:///srv/{+path}", {"path": "../etc/passwd"})
    with pytest.raises(TemplateError, match="no value for 'topic'"):
        expand_template("notes://{topic}/page", {})
