"""Where tokens and secrets may go, on scripted parties over real sockets (127.0.0.1).

A grant is used for the URL it was issued for only; a pre-registered client's secret goes to
its configured issuer only; a renewal goes to the pinned token endpoint only, finding the
protected resource metadata where the grant did; a revocation to the pinned issuer only; and
no token response is readable in a traceback's locals. Each test counts what reached whom.
"""

from __future__ import annotations

import base64
import dataclasses
import time
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.oauth import ClientConfig, Grant, MemoryGrantStore, OAuthLegs, OAuthSettings, SystemWallClock
from nr_llm.mcp.oauth.grants import TokenAnswer, revoke
from nr_llm.mcp.oauth.legs import Answer
from nr_llm.mcp.oauth.sealed import Sealed
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import AuthorizationError, ChallengeError, McpTransportError
from tests.oauth_scripted import (
    Peer,
    TokenEndpoint,
    authorization_server,
    operation_tokens,
    peer,
    protected_resource,
)

SECRET = "pre-registered-S3CRET"


def _grant(auth: Peer, url: str, *, expired: bool = False, **overrides: Any) -> Grant:
    values: dict[str, Any] = {
        "access_token": "AT-old",
        "refresh_token": "rt0",
        "issuer": auth.origin,
        "token_endpoint": auth.url("/token"),
        "resource": url,
        "client": ClientRegistration(auth.origin, "cid"),
        "expires_at": time.time() + (-10 if expired else 3600),
        "mcp_url": url,
    }
    values.update(overrides)
    return Grant(**values)


def _machine(auth: Peer, **overrides: Any) -> ClientConfig:
    values: dict[str, Any] = {
        "grant": "client_credentials",
        "client_id": "svc",
        "client_secret": SECRET,
        "issuer": auth.origin,
        "auth_method": "client_secret_post",
    }
    values.update(overrides)
    return ClientConfig(**values)


def _challenge(**kwargs: Any) -> ChallengeError:
    return ChallengeError("demo", "HTTP 401", status=401, **kwargs)


def test_a_grant_for_another_url_is_set_aside_and_nothing_reaches_the_new_url() -> None:
    """The operator edited the URL after Connect: the call ends authorization_required/url_changed
    before anything is sent; neither the new URL nor the token endpoint hears a thing (the
    token is not sent there, and no refresh names the old resource)."""
    with peer() as auth, peer() as old, peer() as new:
        tokens = authorization_server(auth)
        for expired in (False, True):
            store = MemoryGrantStore()
            store.save("demo", _grant(auth, old.url("/mcp"), expired=expired))
            endpoint = Endpoint(
                identifier="demo", url=new.url("/mcp"), oauth=OAuthSettings(ClientConfig(), store)
            )
            with pytest.raises(AuthorizationError) as caught:
                McpClient(connection=ConnectionSettings(allow_private_networks=True)).call_tool(
                    endpoint, "echo", {}
                )
            assert (caught.value.kind, caught.value.reason) == ("authorization_required", "url_changed")
            assert "the URL changed" in str(caught.value)
        assert new.requests() == [] and tokens.forms == [] and old.requests() == []


def test_a_grant_recorded_without_its_url_is_used_where_its_resource_covers_the_url() -> None:
    """A grant from before the URL was recorded: usable under its resource, set aside elsewhere."""
    with peer() as auth:
        store = MemoryGrantStore()
        store.save("demo", _grant(auth, "http://127.0.0.1:9/mcp", mcp_url="", resource="http://127.0.0.1:9"))
        settings = OAuthSettings(ClientConfig(), store)
        assert operation_tokens("demo", "http://127.0.0.1:9/mcp/sub", settings).bearer() == "AT-old"
        with pytest.raises(AuthorizationError) as caught:
            operation_tokens("demo", "http://127.0.0.1:10/mcp", settings).bearer()
        assert caught.value.reason == "url_changed"


def test_a_pre_registered_secret_goes_only_to_the_configured_issuer() -> None:
    """The MCP server's challenge names another authorization server than the configured one:
    issuer_mismatch before any secret is sent; that server sees nothing at all."""
    with peer() as good, peer() as evil, peer() as mcp:
        good_tokens = authorization_server(good)
        evil_tokens = authorization_server(evil)
        metadata = protected_resource(mcp, "/prm", mcp.url("/mcp"), [evil.origin])
        tokens = operation_tokens("demo", mcp.url("/mcp"), OAuthSettings(_machine(good), MemoryGrantStore()))
        with pytest.raises(AuthorizationError) as caught:
            tokens.after_challenge(_challenge(resource_metadata=metadata), None)
        tokens.close()
    assert (caught.value.kind, caught.value.reason) == ("authorization_failed", "issuer_mismatch")
    assert evil.requests() == [] and evil_tokens.forms == [] and good_tokens.forms == []


