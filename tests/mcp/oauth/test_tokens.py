"""An operation's token: no leg while valid, refreshed when expired, one refresh per process at a time."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint
from nr_llm.mcp.oauth import ClientConfig, Grant, MemoryGrantStore, OAuthSettings, OperationTokens
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.deadline import OperationDeadline
from nr_llm.mcp.wire.errors import AuthorizationError, ChallengeError, McpTransportError

from .world import ISSUER, MCP, TOKEN, World, as_metadata


def _grant(wall, *, lifetime: float = 3600, **overrides: Any) -> Grant:
    values: dict[str, Any] = {
        "access_token": "stored-access",
        "issuer": ISSUER,
        "token_endpoint": TOKEN,
        "resource": MCP,
        "client": ClientRegistration(ISSUER, "cid", None, "none"),
        "expires_at": wall.now + lifetime,
        "refresh_token": "stored-refresh",
        "scopes": ("read",),
    }
    values.update(overrides)
    return Grant(**values)


def _tokens(
    world: World, wall, store, *, config: ClientConfig | None = None, budget: float = 20
) -> OperationTokens:
    deadline = OperationDeadline(budget, world.clock, "demo")
    settings = OAuthSettings(config or ClientConfig(), store)
    return OperationTokens(
        "demo", MCP, settings, deadline, ConnectionSettings(allow_private_networks=True), wall=wall
    )


def _challenge(status: int = 401, **kwargs) -> ChallengeError:
    return ChallengeError("demo", "refused", status=status, **kwargs)


def test_a_valid_token_costs_no_leg(world: World, wall) -> None:
    """A stored token with time to spare is used as is: nothing is sent."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    tokens = _tokens(world, wall, store)
    assert tokens.bearer() == "stored-access"
    assert world.sent == [] and tokens.legs.sent == 0


def test_an_expired_token_is_refreshed_in_one_leg_and_saved(world: World, wall) -> None:
    """Past its absolute expiry minus the skew, the token is refreshed once and the rotation is stored."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=29))  # inside the 30 s skew
    world.serve_token_endpoint()
    tokens = _tokens(world, wall, store)
    assert tokens.bearer() == "access-1"
    assert world.urls() == [TOKEN]  # one leg, sent on the refresh's own legs (see _on_its_own)
    saved = store.load("demo")
    assert saved is not None and saved.refresh_token == "refresh-1"


def test_expiry_is_absolute_and_survives_a_restart(world: World, wall) -> None:
    """Expiry is epoch seconds: a grant read back later is judged by the wall clock alone."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=600))
    wall.now += 601  # "after a restart": nothing about the process matters, only the time
    world.serve_token_endpoint()
    assert _tokens(world, wall, store).bearer() == "access-1"


def test_no_grant_needs_a_person_with_the_challenged_scopes(world: World, wall) -> None:
    """Never authorized: the first leg goes without a token, and its 401 becomes
    authorization_required naming the scopes the server asked for; nothing else is sent."""
    tokens = _tokens(world, wall, MemoryGrantStore())
    assert tokens.bearer() is None
    with pytest.raises(AuthorizationError) as caught:
        tokens.after_challenge(_challenge(scopes=("files:read",), resource_metadata="https://m/prm"), None)
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "not_authorized")
    assert caught.value.resource_metadata == "https://m/prm"
    assert caught.value.scopes == ("files:read",) and world.sent == []


def test_first_client_credentials_token_follows_the_challenge(world: World, wall) -> None:
    """Client credentials, no grant: the challenge's metadata URL and scopes drive the first token."""
    header_url = "https://192.0.2.1/.well-known/oauth-protected-resource/mcp"
    world.serve_discovery(metadata=as_metadata(token_endpoint_auth_methods_supported=["client_secret_post"]))
    world.serve_token_endpoint()
    config = ClientConfig(grant="client_credentials", client_id="svc", client_secret="s", issuer=ISSUER)
    tokens = _tokens(world, wall, MemoryGrantStore(), config=config)
    assert tokens.bearer() is None
    token = tokens.after_challenge(_challenge(scopes=("tools",), resource_metadata=header_url), None)
    assert token == "access-1" and world.urls()[0] == header_url
    assert world.sent[-1].form["scope"] == "tools"


