"""Credentials: attached per request, fail closed when unresolvable, never in text."""

from __future__ import annotations

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError

from ..scripted import URL, ScriptedServer

SECRET = "s3cr3t-token-value"


def _call(mock, clock, endpoint: Endpoint) -> ScriptedServer:
    server = ScriptedServer(clock)
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        endpoint, "echo"
    )
    return server


def test_a_bearer_credential_is_sent_on_every_leg(mock, clock) -> None:
    """auth_placement bearer: Authorization: Bearer <credential> on every request, DELETE included."""
    server = _call(mock, clock, Endpoint(identifier="d", url=URL, credential=SECRET, auth_placement="bearer"))
    assert [seen.headers.get("Authorization") for seen in server.seen] == [f"Bearer {SECRET}"] * 4


def test_a_named_header_credential_is_sent_on_every_leg(mock, clock) -> None:
    """auth_placement header: the named header carries the credential; no Authorization header."""
    endpoint = Endpoint(
        identifier="d", url=URL, credential=SECRET, auth_placement="header", auth_header_name="X-Api-Key"
    )
    server = _call(mock, clock, endpoint)
    assert [seen.headers.get("X-Api-Key") for seen in server.seen] == [SECRET] * 4
    assert all("Authorization" not in seen.headers for seen in server.seen)


def test_no_credential_configured_sends_none(mock, clock) -> None:
    """auth_placement none: no Authorization header at all."""
    server = _call(mock, clock, Endpoint(identifier="d", url=URL))
    assert all("Authorization" not in seen.headers for seen in server.seen)


def test_an_unresolvable_credential_fails_closed_before_anything_is_sent(mock, clock) -> None:
    """needs_credential and credential None: missing_credential with the problem; nothing sent."""
    server = ScriptedServer(clock)
    server.install(mock)
    endpoint = Endpoint(
        identifier="d",
        url=URL,
        auth_placement="bearer",
        credential_problem="environment variable MCP_KEY is not set",
    )
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            endpoint, "echo"
        )
    assert caught.value.kind == "missing_credential"
    assert "MCP_KEY is not set" in str(caught.value) and "'d'" in str(caught.value)
    assert server.seen == []
    assert (
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
        .ping(endpoint)
        .reachable
        is False
    )


@pytest.mark.parametrize(
    "credential",
    [f"{SECRET}\r\nX-Evil: 1", f" {SECRET}", "", f"{SECRET}\x00", f"{SECRET}\u4e16", f"{SECRET}\u20ac"],
)
def test_a_credential_that_is_no_valid_header_value_fails_closed_without_quoting_it(
    mock, clock, credential
) -> None:
    """A credential with CR/LF, NUL, surrounding space, nothing at all, or a character HTTP
    cannot carry (beyond Latin-1: http.client would raise UnicodeEncodeError quoting that
    character of the secret) is refused, unquoted, before anything is sent."""
    server = ScriptedServer(clock)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            Endpoint(identifier="d", url=URL, credential=credential, auth_placement="bearer"), "echo"
        )
    assert caught.value.kind == "missing_credential"
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)
    assert server.seen == []


def test_a_header_placement_without_a_valid_header_name_fails_closed(mock, clock) -> None:
    """auth_placement header with an empty or invalid name is missing_credential, nothing sent."""
    for name in ("", "Bad Header", "X:Y", "X-Api-Key\n"):
        with pytest.raises(McpTransportError) as caught:
            McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
                Endpoint(
                    identifier="d", url=URL, credential=SECRET, auth_placement="header", auth_header_name=name
                ),
                "echo",
            )
        assert caught.value.kind == "missing_credential"


def test_the_credential_never_appears_in_reprs_or_errors(mock, clock) -> None:
    """Endpoint repr hides it, and a 401 error's message and repr do not contain it."""
    endpoint = Endpoint(identifier="d", url=URL, credential=SECRET, auth_placement="bearer")
    assert SECRET not in repr(endpoint)
    server = ScriptedServer(clock, overrides={"tools/call": (401, {}, "")})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            endpoint, "echo"
        )
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)


def test_netrc_and_environment_proxies_are_ignored(mock, clock, monkeypatch, tmp_path) -> None:
    """A .netrc password for the host and an HTTP_PROXY in the environment are never used."""
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 192.0.2.1 login user password NETRC-SECRET\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    server = ScriptedServer(clock)
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        Endpoint(identifier="d", url=URL), "echo"
    )
    assert all("Authorization" not in seen.headers for seen in server.seen)
    assert all(not call.request.req_kwargs.get("proxies") for call in mock.calls)


@pytest.mark.parametrize(
    "endpoint",
    [
        Endpoint(
            identifier="clear", url="http://93.184.216.34/mcp", credential=SECRET, auth_placement="bearer"
        ),
        Endpoint(
            identifier="clear",
            url="http://93.184.216.34/mcp",
            credential=SECRET,
            auth_placement="header",
            auth_header_name="X-Api-Key",
        ),
    ],
    ids=["bearer", "header"],
)
def test_a_credential_is_never_sent_in_clear_text_to_a_public_host(mock, endpoint: Endpoint) -> None:
    """http:// to a public host with a credential: refused_host before anything is resolved or
    sent, naming the server and never the credential."""
    report = McpClient().ping(endpoint)
    assert len(mock.calls) == 0
    assert report.failure is not None and report.failure.kind == "refused_host"
    assert "'clear'" in report.error and "http://" in report.error and SECRET not in report.error


def test_an_oauth_token_is_never_sent_in_clear_text_to_a_public_host(mock) -> None:
    """An OAuth server at an http:// URL: refused before the grant is even read (no token leaves)."""
    from nr_llm.mcp.oauth import ClientConfig, MemoryGrantStore, OAuthSettings

    endpoint = Endpoint(
        identifier="clear",
        url="http://93.184.216.34/mcp",
        oauth=OAuthSettings(config=ClientConfig(), store=MemoryGrantStore()),
    )
    report = McpClient().ping(endpoint)
    assert len(mock.calls) == 0
    assert report.failure is not None and report.failure.kind == "refused_host"


def test_plain_http_without_a_credential_or_with_private_networks_allowed_is_sent(mock, clock) -> None:
    """The rule is about credentials on the internet: no credential, or the development setting
    (private networks allowed), and the request goes out."""
    mock.post("http://93.184.216.34/mcp", status=500)
    assert "HTTP 500" in McpClient().ping(Endpoint(identifier="open", url="http://93.184.216.34/mcp")).error
    server = _call(mock, clock, Endpoint(identifier="d", url=URL, credential=SECRET, auth_placement="bearer"))
    assert URL.startswith("http://") and server.seen
