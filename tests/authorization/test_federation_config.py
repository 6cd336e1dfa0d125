"""Enterprise-managed authorization and workload identity configured on the server row: what the
row must hold, what the protocol client is given, the site's identity-token hook
(``NR_LLM_OAUTH_IDENTITY_TOKEN``) and its checks, and a user the hook has no token for
(``sign_in``: not contacted, sent to the login page). The end-to-end proof is the official
suite's scenarios through the Django app (tests/conformance, THROUGH_DJANGO)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from nr_llm.authorization.actors import NeedsAuthorization, resolve
from nr_llm.authorization.service import client_config
from nr_llm.mcp import Endpoint
from nr_llm.models import McpServer, ToolCall
from nr_llm.servers import credentials
from nr_llm.tools import execute
from tests.factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db

HOOK = "tests.authorization.test_federation_config.id_token_of"
tokens_for: dict[str, str] = {}
asked_for: list[tuple[str, str]] = []


def id_token_of(user: Any, server: McpServer) -> str | None:
    """A site's hook: the ID token its OIDC login kept for ``user`` (here, a dict)."""
    asked_for.append((user.username, server.identifier))
    return tokens_for.get(user.username)


not_callable = "a module attribute that is no function"


def failing_hook(user: Any, server: McpServer) -> str | None:
    raise RuntimeError("the site's session store is down")


@pytest.fixture(autouse=True)
def _tokens() -> Any:
    tokens_for.clear()
    asked_for.clear()
    yield
    tokens_for.clear()


def _enterprise(**fields: Any) -> McpServer:
    values: dict[str, Any] = {
        "auth_placement": "oauth",
        "oauth_grant_type": "enterprise",
        "oauth_mode": "per_user",
        "oauth_registration": "preregistered",
        "oauth_client_id": "mcp-client",
        "oauth_issuer": "https://as.example",
        "oauth_idp_token_endpoint": "https://idp.example/token",
        "oauth_idp_client_id": "site-at-idp",
    }
    values.update(fields)
    return McpServerFactory.create(**values)


def test_enterprise_needs_per_user_mode_and_its_identity_provider() -> None:
    """Shared mode, or no identity provider token endpoint, is refused with the field named."""
    with pytest.raises(ValidationError) as shared:
        _enterprise(oauth_mode="shared").full_clean()
    assert "oauth_mode" in shared.value.message_dict
    with pytest.raises(ValidationError) as no_idp:
        _enterprise(oauth_idp_token_endpoint="").full_clean()
    assert "oauth_idp_token_endpoint" in no_idp.value.message_dict
    _enterprise().full_clean()


def test_workload_needs_exactly_one_source_and_the_shared_mode() -> None:
    base = {"auth_placement": "oauth", "oauth_grant_type": "workload"}
    for sources in ({}, {"oauth_assertion_file": "/var/run/token", "oauth_assertion_env": "WIF_TOKEN"}):
        with pytest.raises(ValidationError) as caught:
            McpServerFactory.create(**base, **sources).full_clean()
        assert "oauth_assertion_file" in caught.value.message_dict
    with pytest.raises(ValidationError) as per_user:
        McpServerFactory.create(**base, oauth_assertion_env="WIF_TOKEN", oauth_mode="per_user").full_clean()
    assert "oauth_mode" in per_user.value.message_dict
    McpServerFactory.create(**base, oauth_assertion_env="WIF_TOKEN").full_clean()