def test_a_401_allows_one_refresh_then_needs_a_person(world: World, wall) -> None:
    """The first 401 refreshes (even an unexpired token); a second one is authorization_required."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    world.serve_token_endpoint()
    tokens = _tokens(world, wall, store)
    retried = tokens.after_challenge(_challenge(), "stored-access")
    assert retried == "access-1" and world.urls() == [TOKEN]
    with pytest.raises(AuthorizationError) as caught:
        tokens.after_challenge(_challenge(), retried)
    assert caught.value.reason == "refresh_refused" and world.urls() == [TOKEN]


def test_a_401_for_a_token_renewed_meanwhile_retries_with_the_new_one(world: World, wall) -> None:
    """Another caller already refreshed: the stored token is retried, no refresh is spent."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, access_token="newer"))
    assert _tokens(world, wall, store).after_challenge(_challenge(), "older") == "newer"
    assert world.sent == []


def test_insufficient_scope_names_the_union_for_an_operator(world: World, wall) -> None:
    """A 403 insufficient_scope on an authorization code grant asks a person for old and new scopes."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    with pytest.raises(AuthorizationError) as caught:
        _tokens(world, wall, store).after_challenge(
            _challenge(403, error="insufficient_scope", scopes=("write",)), "stored-access"
        )
    assert (caught.value.reason, caught.value.scopes) == ("insufficient_scope", ("read", "write"))


def test_a_403_that_is_not_about_scope_is_the_server_s_answer(world: World, wall) -> None:
    """A plain 403 is raised as the challenge itself: a new token would not change it."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    challenge = _challenge(403)
    with pytest.raises(ChallengeError) as caught:
        _tokens(world, wall, store).after_challenge(challenge, "stored-access")
    assert caught.value is challenge


def test_client_credentials_step_up_requests_the_union_at_most_three_times(world: World, wall) -> None:
    """Step-up with client credentials asks for the union of scopes; the fourth attempt is refused unsent."""
    world.serve_discovery(
        prm={"resource": MCP, "authorization_servers": [ISSUER]},
        metadata=as_metadata(token_endpoint_auth_methods_supported=["client_secret_post"]),
    )
    world.serve_token_endpoint()
    store = MemoryGrantStore()
    config = ClientConfig(grant="client_credentials", client_id="svc", client_secret="s", issuer=ISSUER)
    tokens = _tokens(world, wall, store, config=config)
    token = tokens.after_challenge(_challenge(), tokens.bearer())
    for scope in ("a", "b"):
        token = tokens.after_challenge(_challenge(403, error="insufficient_scope", scopes=(scope,)), token)
    scope_requests = [s.form.get("scope") for s in world.sent if s.url == TOKEN]
    assert scope_requests == [None, "a", "a b"]
    sent = len(world.sent)
    with pytest.raises(AuthorizationError) as caught:
        tokens.after_challenge(_challenge(403, error="insufficient_scope", scopes=("c",)), token)
    assert caught.value.reason == "attempts_exhausted" and len(world.sent) == sent


