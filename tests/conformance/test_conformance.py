"""The official MCP conformance suite against our client: each scenario passes with no
FAILURE and no WARNING (the suite's own "overall failed" rule), or is listed in
EXPECTED_TO_FAIL with the reason it cannot pass.

Both suite versions run: 0.1.16 for the handshake era as the suite shipped it, and
0.2.0-alpha.12 for the 2026-07-28 revision.
"""

from __future__ import annotations

import json

import pytest

from tests.conformance import django_app
from tests.conformance.runner import ScenarioRun, run_scenario

pytestmark = pytest.mark.e2e

MODERN = "2026-07-28"
# (suite version, scenario, --spec-version)
SCENARIOS = [
    ("0.1.16", "initialize", None),
    ("0.1.16", "tools_call", None),
    ("0.1.16", "sse-retry", None),
    ("0.2.0-alpha.12", "tools_call", MODERN),
    ("0.2.0-alpha.12", "request-metadata", MODERN),
    ("0.2.0-alpha.12", "http-standard-headers", MODERN),
    ("0.2.0-alpha.12", "http-custom-headers", MODERN),
    ("0.2.0-alpha.12", "http-invalid-tool-headers", MODERN),
    ("0.2.0-alpha.12", "json-schema-ref-no-deref", MODERN),
    ("0.2.0-alpha.12", "json-schema-2020-12-preservation", MODERN),
    ("0.2.0-alpha.12", "sep-2322-client-request-state", MODERN),
    # Elicitation (issue 42): the scenario's server asks on the session's GET stream.
    ("0.1.16", "elicitation-sep1034-client-defaults", None),
    ("0.2.0-alpha.12", "elicitation-sep1034-client-defaults", "2025-11-25"),
    # Authorization (issue 12), every client auth scenario in each spec revision it lists.
    ("0.1.16", "auth/metadata-default", "2025-11-25"),
    ("0.1.16", "auth/metadata-var1", "2025-11-25"),
    ("0.1.16", "auth/metadata-var2", "2025-11-25"),
    ("0.1.16", "auth/metadata-var3", "2025-11-25"),
    ("0.1.16", "auth/basic-cimd", "2025-11-25"),
    ("0.1.16", "auth/scope-from-www-authenticate", "2025-11-25"),
    ("0.1.16", "auth/scope-from-scopes-supported", "2025-11-25"),
    ("0.1.16", "auth/scope-omitted-when-undefined", "2025-11-25"),
    ("0.1.16", "auth/scope-step-up", "2025-11-25"),
    ("0.1.16", "auth/scope-retry-limit", "2025-11-25"),
    ("0.1.16", "auth/token-endpoint-auth-basic", "2025-06-18"),
    ("0.1.16", "auth/token-endpoint-auth-basic", "2025-11-25"),
    ("0.1.16", "auth/token-endpoint-auth-post", "2025-06-18"),
    ("0.1.16", "auth/token-endpoint-auth-post", "2025-11-25"),
    ("0.1.16", "auth/token-endpoint-auth-none", "2025-06-18"),
    ("0.1.16", "auth/token-endpoint-auth-none", "2025-11-25"),
    ("0.1.16", "auth/pre-registration", "2025-11-25"),
    # 0.1.16's 2025-03-26-oauth-metadata-backcompat is wrong: see the test at the end.
    ("0.1.16", "auth/2025-03-26-oauth-endpoint-fallback", "2025-03-26"),
    ("0.1.16", "auth/resource-mismatch", "draft"),
    ("0.1.16", "auth/offline-access-scope", "draft"),
    ("0.1.16", "auth/offline-access-not-supported", "draft"),
    ("0.1.16", "auth/client-credentials-jwt", None),
    ("0.1.16", "auth/client-credentials-basic", None),
    ("0.2.0-alpha.12", "auth/metadata-default", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/metadata-default", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/metadata-var1", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/metadata-var1", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/metadata-var2", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/metadata-var2", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/metadata-var3", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/metadata-var3", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/basic-cimd", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/basic-cimd", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/scope-from-www-authenticate", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/scope-from-www-authenticate", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/scope-from-scopes-supported", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/scope-from-scopes-supported", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/scope-omitted-when-undefined", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/scope-omitted-when-undefined", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/scope-step-up", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/scope-step-up", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/scope-retry-limit", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/scope-retry-limit", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-basic", "2025-06-18"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-basic", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-basic", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-post", "2025-06-18"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-post", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-post", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-none", "2025-06-18"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-none", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/token-endpoint-auth-none", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/pre-registration", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/pre-registration", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/2025-03-26-oauth-metadata-backcompat", "2025-03-26"),
    ("0.2.0-alpha.12", "auth/2025-03-26-oauth-endpoint-fallback", "2025-03-26"),
    ("0.2.0-alpha.12", "auth/resource-mismatch", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/offline-access-scope", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/offline-access-not-supported", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/authorization-server-migration", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/iss-supported", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/iss-not-advertised", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/iss-supported-missing", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/iss-wrong-issuer", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/iss-unexpected", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/iss-normalized", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/metadata-issuer-mismatch", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/client-credentials-jwt", None),
    ("0.2.0-alpha.12", "auth/client-credentials-basic", None),
    # Authorization extensions (issue 43), each an operator's opt-in per server.
    ("0.2.0-alpha.12", "auth/dpop", None),
    ("0.2.0-alpha.12", "auth/dpop-nonce", None),
    ("0.2.0-alpha.12", "auth/enterprise-managed-authorization", None),
    ("0.2.0-alpha.12", "auth/wif-jwt-bearer", None),
]


@pytest.mark.parametrize(
    ("version", "scenario", "spec_version"),
    SCENARIOS,
    ids=[f"{version}-{scenario}" for version, scenario, _ in SCENARIOS],
)
def test_scenario_passes(version: str, scenario: str, spec_version: str | None) -> None:
    """The suite ran the scenario, recorded checks, none of them is a FAILURE or WARNING, and
    its overall verdict (which also fails a client that exits with an error) is a pass."""
    run = run_scenario(version, scenario, spec_version=spec_version)
    assert run.checks, f"the suite recorded no checks:\n{run.output[-4000:]}"
    assert not run.problems, run.explain()
    assert run.returncode == 0, run.explain()


def test_0116_backcompat_serves_a_mismatched_issuer_and_is_refused() -> None:
    """0.1.16's 2025-03-26-oauth-metadata-backcompat serves, at the origin's
    /.well-known/oauth-authorization-server, metadata whose issuer is ``<origin>/oauth`` (the
    suite's AS runs under a route prefix); RFC 8414 §3.3 requires the issuer the document was
    looked up for. The client refuses it before registering (0.2.0-alpha.12 fixed the scenario
    with ``metadataIssuer``, and passes above)."""
    run = run_scenario("0.1.16", "auth/2025-03-26-oauth-metadata-backcompat", spec_version="2025-03-26")
    served = [
        check["details"]["body"]["issuer"]
        for check in run.checks
        if check.get("id") == "outgoing-response"
        and isinstance((check.get("details") or {}).get("body"), dict)
        and "issuer" in check["details"]["body"]
    ]
    assert served and all(issuer.endswith("/oauth") for issuer in served), run.explain()
    assert {check["id"] for check in run.problems} == {
        "client-registration",
        "authorization-request",
        "token-request",
    }
    assert "names another issuer" in run.output or run.returncode != 0


# Through the Django app (django_app.py): the operator's configuration is an McpServer row,
# the call goes through endpoint_for and mcp_client(), the grant into DatabaseGrantStore.
THROUGH_DJANGO = [
    ("0.1.16", "auth/client-credentials-jwt", None),
    ("0.1.16", "auth/client-credentials-basic", None),
    ("0.1.16", "auth/pre-registration", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/client-credentials-jwt", None),
    ("0.2.0-alpha.12", "auth/client-credentials-basic", None),
    ("0.2.0-alpha.12", "auth/pre-registration", "2025-11-25"),
    ("0.2.0-alpha.12", "auth/pre-registration", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/dpop", None),
    ("0.2.0-alpha.12", "auth/dpop-nonce", None),
    # Enterprise-managed (per user, the ID token from the NR_LLM_OAUTH_IDENTITY_TOKEN hook) and
    # workload identity (the JWT from the file the row names), configured on the McpServer row.
    ("0.2.0-alpha.12", "auth/enterprise-managed-authorization", None),
    ("0.2.0-alpha.12", "auth/wif-jwt-bearer", None),
]
# The token exchange's secrets as the suite's checks show them on the wire.
SECRET_FIELDS = ("access_token", "refresh_token", "client_secret", "client_assertion", "code_verifier")
# The suite prints the context it hands the driver (pre-registered secret, private key).
CONTEXT_LINE = "With context: "


def through_django(
    version: str, scenario: str, spec_version: str | None, *, mode: str = "django"
) -> ScenarioRun:
    return run_scenario(version, scenario, spec_version=spec_version, extra_env={django_app.ENV: mode})


def secrets_seen(run: ScenarioRun) -> set[str]:
    """The context's secrets and every secret the suite's checks show crossing the wire."""
    seen: set[str] = set()
    for line in run.output.splitlines():
        if line.startswith(CONTEXT_LINE):
            context = json.loads(line.removeprefix(CONTEXT_LINE))
            seen |= {context[name] for name in ("client_secret", "private_key_pem") if context.get(name)}
    for check in run.checks:
        body = (check.get("details") or {}).get("body")
        if isinstance(body, dict):
            seen |= {body[name] for name in SECRET_FIELDS if isinstance(body.get(name), str)}
    return seen


def assert_nothing_secret_printed(run: ScenarioRun) -> None:
    assert "through the Django app" in run.driver_output, run.explain()
    assert "PRIVATE KEY" not in run.driver_output
    secrets = secrets_seen(run)
    assert secrets, run.explain()
    leaked = [secret for secret in secrets if secret in run.driver_output]
    assert not leaked, f"the driver printed secrets: {leaked}\n{run.driver_output}"


@pytest.mark.parametrize(
    ("version", "scenario", "spec_version"),
    THROUGH_DJANGO,
    ids=[f"{version}-{scenario}-{spec}" for version, scenario, spec in THROUGH_DJANGO],
)
def test_scenario_passes_through_the_django_app(
    version: str, scenario: str, spec_version: str | None
) -> None:
    """As test_scenario_passes, with the server configured and connected in the Django app."""
    run = through_django(version, scenario, spec_version)
    assert run.checks, f"the suite recorded no checks:\n{run.output[-4000:]}"
    assert not run.problems, run.explain()
    assert run.returncode == 0, run.explain()
    assert_nothing_secret_printed(run)


@pytest.mark.parametrize("version", ["0.1.16", "0.2.0-alpha.12"])
def test_basic_cimd_through_the_django_app_uses_the_apps_own_document_url(version: str) -> None:
    """The app's client id is its own route (NR_LLM_PUBLIC_BASE_URL + /nr-llm/oauth/client/<id>.json);
    basic-cimd compares the client id with one fixed URL and only warns on another, so the one
    problem is that warning, and the flow (authorization, token, tool call) still completes."""
    run = through_django(version, "auth/basic-cimd", "2025-11-25")
    expected = f"{django_app.PUBLIC_BASE_URL}/nr-llm/oauth/client/conformance.json"
    assert [(check["id"], check["status"]) for check in run.problems] == [
        ("cimd-client-id-used", "WARNING")
    ], run.explain()
    assert run.problems[0]["details"]["actualClientId"] == expected
    passed = {check["id"] for check in run.checks if check.get("status") == "SUCCESS"}
    assert {"authorization-request", "token-request"} <= passed, run.explain()
    assert "called test-tool: is_error=False" in run.driver_output, run.explain()
    assert_nothing_secret_printed(run)


# Per-user mode: a site user's own Connect (service.start_connect(for_user=True)), the grant in
# that user's UserGrantRecord, and with DPoP its key stored encrypted beside the tokens.
PER_USER = [
    ("0.2.0-alpha.12", "auth/metadata-default", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/pre-registration", "2026-07-28"),
    ("0.2.0-alpha.12", "auth/dpop-nonce", None),
]


@pytest.mark.parametrize(
    ("version", "scenario", "spec_version"),
    PER_USER,
    ids=[f"{version}-{scenario}-{spec}" for version, scenario, spec in PER_USER],
)
def test_scenario_passes_through_a_users_own_grant(
    version: str, scenario: str, spec_version: str | None
) -> None:
    """As test_scenario_passes_through_the_django_app, with the server per user."""
    run = through_django(version, scenario, spec_version, mode="django-per-user")
    assert run.checks, f"the suite recorded no checks:\n{run.output[-4000:]}"
    assert not run.problems, run.explain()
    assert run.returncode == 0, run.explain()
    assert_nothing_secret_printed(run)