def test_a_pre_registered_client_without_its_issuer_sends_nothing_anywhere() -> None:
    """No issuer configured: authorization_required/issuer_not_configured before any leg."""
    with peer() as auth, peer() as mcp:
        authorization_server(auth)
        metadata = protected_resource(mcp, "/prm", mcp.url("/mcp"), [auth.origin])
        config = _machine(auth, issuer=None)
        tokens = operation_tokens("demo", mcp.url("/mcp"), OAuthSettings(config, MemoryGrantStore()))
        with pytest.raises(AuthorizationError) as caught:
            tokens.after_challenge(_challenge(resource_metadata=metadata), None)
        tokens.close()
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "issuer_not_configured")
    assert auth.requests() == [] and mcp.requests() == []


def test_the_configured_issuer_s_metadata_must_name_exactly_that_issuer() -> None:
    """Listed by the resource, but its metadata names another issuer: refused, secret unsent."""
    with peer() as auth, peer() as mcp:
        tokens_seen = authorization_server(auth, issuer="http://127.0.0.1:1")
        metadata = protected_resource(mcp, "/prm", mcp.url("/mcp"), [auth.origin])
        tokens = operation_tokens("demo", mcp.url("/mcp"), OAuthSettings(_machine(auth), MemoryGrantStore()))
        with pytest.raises(AuthorizationError) as caught:
            tokens.after_challenge(_challenge(resource_metadata=metadata), None)
        tokens.close()
    assert caught.value.reason == "issuer_mismatch" and tokens_seen.forms == []


def test_client_credentials_renewal_goes_to_the_pinned_token_endpoint_or_nowhere() -> None:
    """The issuer's metadata now names a token endpoint elsewhere: the renewal is server_changed
    and the secret goes to neither endpoint."""
    with peer() as auth, peer() as mcp, peer() as elsewhere:
        moved = authorization_server(elsewhere)
        pinned = authorization_server(auth, token_endpoint=elsewhere.url("/token"))
        protected_resource(mcp, "/.well-known/oauth-protected-resource/mcp", mcp.url("/mcp"), [auth.origin])
        store = MemoryGrantStore()
        client = ClientRegistration(auth.origin, "svc", SECRET, "client_secret_post", origin="preregistered")
        grant = _grant(auth, mcp.url("/mcp"), expired=True, refresh_token=None, client=client)
        store.save("demo", dataclasses.replace(grant, grant_type="client_credentials"))
        tokens = operation_tokens("demo", mcp.url("/mcp"), OAuthSettings(_machine(auth), store))
        with pytest.raises(AuthorizationError) as caught:
            tokens.bearer()
        tokens.close()
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "server_changed")
    assert moved.forms == [] and pinned.forms == []


def test_client_credentials_renewal_finds_the_metadata_only_the_challenge_named() -> None:
    """The server publishes its protected resource metadata only in WWW-Authenticate: the first
    token follows the challenge, and the renewal at expiry finds the same document (kept with
    the grant) instead of ending in "needs reconnect"."""
    with peer() as auth, peer() as mcp:
        issued = authorization_server(auth)
        metadata = protected_resource(mcp, "/custom/prm", mcp.url("/mcp"), [auth.origin])
        store = MemoryGrantStore()
        settings = OAuthSettings(_machine(auth), store)
        first = operation_tokens("demo", mcp.url("/mcp"), settings)
        assert first.after_challenge(_challenge(resource_metadata=metadata), None) == "access-1"
        first.close()
        kept = store.load("demo")
        assert kept is not None and kept.resource_metadata == metadata
        store.save("demo", dataclasses.replace(kept, expires_at=time.time() - 10))
        renewal = operation_tokens("demo", mcp.url("/mcp"), settings)
        assert renewal.bearer() == "access-2"
        renewal.close()
    assert [form["grant_type"] for form in issued.forms] == ["client_credentials"] * 2
    assert [seen.path for seen in mcp.requests()] == ["/custom/prm", "/custom/prm"]


def test_revocation_goes_only_to_the_pinned_issuer_s_own_metadata() -> None:
    """Metadata at the pinned issuer naming another issuer (and a revocation endpoint elsewhere)
    is refused: nothing, neither a token nor the client's authentication, is sent."""
    with peer() as auth, peer() as capture:
        capture.route("POST", "/revoke", (200, {}, {}))
        authorization_server(auth, issuer="http://127.0.0.1:1", revocation_endpoint=capture.url("/revoke"))
        deadline = OperationDeadline(10, MonotonicClock(), "demo")
        with (
            OAuthLegs("demo", deadline, ConnectionSettings(allow_private_networks=True)) as legs,
            pytest.raises(AuthorizationError) as caught,
        ):
            revoke(legs, _grant(auth, "http://127.0.0.1:9/mcp"), ClientConfig(), SystemWallClock())
        assert caught.value.reason == "issuer_mismatch" and capture.requests() == []
        authorization_server(auth)  # the pinned issuer's own document: revoked there
        with OAuthLegs("demo", deadline, ConnectionSettings(allow_private_networks=True)) as legs:
            done = revoke(legs, _grant(auth, "http://127.0.0.1:9/mcp"), ClientConfig(), SystemWallClock())
        assert done.revoked
        assert [(seen.form["token_type_hint"], seen.form["token"]) for seen in auth.requests("/revoke")] == [
            ("refresh_token", "rt0"),
            ("access_token", "AT-old"),
        ]


