"""Authorization scenarios (``auth/...``): the driver is the site and its operator.

A tool call never waits for a browser, so the driver does what an operator's "Connect"
does when a call ends in ``authorization_required``: start the authorization code flow,
play the browser (fetch the authorization URL without following its redirect, read code,
state and iss from the Location), finish, keep the grant, and call again. Client
credentials scenarios need no person: the client authorizes inside the call.
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import requests

from nr_llm.mcp import ConnectionSettings, Endpoint
from nr_llm.mcp.oauth import (
    ClientConfig,
    MemoryGrantStore,
    OAuthLegs,
    OAuthSettings,
    SystemWallClock,
    finish_authorization,
    parse_challenge,
    start_authorization,
)
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import AuthorizationError

if TYPE_CHECKING:
    from tests.conformance.client import Run

# The suite's CIMD scenario accepts this URL as a client id without fetching it.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# Never visited: the browser step reads the redirect's Location instead.
REDIRECT_URI = "http://127.0.0.1:3000/callback"
# What an operator may fix by connecting (again); anything else is the run's failure.
OPERATOR_CAN_FIX = ("not_authorized", "insufficient_scope", "refresh_refused", "server_changed")
# The first call plus at most three operator authorizations (the suite counts them).
MAX_CONNECTS = 3


def pin_localhost_to_ipv4() -> None:
    """The suite's servers announce ``localhost`` in URLs and metadata, which must be used as
    they are (resource and issuer are compared as strings); their traffic stays on 127.0.0.1."""
    real = socket.getaddrinfo

    def ipv4_localhost(host: Any, port: Any, family: int = 0, *args: Any, **kwargs: Any) -> Any:
        if host == "localhost":
            return real("127.0.0.1", port, socket.AF_INET, *args, **kwargs)
        return real(host, port, family, *args, **kwargs)

    socket.getaddrinfo = ipv4_localhost


def config_for(scenario: str, context: dict[str, Any], url: str) -> ClientConfig:
    """The operator's configuration a scenario implies (its context carries pre-registered credentials)."""
    issuer = registered_issuer(url) if context.get("client_id") else None
    if scenario == "auth/enterprise-managed-authorization":
        # The site's hook hands over the signed-in user's ID token (here: the scenario's).
        id_token = context.get("idp_id_token")
        return ClientConfig(
            grant="enterprise",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            issuer=issuer,
            idp_token_endpoint=context.get("idp_token_endpoint"),
            idp_client_id=context.get("idp_client_id"),
            identity_token=lambda: id_token,
        )
    if scenario == "auth/wif-jwt-bearer":
        # The platform mounts the workload's JWT in a file, as a Kubernetes projected token.
        mounted = Path(tempfile.mkdtemp(prefix="wif-")) / "token"
        mounted.write_text(str(context.get("valid_jwt") or ""))
        return ClientConfig(
            grant="workload", client_id=context.get("client_id"), issuer=issuer, assertion_file=str(mounted)
        )
    if "client-credentials" in scenario:
        return ClientConfig(
            grant="client_credentials",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            private_key_pem=context.get("private_key_pem"),
            issuer=issuer,
        )
    return ClientConfig(
        redirect_uri=REDIRECT_URI,
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CLIENT_METADATA_URL,
        issuer=issuer,
        dpop=scenario.startswith("auth/dpop"),
    )


def registered_issuer(url: str) -> str | None:
    """The issuer an operator registered the scenario's pre-registered client at.

    The context gives the client's credentials, not its authorization server, which an operator
    knows from registering there; the driver reads it from the scenario server's metadata once,
    beforehand, with its own requests (the client under test is told, never trusts on first use).
    """
    probe = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    answer = requests.post(url, json=probe, timeout=10, allow_redirects=False)
    named = parse_challenge(answer.headers.get("WWW-Authenticate")).resource_metadata
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    for candidate in (named, f"{origin}/.well-known/oauth-protected-resource{parts.path}"):
        if candidate:
            metadata = requests.get(candidate, timeout=10, allow_redirects=False)
            if metadata.status_code == 200:
                return str(metadata.json()["authorization_servers"][0])
    return None


def browse(run: Run, url: str) -> dict[str, str]:
    """The browser's round trip: the callback's query, read from the redirect's Location."""
    answer = requests.get(url, allow_redirects=False, timeout=10)
    callback = {k: v[0] for k, v in parse_qs(urlsplit(answer.headers.get("Location", "")).query).items()}
    run.say(f"browser: HTTP {answer.status_code}, callback carries {sorted(callback)}")
    return callback


def connect(run: Run, endpoint: Endpoint, required: AuthorizationError) -> None:
    """The operator's Connect: start, the browser's round trip, finish, keep the grant."""
    settings = endpoint.oauth
    assert settings is not None
    wall = SystemWallClock()
    deadline = OperationDeadline(endpoint.budget_seconds, MonotonicClock(), endpoint.identifier)
    previous = settings.store.load(endpoint.identifier)
    with OAuthLegs(endpoint.identifier, deadline, ConnectionSettings(allow_private_networks=True)) as legs:
        started = start_authorization(
            legs,
            endpoint.url,
            settings.config,
            settings.store,
            wall,
            resource_metadata=required.resource_metadata,
            challenged_scopes=required.scopes or None,
            previous_scopes=previous.scopes if previous else (),
        )
        callback = browse(run, started.url)
        grant = finish_authorization(
            legs,
            started.pending,
            settings.config,
            wall,
            code=callback.get("code"),
            state=callback.get("state"),
            iss=callback.get("iss"),
        )
    settings.store.save(endpoint.identifier, grant)
    run.say(f"connected: scopes {' '.join(grant.scopes) or '(none)'}")


def authorize_and(work: Callable[[Run], None], run: Run) -> None:
    """Run ``work`` with OAuth; on authorization_required, connect as the operator and run it again."""
    config = config_for(run.scenario, run.context, run.endpoint.url)
    run.endpoint = Endpoint(
        identifier=run.endpoint.identifier,
        url=run.endpoint.url,
        budget_seconds=run.endpoint.budget_seconds,
        oauth=OAuthSettings(config, MemoryGrantStore()),
    )
    with_operator(
        work,
        run,
        can_connect=config.grant == "authorization_code",
        connect=lambda required: connect(run, run.endpoint, required),
    )


def with_operator(
    work: Callable[[Run], None],
    run: Run,
    *,
    can_connect: bool,
    connect: Callable[[AuthorizationError], None],
) -> None:
    """Run ``work``; when it needs the operator, ``connect`` (at most MAX_CONNECTS times) and run it again."""
    for connects in range(MAX_CONNECTS + 1):
        try:
            work(run)
            return
        except AuthorizationError as exc:
            run.say(f"{exc.kind}/{exc.reason}: {exc}")
            needs_operator = exc.kind == "authorization_required" and exc.reason in OPERATOR_CAN_FIX
            if not needs_operator or not can_connect or connects == MAX_CONNECTS:
                raise
            connect(exc)
