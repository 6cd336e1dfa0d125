"""Tool results as models take them: blocks kept in MCP shape, cleaned and capped; structured
content checked against the output schema; what is dropped named in a leading note."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nr_llm.mcp import CallOutcome, McpTransportError
from nr_llm.mcp.protocol.content import ContentLimits, conform_outcome, masked_outcome, outcome_of

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
SCHEMA = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
    "required": ["temperature", "conditions"],
}


def _image(data: str = PNG, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime}


def test_text_blocks_are_joined_with_newlines_and_kept_as_blocks() -> None:
    """Two text blocks become one text and stay two blocks."""
    outcome = outcome_of(
        {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}, "demo"
    )
    assert outcome.text == "one\ntwo"
    assert outcome.content == ({"type": "text", "text": "one"}, {"type": "text", "text": "two"})


def test_every_mcp_block_type_is_kept_in_mcp_shape_and_named_in_the_text() -> None:
    """image, audio, resource_link and resource (text and blob) are kept; the text names each in
    order, and an embedded text resource's text is part of the text."""
    blob = base64.b64encode(b"\x1f\x8b gzip").decode()
    result = {
        "content": [
            {"type": "text", "text": "caption"},
            _image(),
            {"type": "audio", "data": WAV, "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "https://example.org/a", "name": "a", "mimeType": "text/plain"},
            {
                "type": "resource",
                "resource": {"uri": "demo://r/1", "mimeType": "text/plain", "text": "inside"},
            },
            {
                "type": "resource",
                "resource": {"uri": "demo://r/2", "mimeType": "application/gzip", "blob": blob},
            },
        ]
    }
    outcome = outcome_of(result, "demo")
    assert [block["type"] for block in outcome.content] == [
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
        "resource",
    ]
    assert outcome.content[1] == {"type": "image", "data": PNG, "mimeType": "image/png"}
    assert outcome.content[5]["resource"] == {
        "uri": "demo://r/2",
        "mimeType": "application/gzip",
        "blob": blob,
    }
    assert outcome.text == (
        "caption\n[image: image/png, 70 bytes]\n[audio: audio/wav, 16 bytes]\n"
        "[resource link: a <https://example.org/a>]\n[resource demo://r/1]\ninside\n"
        "[resource demo://r/2: application/gzip, not text]"
    )


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        (_image(data="not base64!"), "an image block was dropped: its data is not valid base64"),
        (_image(mime="image/svg+xml"), "an image block was dropped: image/svg+xml can carry script"),
        (_image(mime="text/html"), "its MIME type 'text/html' is not image"),
        (_image(mime="image/png;base64,AAAA"), "is not a plain type/subtype"),
        (_image(mime='image/png" onerror="x'), "is not a plain type/subtype"),
        ({"type": "audio", "data": PNG, "mimeType": "image/png"}, "its MIME type 'image/png' is not audio"),
        (
            {"type": "resource_link", "uri": "   ", "name": "x"},
            "a resource_link block was dropped: it has no URI",
        ),
        ({"type": "resource", "resource": {"uri": "demo://x"}}, "neither text nor blob"),
        ({"type": "hologram"}, "a content block of type 'hologram' was not passed on"),
        ("not even a block", "a content block of no type was not passed on"),
    ],
)
def test_a_bad_block_is_dropped_with_a_leading_note(block: object, reason: str) -> None:
    """A block that cannot be passed on safely is not kept; the note naming why leads the text."""
    outcome = outcome_of({"content": [{"type": "text", "text": "kept"}, block]}, "demo")
    assert outcome.content == ({"type": "text", "text": "kept"},)
    note, text = outcome.text.split("\n")
    assert note.startswith("[") and reason in note and text == "kept"


@pytest.mark.parametrize(
    "uri", ["file:///srv/notes/a.txt", "javascript:alert(1)", "data:text/html,<b>", "custom+scheme://x/y"]
)
def test_any_uri_scheme_is_kept_as_an_identifier(uri: str) -> None:
    """A URI is the server's identifier, never followed or rendered here: file:, custom schemes
    and even javascript: are kept with their text (HTML rendering neutralises them, links.py)."""
    outcome = outcome_of(
        {"content": [{"type": "resource", "resource": {"uri": uri, "text": "inside"}}]}, "demo"
    )
    assert outcome.content == ({"type": "resource", "resource": {"uri": uri, "text": "inside"}},)
    assert outcome.text == f"[resource {uri}]\ninside"


def test_fifty_megabytes_of_base64_are_dropped_without_decoding() -> None:
    """A 50 MB image is refused by its size, with a note."""
    outcome = outcome_of({"content": [_image(data="A" * 50_000_000)]}, "demo")
    assert outcome.content == ()
    assert "over the 1048576-byte block cap" in outcome.text


def test_the_total_cap_drops_what_would_exceed_it() -> None:
    """Blocks are kept until the answer's total cap; the next one is dropped with a note."""
    limits = ContentLimits(block_bytes=100, total_bytes=150)
    outcome = outcome_of({"content": [{"type": "text", "text": "x" * 100}, _image()]}, "demo", limits=limits)
    assert [block["type"] for block in outcome.content] == ["text"]
    assert "would take the answer over its 150-byte cap" in outcome.text


def test_a_long_text_block_is_clipped_with_a_note() -> None:
    """A text block over the block cap keeps its start; the note says it was clipped."""
    outcome = outcome_of(
        {"content": [{"type": "text", "text": "y" * 300}]}, "demo", limits=ContentLimits(200, 1000)
    )
    assert outcome.content == ({"type": "text", "text": "y" * 200},)
    assert outcome.text.startswith("[a text block was clipped at 200 characters]\n")


