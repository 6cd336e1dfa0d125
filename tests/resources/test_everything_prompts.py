"""server-everything's prompts (npm, handshake era) through the site API, in each provider's
published message type: text, its embedded resource and its arguments, as the openai and
anthropic packages take them (the SDK server's prompts: test_site_api.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam

from nr_llm import prompts
from nr_llm.catalogue import enable_features, import_catalogue
from nr_llm.models import McpFeature, McpServer
from tests import catalogue_peers
from tests.peers import running
from tests.provider_types import assert_conforms

from ..factories import McpServerFactory
from ..mcp.protocol.test_features_peers import EVERYTHING, PEERS_DIR

loopback_allowed = catalogue_peers.loopback_allowed
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.usefixtures("loopback_allowed"),
]
#: A value for each required argument server-everything's prompts declare.
ARGUMENTS = {
    "city": "Leipzig",
    "resourceType": "Text",
    "resourceId": "1",
    "department": "Engineering",
    "name": "Alice",
}
PUBLISHED: dict[str, Any] = {
    "openai": ChatCompletionMessageParam,
    "openai-responses": ResponseInputItemParam,
    "anthropic": MessageParam,
}


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    with running(["node", "-r", str(PEERS_DIR / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def everything(everything_url: str) -> McpServer:
    server = McpServerFactory.create(identifier="everything", url=everything_url, data_class="publicContent")
    assert import_catalogue(server).ok
    enable_features(McpFeature.objects.filter(server=server).values_list("pk", flat=True))
    return server


@pytest.mark.parametrize("provider", sorted(PUBLISHED))
def test_every_prompt_comes_in_the_providers_published_shape(everything: McpServer, provider: str) -> None:
    listed = prompts.available()
    assert {"simple-prompt", "args-prompt", "resource-prompt"} <= {prompt.name for prompt in listed}
    for prompt in listed:
        given = {a.name: ARGUMENTS[a.name] for a in prompt.arguments if a.required}
        filled = prompts.get(prompt.name, given, provider=provider, actor="test")  # type: ignore[arg-type]
        assert (filled.status, filled.is_error) == ("succeeded", False), (prompt.name, filled.text)
        assert filled.messages, prompt.name
        for message in filled.messages:
            assert_conforms(PUBLISHED[provider], message)
    embedded = prompts.get("resource-prompt", {"resourceType": "Text", "resourceId": "1"}, provider=provider)  # type: ignore[arg-type]
    assert "Resource 1" in str(embedded.messages)
