"""The official MCP conformance suite against our client: each scenario passes with no
FAILURE and no WARNING (the suite's own "overall failed" rule), or is listed in
EXPECTED_TO_FAIL with the reason it cannot pass.

Both suite versions run: 0.1.16 for the handshake era as the suite shipped it, and
0.2.0-alpha.12 for the 2026-07-28 revision.
"""

from __future__ import annotations

import pytest

from tests.conformance.runner import run_scenario

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