@override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=HOOK)
def test_the_client_config_carries_each_modes_settings_and_asks_the_hook_lazily() -> None:
    """The protocol client gets the grant, the identity provider (secret decrypted for this
    operation only) and a token source that asks the hook once, when a grant is needed."""
    alice = User.objects.create_user("alice")
    server = _enterprise(oauth_idp_client_secret_ciphertext=credentials.encrypt("idp-secret"))
    config = client_config(server, with_redirect=False, user_id=alice.pk)
    assert (config.grant, config.idp_token_endpoint, config.idp_client_id) == (
        "enterprise",
        "https://idp.example/token",
        "site-at-idp",
    )
    assert config.idp_client_secret == "idp-secret" and "idp-secret" not in repr(config)
    assert asked_for == [] and config.identity_token is not None
    tokens_for["alice"] = "id-token-alice"
    assert config.identity_token() == "id-token-alice" and config.identity_token() == "id-token-alice"
    assert asked_for == [("alice", server.identifier)]

    workload = McpServerFactory.create(
        auth_placement="oauth", oauth_grant_type="workload", oauth_assertion_file="/var/run/wif"
    )
    config = client_config(workload, with_redirect=False)
    assert (config.grant, config.assertion_file, config.identity_token) == ("workload", "/var/run/wif", None)


@pytest.mark.django_db(transaction=True)
@override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=HOOK, LOGIN_URL="/accounts/login/")
def test_a_user_the_hook_has_no_token_for_must_sign_in_and_nothing_is_sent() -> None:
    """No grant and no ID token: ``sign_in`` with the login page, the ledger row says so, and
    the server (an address nothing listens on) is not contacted; with a token, an endpoint."""
    alice = User.objects.create_user("alice")
    server = _enterprise()
    needs = resolve(server, alice)
    assert isinstance(needs, NeedsAuthorization)
    assert (needs.reason, needs.connect_url) == ("sign_in", "/accounts/login/")
    tool = McpToolFactory.create(server=server, enabled=True)
    result = execute(tool.tool_name, {}, actor=alice)
    assert (result.status, result.authorization_reason) == ("needs_authorization", "sign_in")
    assert result.connect_url == "/accounts/login/" and "sign in" in result.text
    assert result.call_id is not None
    row = ToolCall.objects.get(pk=result.call_id)
    assert row.error_kind == "needs_authorization"
    assert "sign in" in credentials.decrypt(row.result_preview_ciphertext)
    tokens_for["alice"] = "id-token-alice"
    assert isinstance(resolve(server, alice), Endpoint)


def test_a_hook_that_does_not_import_or_call_fails_the_check() -> None:
    for path in ("tests.nowhere.hook", f"{__name__}.not_callable", "not a dotted path"):
        with override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=path), pytest.raises(SystemCheckError) as info:
            call_command("check", "--tag", "nr_llm")
        assert "nr_llm.E070" in str(info.value)
    with override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=HOOK):
        call_command("check", "--tag", "nr_llm")


def test_an_enterprise_server_without_the_hook_fails_the_database_check() -> None:
    _enterprise()
    with pytest.raises(SystemCheckError) as info:
        call_command("check", "--database", "default")
    assert "nr_llm.E071" in str(info.value)
    with override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=HOOK):
        call_command("check", "--database", "default")


def test_an_operator_sets_enterprise_settings_in_the_admin_and_the_idp_secret_stays_hidden(
    admin_client: Any,
) -> None:
    """The change form takes each mode's settings and the user imports act as; the IdP's client
    secret is stored encrypted and never rendered back."""
    from django.urls import reverse

    from tests.test_admin_credential import _form_data

    server = McpServerFactory.create()
    olivia = User.objects.create_user("olivia")
    secret = "idp-secret-not-for-html-42"
    data = _form_data(
        server,
        auth_placement="oauth",
        oauth_grant_type="enterprise",
        oauth_mode="per_user",
        oauth_registration="dynamic",
        oauth_idp_token_endpoint="https://idp.example/token",
        oauth_idp_client_id="site-at-idp",
        new_oauth_idp_client_secret=secret,
        catalogue_user=olivia.pk,
    )
    url = reverse("admin:nr_llm_mcpserver_change", args=[server.pk])
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    server.refresh_from_db()
    assert (server.oauth_grant_type, server.catalogue_user_id) == ("enterprise", olivia.pk)
    assert credentials.decrypt(server.oauth_idp_client_secret_ciphertext) == secret
    page = admin_client.get(url).content.decode()
    assert secret not in page and server.oauth_idp_client_secret_ciphertext not in page
    assert "site-at-idp" in page