def test_control_characters_are_stripped_from_text_but_line_breaks_stay() -> None:
    """Escape sequences and bidi overrides go; newlines and tabs stay."""
    outcome = outcome_of({"content": [{"type": "text", "text": "a\x1b[31m\u202eb\n\tc\x00"}]}, "demo")
    assert outcome.text == "a[31mb\n\tc"


def test_is_error_true_is_a_failed_outcome() -> None:
    """isError: true gives is_error=True with the text; anything but true is success."""
    assert outcome_of({"content": [{"type": "text", "text": "boom"}], "isError": True}, "demo").is_error
    assert outcome_of({"content": [], "isError": "yes"}, "demo").is_error is False


def test_structured_content_is_mirrored_as_json_when_there_is_no_text() -> None:
    """With no text block the text reader gets the structured content as JSON."""
    assert outcome_of({"content": [], "structuredContent": {"n": 1}}, "demo").text == '{"n": 1}'


def test_conforming_structured_content_is_kept() -> None:
    """Against a declared schema, conforming structured content is ``structured``."""
    value = {"temperature": 33, "conditions": "Cloudy"}
    outcome = outcome_of(
        {"content": [{"type": "text", "text": "{}"}], "structuredContent": value}, "demo", SCHEMA
    )
    assert (outcome.structured, outcome.is_error, outcome.mismatch) == (value, False, "")


def test_non_conforming_structured_content_is_an_error_naming_the_first_mismatch() -> None:
    """A mismatch is an error outcome; the text names where and how; nothing of the answer is kept."""
    outcome = outcome_of(
        {
            "content": [{"type": "text", "text": "hot"}],
            "structuredContent": {"temperature": "hot", "conditions": "x"},
        },
        "demo",
        SCHEMA,
    )
    assert outcome.is_error and outcome.structured is None and outcome.content == ()
    assert outcome.text == (
        "the server's answer did not match its declared output schema: "
        "at $.temperature: 'hot' is not of type 'number'"
    )


def test_a_declared_schema_without_structured_content_is_a_mismatch() -> None:
    """A tool that declares an output schema must answer with structured content."""
    outcome = outcome_of({"content": [{"type": "text", "text": "hi"}]}, "demo", SCHEMA)
    assert outcome.is_error and "it sent no structured content" in outcome.mismatch


def test_validation_never_masks_an_is_error_answer() -> None:
    """isError stays the server's own error text, however its structured content looks."""
    result = {"content": [{"type": "text", "text": "no weather"}], "isError": True, "structuredContent": {}}
    outcome = outcome_of(result, "demo", SCHEMA)
    assert (outcome.is_error, outcome.text, outcome.mismatch, outcome.structured) == (
        True,
        "no weather",
        "",
        None,
    )


def test_without_a_declared_schema_structured_content_is_not_kept() -> None:
    """``conform`` with no schema: nothing was promised, so nothing is ``structured``."""
    outcome = conform_outcome(outcome_of({"content": [], "structuredContent": {"a": 1}}, "demo"), {})
    assert outcome.structured is None and outcome.text == '{"a": 1}'


def test_deeply_nested_structured_content_is_refused_without_recursion() -> None:
    """500 levels (parseable by Python's json) are not kept; against a schema that is a mismatch."""
    nested: dict[str, Any] = {}
    for _ in range(500):
        nested = {"a": nested}
    outcome = outcome_of({"content": [], "structuredContent": nested}, "demo", {"type": "object"})
    assert outcome.is_error and "nested deeper than 64 levels" in outcome.mismatch
    plain = outcome_of({"content": [], "structuredContent": nested}, "demo")
    assert plain.text == "[structured content nested deeper than 64 levels was not kept]"


def test_an_unusable_output_schema_is_a_mismatch_not_a_crash() -> None:
    """A schema jsonschema rejects, or a $ref it cannot resolve, fails closed."""
    bad = outcome_of({"content": [], "structuredContent": {}}, "demo", {"type": 12})
    assert bad.is_error and "cannot be used" in bad.mismatch
    remote = {"$ref": "https://example.org/schema.json"}
    unresolved = outcome_of({"content": [], "structuredContent": {}}, "demo", remote)
    assert unresolved.is_error and "cannot be used" in unresolved.mismatch


def test_masked_reaches_every_text_but_not_base64() -> None:
    """A secret is masked in text, blocks and structured content; image data is untouched."""
    result = {
        "content": [{"type": "text", "text": "token s3cret"}, _image()],
        "structuredContent": {"echo": ["s3cret"]},
    }
    outcome = masked_outcome(outcome_of(result, "demo"), lambda text: text.replace("s3cret", "[credential]"))
    assert "s3cret" not in repr(outcome)
    assert outcome.content[1]["data"] == PNG and outcome.structured == {"echo": ["[credential]"]}


def test_content_that_is_not_a_list_is_malformed() -> None:
    """content must be a list; otherwise 'malformed' naming the server."""
    with pytest.raises(McpTransportError) as caught:
        outcome_of({"content": "text"}, "demo")
    assert caught.value.kind == "malformed" and "'demo'" in str(caught.value)


def test_an_outcome_built_with_text_alone_still_works() -> None:
    """The historical three fields still make an outcome (local fakes, older callers)."""
    assert CallOutcome("x", False).content == () and CallOutcome("x", False).structured is None
