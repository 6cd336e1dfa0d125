"""The per-user side of DatabaseGrantStore: one row per (server, user), nothing of one user
reaching another, a lock per (server, user), and DPoP keys encrypted beside the tokens."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from django.contrib.auth.models import User

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp.oauth import DpopKey
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import McpTransportError
from nr_llm.models import McpServer, OAuthGrantRecord, UserGrantRecord
from tests.authorization.test_store import GRANT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> McpServer:
    return McpServer.objects.create(
        identifier="protected",
        name="Protected",
        url=GRANT.resource,
        auth_placement="oauth",
        oauth_mode="per_user",
    )


def _users() -> tuple[User, User]:
    return User.objects.create_user("alice"), User.objects.create_user("bob")


def test_each_user_reads_only_their_own_row(server: McpServer) -> None:
    alice, bob = _users()
    DatabaseGrantStore(alice.pk).save("protected", GRANT)
    assert DatabaseGrantStore(bob.pk).load("protected") is None
    assert DatabaseGrantStore().load("protected") is None
    loaded = DatabaseGrantStore(alice.pk).load("protected")
    assert loaded is not None and loaded.access_token == GRANT.access_token
    assert UserGrantRecord.objects.filter(user=alice).count() == 1
    # The client registration is the server's, shared by its users.
    DatabaseGrantStore(alice.pk).save_registration("protected", GRANT.client)
    assert DatabaseGrantStore(bob.pk).load_registration("protected", GRANT.client.issuer) == GRANT.client
    assert OAuthGrantRecord.objects.filter(server=server).exclude(access_token_ciphertext="").count() == 0


def test_forget_deletes_the_users_row_only(server: McpServer) -> None:
    alice, bob = _users()
    for user in (alice, bob):
        DatabaseGrantStore(user.pk).save("protected", GRANT)
    DatabaseGrantStore(alice.pk).forget("protected")
    assert list(UserGrantRecord.objects.values_list("user__username", flat=True)) == ["bob"]


def test_the_dpop_key_is_kept_encrypted_with_the_grant(server: McpServer) -> None:
    alice, _ = _users()
    key = DpopKey.generate()
    bound = dataclasses.replace(GRANT, token_type="DPoP", dpop_key=key.pem)
    DatabaseGrantStore(alice.pk).save("protected", bound)
    record = UserGrantRecord.objects.get(user=alice)
    assert record.token_type == "DPoP" and record.dpop_key_ciphertext
    assert "PRIVATE KEY" not in record.dpop_key_ciphertext and key.pem not in repr(record)
    loaded = DatabaseGrantStore(alice.pk).load("protected")
    assert loaded is not None and loaded.dpop_key == key.pem and loaded.token_type == "DPoP"
    assert key.pem not in repr(loaded)


def test_a_saved_grant_for_a_deleted_user_fails_typed(server: McpServer) -> None:
    """A user deleted while their call was in flight: the renewed grant cannot be kept, and says so
    as the store's typed error, never the driver's, never with a token."""
    alice, _ = _users()
    store = DatabaseGrantStore(alice.pk)
    alice.delete()
    with pytest.raises(McpTransportError) as caught:
        store.save("protected", GRANT)
    assert GRANT.access_token not in str(caught.value)
    assert not UserGrantRecord.objects.exists()


def test_two_users_renew_at_once_and_one_user_waits_for_themself(server: McpServer) -> None:
    """The lock is per (server, user): Bob's renewal does not wait for Alice's; Alice's second one does."""
    alice, bob = _users()
    clock = MonotonicClock()
    held = threading.Event()
    release = threading.Event()

    def hold_alice() -> None:
        with DatabaseGrantStore(alice.pk).exclusive("protected", OperationDeadline(20, clock, "protected")):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_alice)
    holder.start()
    try:
        assert held.wait(10)
        outcomes: dict[str, str] = {}

        def take(name: str, user_id: int) -> None:
            try:
                with DatabaseGrantStore(user_id).exclusive(
                    "protected", OperationDeadline(2, clock, "protected")
                ):
                    outcomes[name] = "got it"
            except McpTransportError as exc:
                outcomes[name] = exc.kind

        threads = [
            threading.Thread(target=take, args=args) for args in (("bob", bob.pk), ("alice", alice.pk))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert outcomes == {"bob": "got it", "alice": "deadline_exhausted"}
    finally:
        release.set()
        holder.join(10)
