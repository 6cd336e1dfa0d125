"""execute() against a server of crafted answers (tests/peers/result_server.py): structured content
checked against the schema the operator enabled, hostile blocks dropped with a note, the ledger's
kind and preview, and nothing raised out of execute()."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.governance import preview
from nr_llm.mcp.wire.redaction import MASK
from nr_llm.models import McpServer, McpTool, ToolCall
from tests.factories import McpServerFactory
from tests.peers import running
from tests.peers.result_server import PNG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture
def results(settings) -> Iterator[None]:
    """The result server, imported as "results" with every tool enabled."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with running([sys.executable, "-m", "tests.peers.result_server"]) as port:
        server = McpServerFactory.create(
            identifier="results", name="Results", url=f"http://127.0.0.1:{port}/mcp"
        )
        assert import_catalogue(server).ok
        McpTool.objects.filter(server=server).update(enabled=True)
        yield


def test_a_credential_the_server_echoes_is_masked_in_text_blocks_and_structured_content(results) -> None:
    """The server quotes the bearer credential it was sent back in every part of its answer: the
    model reads the mask wherever it was, and the structured content still conforms."""
    server = McpServer.objects.get(identifier="results")
    server.auth_placement = "bearer"
    server.set_credential("tok-echoed-ABCDEF-123456")
    server.save()
    result, row = _run("tattle")
    assert not result.is_error, result.text
    assert "tok-echoed" not in repr(result) and "tok-echoed" not in preview.preview_of(row)
    assert result.structured == {"sent": f"Bearer {MASK}"}
    assert result.content[1]["resource"]["text"] == f"Bearer {MASK}"


def _run(name: str) -> tuple[tools.ToolResult, ToolCall]:
    result = tools.execute(f"mcp_results_{name}", {})
    assert result.call_id is not None
    return result, ToolCall.objects.get(pk=result.call_id)


def test_conforming_structured_content_is_kept_and_previewed(results, settings) -> None:
    """A conforming answer is ``structured``; the ledger's preview keeps it within the limit."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 200
    result, row = _run("weather")
    assert (result.is_error, result.structured) == (False, {"temperature": 33, "conditions": "Cloudy"})
    kept = preview.preview_of(row)
    assert '"temperature": 33' in kept and len(kept) <= 200


def test_a_non_conforming_answer_is_an_invalid_result_naming_the_mismatch(results) -> None:
    """The model is told the answer broke the declared schema (where and how); the ledger says
    ``invalid_result``; nothing of the answer is passed on."""
    result, row = _run("weather-wrong")
    assert result.is_error and result.structured is None and result.content == ()
    assert (
        "did not match its declared output schema: at $.temperature: 'hot' is not of type 'number'"
        in result.text
    )
    assert "may have run" not in result.text and "ran 'weather-wrong'" in result.text
    assert (row.status, row.error_kind) == ("failed", "invalid_result")


def test_an_is_error_answer_stays_the_servers_error(results) -> None:
    """isError with no structured content is the server's error text, not a schema mismatch."""
    result, row = _run("weather-failed")
    assert result.is_error and result.text.endswith("reported an error: no station in Atlantis")
    assert row.error_kind == "tool_error"


def test_hostile_blocks_are_dropped_with_notes_and_good_ones_kept(results) -> None:
    """Of one answer: the PNG, the audio, the https link, the text resource and the javascript: link
    (a URI is the server's identifier, kept as text: only admin HTML renders it, inert) are kept;
    bad base64, SVG, two MIME injections and an unknown type are named in the leading note."""
    result, _ = _run("pictures")
    assert not result.is_error
    assert [(block["type"], block.get("mimeType")) for block in result.content] == [
        ("text", None),
        ("image", "image/png"),
        ("audio", "audio/wav"),
        ("resource_link", None),
        ("resource_link", None),
        ("resource", None),
    ]
    assert result.images == ({"type": "image", "data": PNG, "mimeType": "image/png"},)
    note = result.text.split("\n", 1)[0]
    for reason in (
        "its data is not valid base64",
        "image/svg+xml can carry script",
        "'image/png;base64,AAAA' is not a plain type/subtype",
        "is not a plain type/subtype",
        "a content block of type 'hologram' was not passed on",
    ):
        assert reason in note
    assert "onerror" not in repr(result.content)
    assert "[resource link: click <javascript:alert(1)>]" in result.text
    assert "[resource demo://note]\na note" in result.text


def test_an_oversized_image_is_dropped_with_a_note(results) -> None:
    """A 1 MB image is over the default per-block cap: dropped, and the text says so."""
    result, _ = _run("huge-image")
    assert result.content == () and "over the 1048576-byte block cap" in result.text


def test_the_block_cap_is_a_setting(results, settings) -> None:
    """NR_LLM_TOOL_RESULT_BLOCK_BYTES raised to 2 MB keeps that image."""
    settings.NR_LLM_TOOL_RESULT_BLOCK_BYTES = 2_000_000
    result, _ = _run("huge-image")
    assert [block["type"] for block in result.content] == ["image"]


@pytest.mark.parametrize(
    ("name", "kind"), [("flood", "may_have_run:too_large"), ("deep-10000", "may_have_run:malformed")]
)
def test_fifty_megabytes_or_ten_thousand_levels_are_an_error_result_not_an_exception(
    results, name, kind
) -> None:
    """The body cap stops 50 MB of base64; a 10,000-deep structure is no JSON this client reads:
    either way execute() returns a failed result, recorded with its kind."""
    result, row = _run(name)
    assert result.is_error and row.error_kind == kind


def test_a_structure_nested_500_deep_is_an_invalid_result(results) -> None:
    """Python's json reads 500 levels; the client keeps none over 64, so the declared schema is
    missed, and the text says why."""
    result, row = _run("deep-500")
    assert result.is_error and "nested deeper than 64 levels" in result.text
    assert row.error_kind == "invalid_result"
