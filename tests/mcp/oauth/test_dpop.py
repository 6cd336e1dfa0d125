"""DPoP (RFC 9449): proofs on token requests, the AS nonce retried once, keys kept with the grant,
and the token source's per-leg proofs and RS nonce handling."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import jwt
import pytest

from nr_llm.mcp import ConnectionSettings
from nr_llm.mcp.oauth import (
    ClientConfig,
    DpopKey,
    Grant,
    MemoryGrantStore,
    NonceChallenge,
    OAuthSettings,
    OperationTokens,
    challenge_error,
    client_credentials,
    refresh,
)
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.errors import AuthorizationError, ChallengeError

from .world import ISSUER, MCP, TOKEN, World, as_metadata, legs_for

Answer = tuple[int, dict[str, Any], dict[str, str]]


def _claims(proof: str, **expected: Any) -> dict[str, Any]:
    """Verify ``proof`` with the public key in its own header, as a server does."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert "d" not in header["jwk"], "the private key must never travel"
    key = jwt.PyJWK(header["jwk"], algorithm="ES256")
    claims = jwt.decode(proof, key.key, algorithms=["ES256"], options={"verify_iat": False})
    for name, value in expected.items():
        assert claims[name] == value, name
    return claims


def _token_endpoint(world: World, answers: list[Answer]) -> None:
    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        world.record(request)
        status, body, headers = answers.pop(0)
        return status, {"Content-Type": "application/json", **headers}, json.dumps(body)

    world.mock.add_callback("POST", TOKEN, callback=answer)


DPOP_TOKEN: Answer = (200, {"access_token": "bound-1", "token_type": "DPoP", "expires_in": 60}, {})
NONCE_PLEASE: Answer = (400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": "as-nonce-1"})


def _cc(world: World, deadline, wall, **metadata: Any) -> Grant:
    world.serve_discovery(metadata=as_metadata(token_endpoint_auth_methods_supported=["none"], **metadata))
    config = ClientConfig(grant="client_credentials", client_id="svc", issuer=ISSUER, dpop=True)
    return client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)


def test_token_request_carries_a_proof_and_the_grant_keeps_its_key(world: World, deadline, wall) -> None:
    """The token POST has a DPoP proof for POST and the token endpoint; the DPoP-bound token is kept
    with its key (which no repr shows)."""
    _token_endpoint(world, [DPOP_TOKEN])
    grant = _cc(world, deadline, wall, dpop_signing_alg_values_supported=["ES256"])
    proof = world.sent[-1].headers["DPoP"]
    _claims(proof, htm="POST", htu=TOKEN, iat=int(wall.time()))
    assert grant.token_type == "DPoP" and grant.dpop_key and "PRIVATE KEY" in grant.dpop_key
    assert grant.dpop_key not in repr(grant) and "bound-1" not in repr(grant)
    header_jwk = jwt.get_unverified_header(proof)["jwk"]
    assert DpopKey(grant.dpop_key).public_jwk == header_jwk


def test_the_as_nonce_is_honoured_once(world: World, deadline, wall) -> None:
    """A 400 use_dpop_nonce is answered by one more request whose fresh proof carries the nonce."""
    _token_endpoint(world, [NONCE_PLEASE, DPOP_TOKEN])
    _cc(world, deadline, wall)
    first, second = (sent.headers["DPoP"] for sent in world.sent if sent.url == TOKEN)
    assert "nonce" not in _claims(first)
    retried = _claims(second, nonce="as-nonce-1")
    assert retried["jti"] != _claims(first)["jti"]


def test_an_as_that_asks_for_a_nonce_again_is_not_asked_a_third_time(world: World, deadline, wall) -> None:
    """A nonce loop at the token endpoint ends after one retry with a typed error."""
    _token_endpoint(world, [NONCE_PLEASE, NONCE_PLEASE, DPOP_TOKEN])
    with pytest.raises(AuthorizationError) as caught:
        _cc(world, deadline, wall)
    assert caught.value.reason == "token_error"
    assert sum(sent.url == TOKEN for sent in world.sent) == 2


def test_an_as_without_es256_is_refused_before_any_token_request(world: World, deadline, wall) -> None:
    with pytest.raises(AuthorizationError) as caught:
        _cc(world, deadline, wall, dpop_signing_alg_values_supported=["RS256"])
    assert caught.value.reason == "unsupported"
    assert TOKEN not in world.urls()


def test_a_dpop_token_without_dpop_enabled_is_refused(world: World, deadline, wall) -> None:
    _token_endpoint(world, [DPOP_TOKEN])
    world.serve_discovery(metadata=as_metadata(token_endpoint_auth_methods_supported=["none"]))
    config = ClientConfig(grant="client_credentials", client_id="svc", issuer=ISSUER)
    with pytest.raises(AuthorizationError) as caught:
        client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)
    assert caught.value.reason == "unsupported" and "DPoP" not in world.sent[-1].headers