def _locals_showing(exc: BaseException, *secrets: str) -> list[str]:
    """Every local of the product's frames in ``exc``'s traceback whose repr shows a secret, as an
    error reporter that records locals would print it."""
    shown = []
    tb = exc.__traceback__
    while tb is not None:
        product = "/nr_llm/" in tb.tb_frame.f_code.co_filename
        for name, value in tb.tb_frame.f_locals.items() if product else ():
            if any(secret in repr(value) for secret in secrets):
                shown.append(f"{tb.tb_frame.f_code.co_name}.{name}")
        tb = tb.tb_next
    return shown


@pytest.mark.parametrize("grant", ["refresh_token", "client_credentials"])
def test_no_token_response_is_readable_in_a_traceback_s_locals(grant: str) -> None:
    """A token answer that fails afterwards (not a Bearer token): no frame between the failure and
    the operation holds the token, the request's secrets or the answer in a readable form."""
    with peer() as auth, peer() as mcp:
        authorization_server(auth, token=TokenEndpoint(token_type="mac"))
        metadata = protected_resource(mcp, "/prm", mcp.url("/mcp"), [auth.origin])
        store = MemoryGrantStore()
        store.save("demo", _grant(auth, mcp.url("/mcp"), expired=True, refresh_token="rt-S3CRET"))
        config = _machine(auth) if grant == "client_credentials" else ClientConfig()
        tokens = operation_tokens("demo", mcp.url("/mcp"), OAuthSettings(config, store))
        with pytest.raises(McpTransportError) as caught:
            if grant == "client_credentials":
                tokens.after_challenge(_challenge(resource_metadata=metadata), None)
            else:
                tokens.bearer()
        tokens.close()
    assert caught.value.kind == "authorization_failed"
    assert _locals_showing(caught.value, "access-1", "refresh-1", "rt-S3CRET", SECRET) == []


@pytest.mark.parametrize("grant", ["refresh_token", "client_secret_post", "client_secret_basic"])
def test_no_secret_is_readable_in_the_locals_of_a_leg_that_fails(grant: str) -> None:
    """A token request whose leg itself fails (the token endpoint answers after the budget): no
    frame of the leg (the form's bytes, the request's headers with the Basic credential, the
    leg machine's) nor any frame above it holds the refresh token or the client's secret in a
    readable form. A refresh, once sent, goes on on its own (issue 25, item 11): its caller's
    frames, ending ``deadline_exhausted``, hold none either."""
    basic = base64.b64encode(f"svc:{SECRET}".encode()).decode()
    with peer() as auth, peer() as mcp:
        authorization_server(auth, token=TokenEndpoint(delay=3))
        metadata = protected_resource(mcp, "/prm", mcp.url("/mcp"), [auth.origin])
        store = MemoryGrantStore()
        # The client-credentials grants hold no refresh token: their renewal is a new token request.
        refresh_token = "rt-S3CRET" if grant == "refresh_token" else None
        store.save("demo", _grant(auth, mcp.url("/mcp"), expired=True, refresh_token=refresh_token))
        config = ClientConfig() if grant == "refresh_token" else _machine(auth, auth_method=grant)
        # Room for the metadata legs before it on a loaded machine (a leg needs 1 s left to be
        # sent at all); the token endpoint's 3 s still outlast it.
        tokens = operation_tokens("demo", mcp.url("/mcp"), OAuthSettings(config, store), budget=2.5)
        with pytest.raises(McpTransportError) as caught:
            if grant == "refresh_token":
                tokens.bearer()
            else:
                tokens.after_challenge(_challenge(resource_metadata=metadata), None)
        tokens.close()
        assert auth.requests("/token"), "the token endpoint was asked (the leg really failed)"
    assert caught.value.kind == ("deadline_exhausted" if grant == "refresh_token" else "timeout")
    assert _locals_showing(caught.value, "rt-S3CRET", SECRET, basic) == []


def test_an_answer_s_repr_shows_no_body() -> None:
    """An OAuth leg's answer names its status only: its body may hold tokens."""
    shown = repr(Answer(200, {"access_token": "AT-S3CRET"}, {"Set-Cookie": "c-S3CRET"}))
    assert "S3CRET" not in shown and "200" in shown


def test_token_answers_and_sealed_forms_show_their_keys_only() -> None:
    """The token answer's body and a sealed form name keys, never values."""
    answer = TokenAnswer(200, Sealed(access_token="AT-S3CRET", refresh_token="RT-S3CRET"))
    form = Sealed(grant_type="refresh_token", refresh_token="RT-S3CRET")
    shown = repr(answer) + repr(form) + str(form) + repr([form])
    assert "S3CRET" not in shown and "refresh_token" in shown
