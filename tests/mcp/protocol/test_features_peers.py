"""Resources, templates, prompts and completion against real servers, both eras.

- the official Python SDK 2.3 server (tests/peers/features_server.py): dual-era (the
  2026-07-28 era is chosen), handshake only (server/discover refused) and 2026-07-28 only;
  over TLS by name once (the certificate verified for mcp.test, SNI sent);
- server-everything from npm (handshake era): every listed resource and every template read,
  its prompts filled, a completion asked, the links a tool returned followed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol import templates
from tests.peers import running
from tests.tls import TestAuthority, tls_client

pytestmark = pytest.mark.e2e

PEERS_DIR = __import__("pathlib").Path(__file__).resolve().parents[2] / "e2e" / "peers"
EVERYTHING = PEERS_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@contextlib.contextmanager
def features_server(*args: str) -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.features_server", *args]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module", params=["dual", "handshake", "modern-only"])
def sdk(request: pytest.FixtureRequest) -> Iterator[tuple[str, Endpoint]]:
    args = {"dual": [], "handshake": ["--no-discover"], "modern-only": ["--modern-only"]}[request.param]
    with features_server(*args) as url:
        yield request.param, Endpoint(identifier="features", url=url, budget_seconds=20)


@pytest.fixture(scope="module")
def everything() -> Iterator[Endpoint]:
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    with running(["node", "-r", str(PEERS_DIR / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]) as port:
        yield Endpoint(identifier="everything", url=f"http://127.0.0.1:{port}/mcp", budget_seconds=20)


def _client() -> McpClient:
    return McpClient(connection=ConnectionSettings(allow_private_networks=True))


def test_the_sdk_server_lists_resources_templates_and_prompts_in_each_era(sdk: tuple[str, Endpoint]) -> None:
    """One operation walks the three lists; the era is the one the server speaks."""
    mode, endpoint = sdk
    client = _client()
    features = client.list_features(endpoint)
    assert [r["uri"] for r in features.resources] == ["docs://readme", "docs://logo", "docs://big"]
    assert [t["uriTemplate"] for t in features.templates] == ["notes://{topic}/page"]
    assert [p["name"] for p in features.prompts] == ["greet", "look"]
    assert client.ping(endpoint).era == ("handshake" if mode == "handshake" else "modern")


def test_every_listed_resource_is_read_and_the_big_one_refused_by_the_cap(sdk: tuple[str, Endpoint]) -> None:
    """Text and blob come back as embedded-resource blocks; 3 MB is over the 2 MiB body cap, typed."""
    _, endpoint = sdk
    client = _client()
    readme = client.read_resource(endpoint, "docs://readme")
    assert readme.content == (
        {
            "type": "resource",
            "resource": {"uri": "docs://readme", "mimeType": "text/markdown", "text": "# Hello\nThe readme."},
        },
    )
    assert readme.text == "[resource docs://readme]\n# Hello\nThe readme."
    logo = client.read_resource(endpoint, "docs://logo")
    assert logo.content[0]["resource"]["mimeType"] == "image/png" and logo.content[0]["resource"]["blob"]
    with pytest.raises(McpTransportError) as big:
        client.read_resource(endpoint, "docs://big")
    assert big.value.kind == "too_large"


def test_a_template_is_expanded_and_read(sdk: tuple[str, Endpoint]) -> None:
    _, endpoint = sdk
    uri = templates.expand_template("notes://{topic}/page", {"topic": "rust"})
    assert _client().read_resource(endpoint, uri).text == "[resource notes://rust/page]\nnote about rust"


def test_an_unknown_resource_is_resource_not_found(sdk: tuple[str, Endpoint]) -> None:
    """SDK 2.3 answers SEP-2164's -32602 naming the URI, in both eras: the kind says not found."""
    _, endpoint = sdk
    with pytest.raises(McpTransportError) as missing:
        _client().read_resource(endpoint, "docs://nothing")
    assert missing.value.kind == "resource_not_found"
    assert "has no resource 'docs://nothing'" in str(missing.value)