def _bound_grant(**overrides: Any) -> Grant:
    values: dict[str, Any] = {
        "access_token": "bound-0",
        "issuer": ISSUER,
        "token_endpoint": TOKEN,
        "resource": MCP,
        "client": ClientRegistration(ISSUER, "cid"),
        "expires_at": 0.0,
        "refresh_token": "refresh-0",
        "token_type": "DPoP",
        "dpop_key": DpopKey.generate().pem,
        "mcp_url": MCP,
    }
    values.update(overrides)
    return Grant(**values)


def test_a_refresh_is_proved_with_the_grants_own_key(world: World, deadline, wall) -> None:
    """The refresh token of a bound grant goes with a proof of the same key, and the key stays."""
    grant = _bound_grant()
    _token_endpoint(world, [DPOP_TOKEN])
    renewed = refresh(legs_for(deadline), grant, ClientConfig(dpop=True), wall)
    header_jwk = jwt.get_unverified_header(world.sent[-1].headers["DPoP"])["jwk"]
    assert header_jwk == DpopKey(grant.dpop_key or "").public_jwk
    assert renewed.dpop_key == grant.dpop_key and renewed.token_type == "DPoP"


def _tokens(grant: Grant, deadline, wall) -> OperationTokens:
    store = MemoryGrantStore()
    store.save("demo", grant)
    settings = OAuthSettings(ClientConfig(dpop=True), store)
    return OperationTokens(
        "demo", MCP, settings, deadline, ConnectionSettings(allow_private_networks=True), wall=wall
    )


def test_each_leg_gets_a_fresh_proof_bound_to_the_token(deadline, wall) -> None:
    """The DPoP scheme, and per leg a new proof naming method, URL (no query) and the token's hash."""
    tokens = _tokens(_bound_grant(expires_at=None), deadline, wall)
    token = tokens.bearer()
    assert tokens.authorization(token) == {"Authorization": "DPoP bound-0"}
    ath = base64.urlsafe_b64encode(hashlib.sha256(b"bound-0").digest()).rstrip(b"=").decode()
    one = _claims(tokens.proof("POST", MCP + "?x=1", token)["DPoP"], htm="POST", htu=MCP, ath=ath)
    two = _claims(tokens.proof("DELETE", MCP, token)["DPoP"], htm="DELETE")
    assert one["jti"] != two["jti"]


def test_a_bearer_grant_gets_no_proof(deadline, wall) -> None:
    tokens = _tokens(_bound_grant(expires_at=None, token_type="Bearer", dpop_key=None), deadline, wall)
    token = tokens.bearer()
    assert tokens.authorization(token) == {"Authorization": "Bearer bound-0"}
    assert tokens.proof("POST", MCP, token) == {}


def _nonce_challenge(nonce: str) -> ChallengeError:
    return challenge_error(
        "demo",
        401,
        {"WWW-Authenticate": 'DPoP error="use_dpop_nonce", resource_metadata="x"', "DPoP-Nonce": nonce},
    )


def test_the_rs_nonce_is_used_for_the_retry_and_later_legs(deadline, wall) -> None:
    """A 401 use_dpop_nonce gives back the same token; the next proofs carry the nonce."""
    tokens = _tokens(_bound_grant(expires_at=None), deadline, wall)
    token = tokens.bearer()
    challenge = _nonce_challenge("rs-1")
    assert isinstance(challenge, NonceChallenge)
    assert tokens.after_challenge(challenge, token) == token
    _claims(tokens.proof("POST", MCP, token)["DPoP"], nonce="rs-1")


def test_a_nonce_loop_ends_with_the_refusal(deadline, wall) -> None:
    """The same nonce again, or a server asking without end, ends the operation with its 401."""
    tokens = _tokens(_bound_grant(expires_at=None), deadline, wall)
    token = tokens.bearer()
    tokens.after_challenge(_nonce_challenge("rs-1"), token)
    with pytest.raises(NonceChallenge):
        tokens.after_challenge(_nonce_challenge("rs-1"), token)
    for n in range(2, 5):
        tokens.after_challenge(_nonce_challenge(f"rs-{n}"), token)
    with pytest.raises(NonceChallenge):
        tokens.after_challenge(_nonce_challenge("rs-9"), token)


def test_a_nonce_for_a_bearer_token_is_not_retried(deadline, wall) -> None:
    tokens = _tokens(_bound_grant(expires_at=None, token_type="Bearer", dpop_key=None), deadline, wall)
    token = tokens.bearer()
    with pytest.raises(NonceChallenge):
        tokens.after_challenge(_nonce_challenge("rs-1"), token)


