"""Authorization scenarios through the Django app instead of the protocol client directly.

With ``NR_LLM_CONFORMANCE_THROUGH=django`` in its environment the driver configures Django
(``tests.settings``, a throwaway SQLite database migrated in a temp folder), enters the
scenario's server as an ``McpServer`` row the way the admin form would (secrets only as
``nr_llm.servers.credentials`` tokens), and calls the tools through ``endpoints.endpoint_for`` and
``mcp_client()``, so the grant lives in ``DatabaseGrantStore`` and ``client_config(server)``
decides how the client authenticates. An operator's Connect is the service's own
``start_connect`` and ``finish_connect`` around auth.py's browser step.

This is the only end-to-end proof of private_key_jwt and the client ID metadata document
for the Django side: django-oauth-toolkit, our other real authorization server, has neither.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.conformance import auth

if TYPE_CHECKING:
    from nr_llm.models import McpServer
    from tests.conformance.client import Run

ENV = "NR_LLM_CONFORMANCE_THROUGH"
# The origin of auth.CLIENT_METADATA_URL, so a metadata document URL lands on the host the
# suite expects (its path is the app's own route, which the suite may still not accept).
PUBLIC_BASE_URL = "https://conformance-test.local"


def wanted() -> bool:
    return os.environ.get(ENV) in ("django", "django-per-user")


def per_user() -> bool:
    """The server in per-user mode: a site user (not an operator) connects their own account."""
    return os.environ.get(ENV) == "django-per-user"


def configure() -> None:
    """Django with a database of its own for this one scenario process."""
    folder = tempfile.mkdtemp(prefix="nr-llm-conformance-")
    atexit.register(shutil.rmtree, folder, True)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL=f"sqlite:///{folder}/db.sqlite3",
        NR_LLM_PUBLIC_BASE_URL=PUBLIC_BASE_URL,
        # The suite's servers are on localhost.
        NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS="true",
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def server_for(run: Run) -> McpServer:
    """The row an operator would enter for this scenario (its context carries pre-registered credentials)."""
    from nr_llm.models import AuthPlacement, DataClass, McpServer, OAuthGrantType, OAuthRegistration
    from nr_llm.servers import credentials

    context = run.context
    client_id = context.get("client_id") or ""
    federation: dict[str, Any] = {}
    if run.scenario == "auth/enterprise-managed-authorization":
        grant, registration = OAuthGrantType.ENTERPRISE, OAuthRegistration.PREREGISTERED
        federation = {
            "oauth_mode": "per_user",
            "oauth_idp_token_endpoint": context.get("idp_token_endpoint") or "",
            "oauth_idp_client_id": context.get("idp_client_id") or "",
        }
    elif run.scenario == "auth/wif-jwt-bearer":
        grant, registration = OAuthGrantType.WORKLOAD, OAuthRegistration.PREREGISTERED
        # The platform mounts the workload's JWT in a file, as a Kubernetes projected token.
        mounted = os.path.join(tempfile.mkdtemp(prefix="nr-llm-wif-"), "token")
        with open(mounted, "w") as file:
            file.write(str(context.get("valid_jwt") or ""))
        federation = {"oauth_assertion_file": mounted}
    elif "client-credentials" in run.scenario:
        grant, registration = OAuthGrantType.CLIENT_CREDENTIALS, OAuthRegistration.PREREGISTERED
    elif client_id:
        grant, registration = OAuthGrantType.AUTHORIZATION_CODE, OAuthRegistration.PREREGISTERED
    elif "cimd" in run.scenario:
        grant, registration = OAuthGrantType.AUTHORIZATION_CODE, OAuthRegistration.METADATA_DOCUMENT
    else:
        grant, registration = OAuthGrantType.AUTHORIZATION_CODE, OAuthRegistration.DYNAMIC
    server = McpServer(
        identifier="conformance",
        name="Conformance scenario",
        url=run.endpoint.url,
        auth_placement=AuthPlacement.OAUTH,
        oauth_grant_type=grant,
        oauth_registration=registration,
        oauth_client_id=client_id,
        oauth_issuer=(auth.registered_issuer(run.endpoint.url) or "") if client_id else "",
        data_class=DataClass.PUBLIC_CONTENT,
        enabled=True,
        oauth_dpop=run.scenario.startswith("auth/dpop"),
        oauth_mode="per_user" if per_user() else "shared",
    )
    for name, value in federation.items():
        setattr(server, name, value)
    # As McpServerForm stores them: never in clear text.
    if secret := context.get("client_secret"):
        server.oauth_client_secret_ciphertext = credentials.encrypt(secret)
    if pem := context.get("private_key_pem"):
        server.oauth_private_key_ciphertext = credentials.encrypt(pem)
    server.full_clean()
    server.save()
    return server


def operator_connect(run: Run, server: McpServer, user: Any) -> Callable[[Any], None]:
    """The admin's Connect button and callback view, with auth.py's browser in between."""
    from nr_llm.authorization import service

    def connect(_required: Any) -> None:
        callback = auth.browse(run, service.start_connect(server, user, for_user=per_user()))
        connected = service.finish_connect(user, callback, for_user=per_user())
        run.say(f"connected: scopes {' '.join(connected.scopes) or '(none)'}")

    return connect


#: Where the hook below finds the signed-in user's ID token (the scenario's).
ID_TOKEN_ENV = "NR_LLM_CONFORMANCE_ID_TOKEN"


def identity_token(user: Any, server: McpServer) -> str | None:
    """The site's NR_LLM_OAUTH_IDENTITY_TOKEN hook: the ID token of the user's sign-in, which
    a site keeps from its OIDC login; here the one the scenario's identity provider issued."""
    return os.environ.get(ID_TOKEN_ENV) or None


def authorize_and(work: Callable[[Run], None], run: Run) -> None:
    """auth.authorize_and, with the app's row, endpoint, client, grant store and Connect."""
    if id_token := run.context.get("idp_id_token"):
        os.environ[ID_TOKEN_ENV] = str(id_token)
    configure()
    from django.contrib.auth import get_user_model
    from django.test import override_settings

    from nr_llm.authorization.actors import NeedsAuthorization, resolve
    from nr_llm.models import OAuthGrantType
    from nr_llm.servers.endpoints import endpoint_for, mcp_client

    # As a site's settings module names its hook (for this process, the driver is the site).
    override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=f"{__name__}.identity_token").enable()
    server = server_for(run)
    operator = get_user_model().objects.create_user("operator", is_staff=True)
    run.client = mcp_client()
    if server.oauth_grant_type == OAuthGrantType.ENTERPRISE:
        # No Connect: actors.resolve asks the hook for the user's ID token, and the grant is
        # obtained inside the call, as that user's own.
        resolved = resolve(server, operator)
        if isinstance(resolved, NeedsAuthorization):
            run.say(f"needs authorization: {resolved.reason}")
            raise SystemExit(1)
        run.endpoint = resolved
    else:
        # Per user: the endpoint actors.resolve gives the user once connected (their own grant).
        run.endpoint = endpoint_for(server, user_id=operator.pk if per_user() else None)
    run.say(f"through the Django app: {server.oauth_grant_type}, {server.oauth_registration}")
    auth.with_operator(
        work,
        run,
        can_connect=server.oauth_grant_type == OAuthGrantType.AUTHORIZATION_CODE,
        connect=operator_connect(run, server, operator),
    )
