"""docs/tool-api.md's signature blocks are the code's (regenerate: python -m tests.docs.signatures)."""

from __future__ import annotations

from tests.docs import signatures


def test_the_signature_blocks_match_the_code() -> None:
    page = signatures.PAGE.read_text()
    assert signatures.rendered(page) == page, "run: python -m tests.docs.signatures"


def test_every_public_function_has_a_block() -> None:
    page = signatures.PAGE.read_text()
    for name in (
        "tools.execute_many",
        "tools.aexecute_many",
        "tools.tool_messages",
        "tools.using_client",
        "resources.aread",
        "prompts.acomplete",
    ):
        assert f"### `nr_llm.{name}`" in page