def test_the_connected_accounts_page_offers_no_connect_for_an_enterprise_server(client: Any) -> None:
    """Such a server acts through the user's sign-in: a Connect there could only fail."""
    from django.urls import reverse

    enterprise = _enterprise(name="Enterprise wiki")
    McpServerFactory.create(
        name="Own account tracker",
        auth_placement="oauth",
        oauth_mode="per_user",
        oauth_grant_type="authorization_code",
    )
    client.force_login(User.objects.create_user("alice"))
    page = client.get(reverse("nr_llm_connected_accounts")).content.decode()
    assert "Own account tracker" in page
    assert enterprise.name not in page


@override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=HOOK, LOGIN_URL="/accounts/login/")
def test_an_expired_enterprise_grant_without_refresh_asks_the_hook_before_sending() -> None:
    """Renewing it needs a new ID-JAG, so the user's ID token: none means ``sign_in`` up front,
    not a failed call; a fresh grant is used without asking the hook at all."""
    from datetime import timedelta

    from django.utils import timezone

    from nr_llm.models import UserGrantRecord

    alice = User.objects.create_user("alice")
    server = _enterprise()
    record = UserGrantRecord.objects.create(
        server=server,
        user=alice,
        access_token_ciphertext=credentials.encrypt("at-alice"),
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    needs = resolve(server, alice)
    assert isinstance(needs, NeedsAuthorization) and needs.reason == "sign_in"
    record.expires_at = timezone.now() + timedelta(minutes=5)
    record.save()
    asked_for.clear()
    assert isinstance(resolve(server, alice), Endpoint)
    assert asked_for == []


@override_settings(NR_LLM_OAUTH_IDENTITY_TOKEN=f"{__name__}.failing_hook")
def test_a_failing_hook_reads_as_no_token_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """execute() answers with a result, never the site hook's exception: sign_in, and an error
    logged for the site to fix."""
    alice = User.objects.create_user("alice")
    server = _enterprise()
    needs = resolve(server, alice)
    assert isinstance(needs, NeedsAuthorization) and needs.reason == "sign_in"
    assert any(
        record.name == "nr_llm.authorization" and record.levelname == "ERROR" and record.exc_info
        for record in caplog.records
    )


@pytest.mark.django_db(transaction=True)
def test_an_operator_connects_a_workload_server_in_the_admin(oauth_peers: Any, tmp_path: Any) -> None:
    """Connect obtains the grant at once with the mounted JWT (no browser): with no file it says
    so, naming no secret; with one, the token endpoint (django-oauth-toolkit, which has no
    jwt-bearer grant) is asked and its refusal reported. The state column names the mode."""
    from django.urls import reverse

    from nr_llm.authorization.columns import state
    from tests.admin_clients import messages_of
    from tests.authorization.helpers import SETTINGS, oauth_server, operator

    machine = oauth_peers.auth.machine_client
    mounted = tmp_path / "token"
    with override_settings(**SETTINGS):
        server = oauth_server(
            oauth_peers,
            oauth_grant_type="workload",
            oauth_registration="preregistered",
            oauth_issuer=oauth_peers.auth.issuer,
            oauth_client_id=machine.client_id,
            oauth_client_secret_ciphertext=credentials.encrypt(machine.client_secret),
            oauth_assertion_file=str(mounted),
        )
        client = operator()
        connect = reverse("admin:nr_llm_mcpserver_oauth_connect", args=[server.pk])
        [(level, text)] = messages_of(client.post(connect, follow=True))
        assert level == "error" and "no usable workload identity assertion" in text, text
        mounted.write_text("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl")
        [(level, text)] = messages_of(client.post(connect, follow=True))
    # The jwt-bearer grant reached the token endpoint, which does not offer it.
    assert level == "error" and "token endpoint refused" in text and "unsupported_grant_type" in text, text
    assert "c2lnbmF0dXJl" not in text
    assert state(server, None, timezone_now()).text == "workload identity, no token yet"


def timezone_now() -> Any:
    from django.utils import timezone

    return timezone.now()