def test_a_refresh_that_does_not_fit_the_budget_is_deadline_exhausted(world: World, wall) -> None:
    """With under a second left, the refresh is not sent and the operation ends as deadline_exhausted."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=0))
    world.serve_token_endpoint()
    tokens = _tokens(world, wall, store, budget=2)
    tokens.deadline.grant()
    world.clock.advance(1.5)
    with pytest.raises(McpTransportError) as caught:
        tokens.bearer()
    assert caught.value.kind == "deadline_exhausted" and world.sent == []


def test_concurrent_expiry_in_one_process_spends_the_refresh_token_once(world: World, wall) -> None:
    """Four threads find the token expired at once: one refresh request, all get the renewed token."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=0))
    release = threading.Event()
    arrived = threading.Event()
    refreshes: list[str] = []

    def token_endpoint(request):
        refreshes.append(request.body)
        arrived.set()
        release.wait(10)
        return (
            200,
            {"Content-Type": "application/json"},
            ('{"access_token":"renewed","token_type":"Bearer","expires_in":3600,"refresh_token":"rotated"}'),
        )

    world.mock.add_callback("POST", TOKEN, callback=token_endpoint)
    results: list[str | None] = []

    def call() -> None:
        results.append(_tokens(world, wall, store).bearer())

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    assert arrived.wait(10)
    release.set()
    for thread in threads:
        thread.join(10)
    assert len(refreshes) == 1 and results == ["renewed"] * 4
    saved = store.load("demo")
    assert saved is not None and saved.refresh_token == "rotated"


def test_waiting_for_another_refresh_is_bounded_by_the_budget(world: World, wall) -> None:
    """A renewal held by another caller beyond this operation's budget ends this operation as
    deadline_exhausted once only one leg's time is left; nothing is sent."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=0))
    with store.exclusive("demo", OperationDeadline(60, world.clock, "demo")):
        tokens = _tokens(world, wall, store, budget=1.5)  # 0.5 s of real waiting, then 1 s is left
        with pytest.raises(McpTransportError) as caught:
            tokens.bearer()
    assert caught.value.kind == "deadline_exhausted" and world.sent == []
    assert "waiting for another operation's renewal" in str(caught.value)


def test_expired_client_credentials_are_renewed_at_the_pinned_issuer(world: World, wall) -> None:
    """Client credentials without a refresh token: renewed at the pinned issuer, never at a new one."""
    world.serve_discovery(
        prm={"resource": MCP, "authorization_servers": ["https://192.0.2.77"]},
    )
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=0, refresh_token=None, grant_type="client_credentials"))
    config = ClientConfig(grant="client_credentials", client_id="svc", client_secret="s", issuer=ISSUER)
    with pytest.raises(AuthorizationError) as caught:
        _tokens(world, wall, store, config=config).bearer()
    assert caught.value.reason == "server_changed"
    assert all("192.0.2.77" not in url for url in world.urls())


def test_a_401_naming_metadata_that_lists_another_server_is_server_changed(world: World, wall) -> None:
    """The resource moved to another AS: authorization_required/server_changed after one PRM leg;
    the refresh token is not spent and nothing goes to the new server."""
    header_url = "https://192.0.2.1/.well-known/oauth-protected-resource/mcp"
    world.serve("GET", header_url, body={"resource": MCP, "authorization_servers": ["https://192.0.2.77"]})
    world.serve_token_endpoint()
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    with pytest.raises(AuthorizationError) as caught:
        _tokens(world, wall, store).after_challenge(_challenge(resource_metadata=header_url), "stored-access")
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "server_changed")
    assert world.urls() == [header_url]


def test_a_401_naming_metadata_that_still_lists_the_issuer_refreshes(world: World, wall) -> None:
    """Same AS in the metadata: one PRM leg, then the one refresh."""
    header_url = "https://192.0.2.1/.well-known/oauth-protected-resource/mcp"
    world.serve("GET", header_url, body={"resource": MCP, "authorization_servers": [ISSUER]})
    world.serve_token_endpoint()
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    token = _tokens(world, wall, store).after_challenge(
        _challenge(resource_metadata=header_url), "stored-access"
    )
    assert token == "access-1" and world.urls() == [header_url, TOKEN]


def test_an_endpoint_s_repr_shows_no_oauth_secret() -> None:
    """An Endpoint carrying OAuth settings (secret, key, store) shows none of them in repr."""
    config = ClientConfig(client_id="cid", client_secret="S3CRET", private_key_pem="-----KEY-----")
    endpoint = Endpoint(identifier="demo", url=MCP, oauth=OAuthSettings(config, MemoryGrantStore()))
    shown = repr(endpoint) + repr(endpoint.oauth)
    assert "S3CRET" not in shown and "KEY" not in shown and "demo" in shown
