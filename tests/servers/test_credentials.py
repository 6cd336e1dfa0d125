import logging

import pytest
from django.test import override_settings

from nr_llm.servers import credentials
from nr_llm.servers.credentials import CredentialUnavailable
from nr_llm.servers.endpoints import endpoint_for

from ..factories import McpServerFactory

SECRET = "s3cr3t-token-VALUE-42"
KEY_A = "key-a-0123456789abcdef"
KEY_B = "key-b-0123456789abcdef"


def test_ciphertext_is_not_the_secret_and_round_trips():
    """What is stored is a token, never the secret; decrypting gives the secret back."""
    token = credentials.encrypt(SECRET)
    assert SECRET not in token
    assert credentials.decrypt(token) == SECRET


def test_rotation_keeps_old_tokens_readable_and_rewrites_them_under_the_new_key():
    """New key first, old key after: old tokens decrypt, rotate() moves them to the new key."""
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_A]):
        old = credentials.encrypt(SECRET)
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_B, KEY_A]):
        assert credentials.decrypt(old) == SECRET
        rotated = credentials.rotate(old)
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_B]):
        assert credentials.decrypt(rotated) == SECRET
        with pytest.raises(CredentialUnavailable):
            credentials.decrypt(old)


def test_secret_key_fallbacks_keep_credentials_readable():
    """Without dedicated keys, Django's SECRET_KEY rotation (SECRET_KEY_FALLBACKS) applies."""
    with override_settings(SECRET_KEY="old-secret-key-0123456789"):
        token = credentials.encrypt(SECRET)
    with override_settings(
        SECRET_KEY="new-secret-key-0123456789", SECRET_KEY_FALLBACKS=["old-secret-key-0123456789"]
    ):
        assert credentials.decrypt(token) == SECRET


def test_undecryptable_token_fails_without_leaking_anything():
    """A token from a lost key is a clear error whose text holds neither secret nor token."""
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_A]):
        token = credentials.encrypt(SECRET)
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_B]), pytest.raises(CredentialUnavailable) as info:
        credentials.decrypt(token)
    assert SECRET not in str(info.value)
    assert token not in str(info.value)


@pytest.mark.django_db
def test_endpoint_carries_the_secret_but_never_shows_it(caplog):
    """The endpoint holds the clear secret for the request, yet repr, str and logs never show it."""
    server = McpServerFactory.create(auth_placement="bearer")
    server.set_credential(SECRET)
    server.save()
    endpoint = endpoint_for(server)
    assert endpoint.credential == SECRET
    logging.getLogger("nr_llm.test").warning("endpoint %r / %s / %r", endpoint, endpoint, server)
    assert SECRET not in repr(endpoint)
    assert SECRET not in caplog.text
    assert server.credential_ciphertext not in caplog.text


@pytest.mark.django_db
def test_unresolvable_environment_credential_fails_closed(monkeypatch):
    """A credential named by an unset environment variable gives no credential and a reason."""
    monkeypatch.delenv("NR_LLM_TEST_TOKEN", raising=False)
    server = McpServerFactory.create(auth_placement="bearer", credential_env="NR_LLM_TEST_TOKEN")
    endpoint = endpoint_for(server)
    assert endpoint.credential is None
    assert "NR_LLM_TEST_TOKEN" in endpoint.credential_problem
    monkeypatch.setenv("NR_LLM_TEST_TOKEN", SECRET)
    assert endpoint_for(server).credential == SECRET


@pytest.mark.django_db
def test_bearer_without_any_credential_is_a_problem_not_an_anonymous_call():
    """Bearer auth with nothing configured is reported, so the client can fail closed."""
    endpoint = endpoint_for(McpServerFactory.create(auth_placement="bearer"))
    assert endpoint.credential is None
    assert endpoint.credential_problem == "no credential is configured"


@pytest.mark.django_db
def test_rotate_command_moves_stored_credentials_to_the_new_key():
    """`mcp_rotate_credentials` re-encrypts under the first key, so the old key can go."""
    from io import StringIO

    from django.core.management import call_command

    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_A]):
        server = McpServerFactory.create(auth_placement="bearer")
        server.set_credential(SECRET)
        server.save()
    out = StringIO()
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_B, KEY_A]):
        call_command("mcp_rotate_credentials", stdout=out)
    assert "1 credential(s) re-encrypted" in out.getvalue()
    server.refresh_from_db()
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_B]):
        assert server.resolve_credential() == SECRET


@pytest.mark.django_db
def test_rotate_command_fails_and_keeps_tokens_no_key_can_read():
    """A token no configured key reads is named, left untouched, and the exit is non-zero."""
    from django.core.management import CommandError, call_command

    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_A]):
        server = McpServerFactory.create(auth_placement="bearer")
        server.set_credential(SECRET)
        server.save()
    before = server.credential_ciphertext
    with override_settings(NR_LLM_CREDENTIAL_KEYS=[KEY_B]), pytest.raises(CommandError) as info:
        call_command("mcp_rotate_credentials")
    assert server.identifier in str(info.value)
    assert info.value.returncode == 2
    server.refresh_from_db()
    assert server.credential_ciphertext == before
