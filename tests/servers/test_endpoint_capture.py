"""Whether a server's error text may describe a span: the site's content capture, per data class."""

from __future__ import annotations

import pytest
from django.test import override_settings

from nr_llm.servers.endpoints import endpoint_for

from ..factories import McpServerFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("setting", "data_class", "captured"),
    [
        ("", "publicContent", False),  # not opted in
        ("editorContent", "publicContent", True),
        ("editorContent", "editorContent", True),
        ("editorContent", "secretAdjacent", False),  # above what the site opted into
    ],
)
def test_an_endpoint_captures_content_only_within_the_sites_setting(
    setting: str, data_class: str, captured: bool
) -> None:
    """``capture_content`` follows NR_LLM_OTEL_CAPTURE_CONTENT against the server's data class."""
    server = McpServerFactory.create(data_class=data_class)
    with override_settings(NR_LLM_OTEL_CAPTURE_CONTENT=setting):
        assert endpoint_for(server).capture_content is captured
