"""Discovery in the specification's order; a resource or issuer that does not fit stops the flow."""

from __future__ import annotations

import pytest

from nr_llm.mcp.oauth import discover, probe_challenge
from nr_llm.mcp.oauth.discovery import covers
from nr_llm.mcp.wire.errors import AuthorizationError

from .world import AS_METADATA, ISSUER, MCP, MCP_ORIGIN, PRM_PATH, PRM_ROOT, World, as_metadata, legs_for


def test_the_challenge_url_is_asked_first(world: World, deadline) -> None:
    """resource_metadata from the 401 is fetched first; found there, no well-known URL is tried."""
    header_url = f"{MCP_ORIGIN}/custom/prm"
    world.serve("GET", header_url, body={"resource": MCP, "authorization_servers": [ISSUER]})
    world.serve("GET", AS_METADATA, body=as_metadata())
    found = discover(legs_for(deadline), MCP, header_url)
    assert world.urls() == [header_url, AS_METADATA]
    assert (found.server.issuer, found.resource) == (ISSUER, MCP)


def test_path_based_then_root_well_known(world: World, deadline) -> None:
    """Without a header URL (or when it 404s), the path-based PRM comes before the root one."""
    header_url = f"{MCP_ORIGIN}/gone"
    world.serve("GET", header_url, 404, {})
    world.serve("GET", PRM_PATH, 404, {})
    world.serve("GET", PRM_ROOT, body={"resource": MCP_ORIGIN, "authorization_servers": [ISSUER]})
    world.serve("GET", AS_METADATA, body=as_metadata())
    found = discover(legs_for(deadline), MCP, header_url)
    assert world.urls() == [header_url, PRM_PATH, PRM_ROOT, AS_METADATA]
    assert found.resource == MCP_ORIGIN  # the PRM's resource, which covers the MCP URL


def test_a_resource_that_does_not_cover_the_mcp_url_stops_before_the_authorization_server(
    world: World, deadline
) -> None:
    """PRM naming another resource: authorization_failed/resource_mismatch, no AS metadata fetched."""
    world.serve_discovery(prm={"resource": "https://192.0.2.1/other", "authorization_servers": [ISSUER]})
    with pytest.raises(AuthorizationError) as caught:
        discover(legs_for(deadline), MCP, None)
    assert (caught.value.kind, caught.value.reason) == ("authorization_failed", "resource_mismatch")
    assert world.urls() == [PRM_PATH]


@pytest.mark.parametrize(
    ("resource", "url", "expected"),
    [
        ("https://a.example/mcp", "https://a.example/mcp", True),
        ("https://a.example/", "https://a.example/mcp", True),
        ("https://A.example:443/mcp/", "https://a.example/mcp", True),
        ("https://a.example/mcp", "https://a.example/mcp2", False),
        ("https://a.example/mcp/x", "https://a.example/mcp", False),
        ("http://a.example/mcp", "https://a.example/mcp", False),
        ("https://b.example/mcp", "https://a.example/mcp", False),
        ("https://a.example:8443/mcp", "https://a.example/mcp", False),
        ("https://a.example/mcp#f", "https://a.example/mcp", False),
    ],
)
def test_what_covers_the_mcp_url(resource: str, url: str, expected: bool) -> None:
    """Same origin, and the resource's path is the MCP path or a whole-segment prefix of it."""
    assert covers(resource, url) is expected


def test_issuer_path_insertion_then_openid_variants(world: World, deadline) -> None:
    """An issuer with a path: RFC 8414 insertion, OpenID insertion, then OpenID appended."""
    issuer = f"{ISSUER}/tenant1"
    world.serve("GET", PRM_PATH, body={"resource": MCP, "authorization_servers": [issuer]})
    tried = [
        f"{ISSUER}/.well-known/oauth-authorization-server/tenant1",
        f"{ISSUER}/.well-known/openid-configuration/tenant1",
    ]
    for url in tried:
        world.serve("GET", url, 404, {})
    last = f"{ISSUER}/tenant1/.well-known/openid-configuration"
    world.serve("GET", last, body=as_metadata(issuer=issuer))
    found = discover(legs_for(deadline), MCP, None)
    assert world.urls() == [PRM_PATH, *tried, last] and found.server.issuer == issuer


