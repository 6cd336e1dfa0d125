"""tools.tool_messages: a turn's results in each provider's shape, checked against the providers'
published request types (the ``openai`` and ``anthropic`` packages' typed dicts), no network."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam
from openai.types.responses import ResponseInputItemParam

from nr_llm.tools import ToolResult, tool_messages
from tests.provider_types import assert_conforms

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
WEATHER = ToolResult(
    '{"t": 33}', False, "demo", content=({"type": "text", "text": '{"t": 33}'},), structured={"t": 33}
)
PICTURE = ToolResult(
    "a pixel\n[image: image/png, 70 bytes]",
    False,
    "demo",
    content=({"type": "text", "text": "a pixel"}, IMAGE),
)
FAILED = ToolResult('MCP server "Demo" (demo) reported an error: boom', True, "demo", "failed")
WAITING = ToolResult(
    "requires an operator's approval: the call has not run.", False, "demo", "awaiting_approval", uuid.uuid4()
)
DENIED = ToolResult("was denied by ann. It did not run and will not.", True, "demo", "denied")


def test_openai_gives_one_tool_message_per_call_in_order() -> None:
    """Chat Completions: a role "tool" message per call with its tool_call_id, the text as content."""
    messages = tool_messages("openai", [("call_1", WEATHER), ("call_2", FAILED)])
    assert messages == [
        {"role": "tool", "tool_call_id": "call_1", "content": '{"t": 33}'},
        {"role": "tool", "tool_call_id": "call_2", "content": FAILED.text},
    ]
    for message in messages:
        assert_conforms(ChatCompletionToolMessageParam, message)


def test_openai_images_follow_in_one_user_message_naming_their_call() -> None:
    """Tool messages carry text only: images come after every tool message, in one user message of
    image_url data-URL parts, each call's led by a text part naming it."""
    messages = tool_messages("openai", [("call_1", PICTURE), ("call_2", WEATHER), ("call_3", PICTURE)])
    assert [message["role"] for message in messages] == ["tool", "tool", "tool", "user"]
    assert messages[0]["content"].endswith("[1 image(s) of this call follow in the next user message]")
    url = f"data:image/png;base64,{PNG}"
    assert messages[3]["content"] == [
        {"type": "text", "text": "Images returned by tool call call_1:"},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "text", "text": "Images returned by tool call call_3:"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    for message in messages:
        assert_conforms(ChatCompletionMessageParam, message)


def test_openai_responses_gives_function_call_output_items_with_input_images() -> None:
    """Responses: a function_call_output per call; with images the output is input_text and
    input_image parts."""
    items = tool_messages("openai-responses", [("fc_1", WEATHER), ("fc_2", PICTURE)])
    assert items[0] == {"type": "function_call_output", "call_id": "fc_1", "output": '{"t": 33}'}
    assert items[1]["output"] == [
        {"type": "input_text", "text": PICTURE.text},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
    ]
    for item in items:
        assert_conforms(ResponseInputItemParam, item)


def test_anthropic_gives_one_user_message_of_tool_results_in_order() -> None:
    """Anthropic: ONE user message, a tool_result per call in the given order, is_error set,
    images as base64 image blocks."""
    (message,) = tool_messages("anthropic", [("toolu_2", FAILED), ("toolu_1", PICTURE)])
    assert message["role"] == "user"
    assert [block["tool_use_id"] for block in message["content"]] == ["toolu_2", "toolu_1"]
    assert [block["is_error"] for block in message["content"]] == [True, False]
    assert message["content"][1]["content"] == [
        {"type": "text", "text": PICTURE.text},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]
    assert_conforms(MessageParam, message)


@pytest.mark.parametrize("result", [WAITING, DENIED], ids=["awaiting_approval", "denied"])
def test_a_call_that_did_not_run_still_gets_its_result(result: ToolResult) -> None:
    """Every call is answered (the providers refuse a turn with an unanswered call): the text
    says it did not run, and Anthropic's is_error is set even for a call awaiting approval."""
    chat = tool_messages("openai", [("call_1", result)])
    assert chat == [{"role": "tool", "tool_call_id": "call_1", "content": result.text}]
    (item,) = tool_messages("openai-responses", [("fc_1", result)])
    assert item["output"] == result.text
    (message,) = tool_messages("anthropic", [("toolu_1", result)])
    assert message["content"][0]["is_error"] is True
    assert_conforms(MessageParam, message)


def test_an_image_of_a_type_the_providers_refuse_is_not_sent() -> None:
    """A BMP (kept by the client: it is an image) is named in the text but sent to no provider."""
    bmp = ToolResult(
        "[image: image/bmp, 70 bytes]", False, "demo", content=({**IMAGE, "mimeType": "image/bmp"},)
    )
    assert tool_messages("openai", [("c", bmp)]) == [
        {"role": "tool", "tool_call_id": "c", "content": bmp.text}
    ]
    (message,) = tool_messages("anthropic", [("c", bmp)])
    assert message["content"][0]["content"] == [{"type": "text", "text": bmp.text}]


def test_an_empty_result_says_so() -> None:
    """Anthropic refuses an empty text block: an empty answer is said in words."""
    (message,) = tool_messages("anthropic", [("c", ToolResult("", False))])
    assert message["content"][0]["content"] == [{"type": "text", "text": "(the tool returned no content)"}]
    assert_conforms(MessageParam, message)


def test_an_unknown_provider_is_a_value_error() -> None:
    """A misspelt provider is the site's bug: it is said at once."""
    with pytest.raises(ValueError, match="unknown provider 'gemini'"):
        tool_messages("gemini", [])  # type: ignore[arg-type]


def test_results_carrying_their_provider_ids_need_no_pairs() -> None:
    """What execute_many returns goes in as it is; a pair says the same."""
    carried = [replace(WEATHER, tool_call_id="call_1"), replace(FAILED, tool_call_id="call_2")]
    assert tool_messages("openai", carried) == tool_messages(
        "openai", [("call_1", WEATHER), ("call_2", FAILED)]
    )
    (message,) = tool_messages("anthropic", carried)
    assert [block["tool_use_id"] for block in message["content"]] == ["call_1", "call_2"]


def test_a_result_without_a_provider_id_is_a_value_error() -> None:
    """Sent without one, the provider would refuse the whole conversation: said here, at once."""
    with pytest.raises(ValueError, match="tool_call_id"):
        tool_messages("openai", [WEATHER])


JPEG = (
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAP////////////////////////////////////////////////////////"
    "//////////////////////////////2wBDAf//////////////////////////////////////////////////////"
    "////////////////////////////////wAARCAABAAEDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAP/xA"
    "AUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFAEBAAAAAAAAAAAAAAAAAAAAAP/EABQRAQAAAAAAAAAAAAAAAAAAAAD/2gAM"
    "AwEAAhEDEQA/AKAP/9k="
)


@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic"])
def test_an_image_whose_bytes_are_not_its_declared_type_is_left_out_with_a_note(format) -> None:
    """A JPEG labelled image/png would make the provider refuse the whole conversation: it is not
    sent, the model reads why, and the truly PNG image of the same call still goes."""
    mislabelled = {"type": "image", "data": JPEG, "mimeType": "image/png"}
    result = ToolResult("two pictures", False, "demo", content=(IMAGE, mislabelled))
    messages = tool_messages(format, [("c", result)])
    shown = str(messages)
    assert JPEG not in shown and PNG in shown
    assert "[1 image(s) left out: the bytes are not the declared image/png]" in shown
    published = {"openai": ChatCompletionMessageParam, "openai-responses": ResponseInputItemParam}
    for message in messages:
        assert_conforms(published.get(format, MessageParam), message)


@pytest.mark.parametrize("data", [JPEG, "not base64!", "", "UklGRgAAAABXRUJQ"])
def test_only_bytes_that_begin_as_their_type_are_sent(data) -> None:
    """PNG, JPEG, GIF and WebP are told by their first bytes; anything else is not the type it says."""
    kinds = {JPEG: "image/jpeg", "UklGRgAAAABXRUJQ": "image/webp"}
    for declared in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        block = {"type": "image", "data": data, "mimeType": declared}
        result = ToolResult("x", False, "demo", content=(block,))
        (item,) = tool_messages("openai-responses", [("c", result)])
        assert isinstance(item["output"], list) == (kinds.get(data) == declared), (data[:10], declared)


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n"])
@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic"])
def test_a_whitespace_only_answer_becomes_a_note(text, format) -> None:
    """Anthropic refuses a tool result whose text is only whitespace: it is said in words, in every format."""
    (message, *_) = tool_messages(format, [("c", ToolResult(text, False))])
    assert "(the tool returned no content)" in str(message)