def test_a_hostile_nonce_is_not_a_nonce_challenge() -> None:
    """A nonce with control characters or of absurd length is not put in a signed claim."""
    for bad in ("a\x00b", "x" * 600, ""):
        challenge = _nonce_challenge(bad)
        assert not isinstance(challenge, NonceChallenge) and challenge.status == 401


def test_a_dpop_challenge_names_its_metadata() -> None:
    """With no Bearer challenge, the DPoP challenge's resource_metadata is read."""
    challenge = challenge_error("demo", 401, {"WWW-Authenticate": 'DPoP resource_metadata="https://r/m"'})
    assert challenge.resource_metadata == "https://r/m"


def test_a_key_repr_shows_nothing() -> None:
    key = DpopKey.generate()
    assert key.pem not in repr(key) and "PRIVATE" not in repr(key)


class NonceServer:
    """A scripted MCP server that takes DPoP tokens only, with a proof carrying its nonce.

    ``rotate``: refuses every proof, each time with a fresh nonce (a server that keeps asking).
    """

    def __init__(self, world: World, *, rotate: bool = False, on: str = "tools/call") -> None:
        from ..scripted import ScriptedServer

        self.world = world
        self.mcp = ScriptedServer(world.clock)
        self.rotate = rotate
        self.on = on
        self.refusals = 0
        self.proofs: list[dict[str, Any]] = []

    def answer(self, request: Any) -> tuple[int, dict[str, str], str]:
        self.world.record(request)
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        assert scheme == "DPoP" and token == "bound-0", "a DPoP token goes with the DPoP scheme"
        claims = _claims(request.headers["DPoP"])
        self.proofs.append(claims)
        method = json.loads(request.body).get("method") if request.body else request.method
        # Rotating: the nonce it asks for is never the one it handed out (it keeps asking).
        if method == self.on and (self.rotate or claims.get("nonce") != "rs-0"):
            self.refusals += 1
            next_nonce = f"rs-{self.refusals}" if self.rotate else "rs-0"
            challenge = 'DPoP error="use_dpop_nonce", error_description="nonce"'
            return 401, {"WWW-Authenticate": challenge, "DPoP-Nonce": next_nonce}, ""
        return self.mcp._answer(request)


def _dpop_call(world: World, wall, server: NonceServer) -> Any:
    from nr_llm.mcp import Endpoint, McpClient

    from ..scripted import URL

    world.mock.add_callback("POST", URL, callback=server.answer)
    world.mock.add_callback("DELETE", URL, callback=server.answer)
    store = MemoryGrantStore()
    store.save("demo", _bound_grant(expires_at=None, mcp_url=URL, resource=URL))
    endpoint = Endpoint(
        identifier="demo", url=URL, budget_seconds=20, oauth=OAuthSettings(ClientConfig(dpop=True), store)
    )
    return McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=world.clock, wall=wall
    ).call_tool(endpoint, "echo", {})


def test_a_tools_call_refused_for_a_nonce_is_sent_again_once_with_it(
    world: World, wall, caplog: pytest.LogCaptureFixture
) -> None:
    """The 401 came before the tool ran: the call goes again, once, with the nonce; every leg had a
    fresh proof for its method; nothing of the key, the proofs or the token is logged."""
    caplog.set_level("DEBUG")
    server = NonceServer(world)
    outcome = _dpop_call(world, wall, server)
    assert not outcome.is_error and outcome.text == "ok"
    assert server.mcp.methods.count("tools/call") == 1 and server.refusals == 1
    calls = [proof for proof in server.proofs if proof["htm"] == "POST"]
    assert len({proof["jti"] for proof in server.proofs}) == len(server.proofs)
    assert calls[-1]["nonce"] == "rs-0"
    for secret in ("bound-0", "PRIVATE KEY", *(p["jti"] for p in server.proofs)):
        assert secret not in caplog.text


def test_a_server_that_keeps_asking_for_nonces_ends_the_call_unrun(world: World, wall) -> None:
    """A new nonce for every request: at most MAX_NONCE_RETRIES retries, then the 401 itself,
    which proves the tool did not run (no 2xx ever answered a tools/call)."""
    from nr_llm.mcp.oauth.tokens import MAX_NONCE_RETRIES

    server = NonceServer(world, rotate=True)
    with pytest.raises(ChallengeError) as caught:
        _dpop_call(world, wall, server)
    assert caught.value.status == 401
    assert server.refusals == MAX_NONCE_RETRIES + 1
    assert server.mcp.methods.count("tools/call") == 0