def test_metadata_naming_another_issuer_is_refused(world: World, deadline) -> None:
    """RFC 8414 §3.3: the issuer in the document must be the one looked up; no token request follows."""
    world.serve_discovery(metadata=as_metadata(issuer="https://192.0.2.66"))
    with pytest.raises(AuthorizationError) as caught:
        discover(legs_for(deadline), MCP, None)
    assert caught.value.reason == "issuer_mismatch"


def test_a_root_issuer_with_a_trailing_slash_is_the_same_issuer(world: World, deadline) -> None:
    """``https://as`` and ``https://as/`` name one issuer; anything else is compared exactly."""
    world.serve_discovery(metadata=as_metadata(issuer=ISSUER + "/"))
    assert discover(legs_for(deadline), MCP, None).server.token_endpoint.endswith("/token")


def test_2025_03_26_metadata_at_the_mcp_origin(world: World, deadline) -> None:
    """No PRM anywhere: the MCP origin is the authorization server and its metadata is used."""
    world.serve("GET", PRM_PATH, 404, {})
    world.serve("GET", PRM_ROOT, 404, {})
    origin_metadata = f"{MCP_ORIGIN}/.well-known/oauth-authorization-server"
    world.serve(
        "GET", origin_metadata, body=as_metadata(issuer=MCP_ORIGIN, token_endpoint=f"{MCP_ORIGIN}/tok")
    )
    found = discover(legs_for(deadline), MCP, None)
    assert found.server.issuer == MCP_ORIGIN and found.server.token_endpoint == f"{MCP_ORIGIN}/tok"
    assert found.protected is None and found.resource == MCP


def test_2025_03_26_default_endpoints(world: World, deadline) -> None:
    """No PRM and no metadata: /authorize, /token and /register at the MCP origin."""
    for url in (PRM_PATH, PRM_ROOT, f"{MCP_ORIGIN}/.well-known/oauth-authorization-server"):
        world.serve("GET", url, 404, {})
    world.serve("GET", f"{MCP_ORIGIN}/.well-known/openid-configuration", 404, {})
    server = discover(legs_for(deadline), MCP, None).server
    assert (server.authorization_endpoint, server.token_endpoint, server.registration_endpoint) == (
        f"{MCP_ORIGIN}/authorize",
        f"{MCP_ORIGIN}/token",
        f"{MCP_ORIGIN}/register",
    )


def test_a_changed_authorization_server_is_a_person_s_decision(world: World, deadline) -> None:
    """With a pinned issuer, a PRM listing only another AS is authorization_required/server_changed,
    and nothing is fetched from the new one."""
    world.serve("GET", PRM_PATH, body={"resource": MCP, "authorization_servers": ["https://192.0.2.77"]})
    with pytest.raises(AuthorizationError) as caught:
        discover(legs_for(deadline), MCP, None, pinned_issuer=ISSUER)
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "server_changed")
    assert world.urls() == [PRM_PATH]


@pytest.mark.parametrize(
    "prm",
    [{"authorization_servers": [ISSUER]}, {"resource": MCP}, {"resource": MCP, "authorization_servers": []}],
    ids=["no-resource", "no-servers", "empty-servers"],
)
def test_incomplete_protected_resource_metadata_is_a_discovery_failure(world: World, deadline, prm) -> None:
    """A PRM without resource or authorization servers is authorization_failed/discovery."""
    world.serve_discovery(prm=prm)
    with pytest.raises(AuthorizationError) as caught:
        discover(legs_for(deadline), MCP, None)
    assert caught.value.reason == "discovery"


def test_probing_reads_the_challenge_of_an_unauthenticated_initialize(world: World, deadline) -> None:
    """An operator's Connect learns scopes and metadata URL from the server's own 401."""
    world.serve(
        "POST", MCP, 401, "", **{"WWW-Authenticate": f'Bearer resource_metadata="{PRM_PATH}", scope="a b"'}
    )
    challenge = probe_challenge(legs_for(deadline), MCP)
    assert challenge is not None and (challenge.resource_metadata, challenge.scopes) == (PRM_PATH, ("a", "b"))
    assert world.sent[0].json is not None and world.sent[0].json["method"] == "initialize"
    assert "Authorization" not in world.sent[0].headers


def test_probing_a_server_that_asks_nothing_is_none(world: World, deadline) -> None:
    """A server that answers initialize (here as an event stream) asks for no authorization."""
    world.mock.add("POST", MCP, body="data: {}\n\n", content_type="text/event-stream")
    assert probe_challenge(legs_for(deadline), MCP) is None