def test_prompts_are_filled_with_text_images_and_file_resources(sdk: tuple[str, Endpoint]) -> None:
    _, endpoint = sdk
    client = _client()
    greet = client.get_prompt(endpoint, "greet", {"name": "Ann"})
    assert greet.description == "Greet someone"
    assert [(m.role, m.content) for m in greet.messages] == [
        ("user", {"type": "text", "text": "Say hello to Ann in a plain way."}),
        ("assistant", {"type": "text", "text": "Understood."}),
    ]
    look = client.get_prompt(endpoint, "look")
    assert look.messages[0].content["type"] == "image"
    assert look.messages[1].content == {
        "type": "resource",
        "resource": {"uri": "file:///srv/notes/a.txt", "mimeType": "text/plain", "text": "a note"},
    }


def test_completion_values_come_back(sdk: tuple[str, Endpoint]) -> None:
    _, endpoint = sdk
    client = _client()
    styles = client.complete(endpoint, {"type": "ref/prompt", "name": "greet"}, "style", "p")
    assert styles.values == ("plain", "pirate", "poem")
    topics = client.complete(endpoint, {"type": "ref/resource", "uri": "notes://{topic}/page"}, "topic", "r")
    assert topics.values == ("rust", "ruby")


def test_a_tools_links_are_followed_and_its_file_resource_kept(sdk: tuple[str, Endpoint]) -> None:
    """The link a tool returned is read from the same server; the file:// block keeps its text."""
    _, endpoint = sdk
    client = _client()
    outcome = client.call_tool(endpoint, "linked")
    link = next(block for block in outcome.content if block["type"] == "resource_link")
    assert client.read_resource(endpoint, link["uri"]).text.endswith("The readme.")
    assert "[resource file:///srv/notes/a.txt]\na note" in outcome.text


def test_resources_over_tls_by_name(tls: TestAuthority) -> None:
    """Over https to mcp.test: the certificate is checked for the name, the resource read."""
    files = tls.issue("mcp.test")
    command = [
        sys.executable,
        "-m",
        "tests.peers.features_server",
        "--certfile",
        str(files.certfile),
        "--keyfile",
        str(files.keyfile),
        "--allow-host",
        "mcp.test",
    ]
    with running(command) as port:
        endpoint = Endpoint(identifier="features", url=f"https://mcp.test:{port}/mcp", budget_seconds=20)
        client = tls_client(tls)
        assert client.read_resource(endpoint, "docs://readme").text.endswith("The readme.")
        assert (
            client.get_prompt(endpoint, "greet", {"name": "Bo"}).messages[0].content["text"].startswith("Say")
        )


def test_server_everything_every_resource_and_template_is_read(everything: Endpoint) -> None:
    client = _client()
    features = client.list_features(everything)
    assert len(features.resources) >= 7 and len(features.templates) == 2
    for resource in features.resources:
        outcome = client.read_resource(everything, resource["uri"])
        assert outcome.content and outcome.content[0]["resource"]["uri"] == resource["uri"], resource
    for template in features.templates:
        uri = templates.expand_template(template["uriTemplate"], {"resourceId": "1"})
        assert templates.template_matches(template["uriTemplate"], uri)
        outcome = client.read_resource(everything, uri)
        inner = outcome.content[0]["resource"]
        assert inner["uri"] == uri and ("text" in inner or "blob" in inner)


def test_server_everything_prompts_and_completion(everything: Endpoint) -> None:
    client = _client()
    names = [prompt["name"] for prompt in client.list_prompts(everything)]
    assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(names)
    assert client.get_prompt(everything, "simple-prompt").messages
    args = client.get_prompt(everything, "args-prompt", {"city": "Leipzig"})
    assert "Leipzig" in args.messages[0].content["text"]
    embedded = client.get_prompt(everything, "resource-prompt", {"resourceType": "Text", "resourceId": "1"})
    assert any(m.content["type"] == "resource" for m in embedded.messages)
    departments = client.complete(
        everything, {"type": "ref/prompt", "name": "completable-prompt"}, "department", ""
    )
    assert departments.values


def test_server_everything_links_a_tool_returned_are_followed(everything: Endpoint) -> None:
    client = _client()
    outcome = client.call_tool(everything, "get-resource-links", {"count": 2})
    links = [block for block in outcome.content if block["type"] == "resource_link"]
    assert len(links) == 2
    for link in links:
        assert client.read_resource(everything, link["uri"]).content[0]["resource"]["uri"] == link["uri"]
