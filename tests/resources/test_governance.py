"""Resource reads, prompt gets and completions governed as tool calls are, against the official
SDK 2.3 server: ledger rows that name their server, no row no request, and per-user servers
that act as the actor or are not contacted at all (``needs_authorization``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection, transaction
from django.urls import reverse

from nr_llm import prompts, resources
from nr_llm.catalogue import enable_features, import_catalogue
from nr_llm.governance import ledger
from nr_llm.mcp import CallOutcome, Endpoint
from nr_llm.mcp.protocol.features import Completion, PromptOutcome
from nr_llm.models import McpFeature, McpServer, ToolCall
from nr_llm.servers.endpoints import mcp_client
from tests import catalogue_peers
from tests.peers import running

from ..factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

# transaction=True: the ledger writes on a connection of its own.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.usefixtures("loopback_allowed"),
]


class Counting:
    """The installation's real client, counting what reaches it: proof of "not contacted"."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def read_resource(self, endpoint: Endpoint, uri: str) -> CallOutcome:
        self.sent.append(f"read {uri}")
        return mcp_client().read_resource(endpoint, uri)

    def get_prompt(
        self, endpoint: Endpoint, name: str, arguments: dict[str, str] | None = None
    ) -> PromptOutcome:
        self.sent.append(f"get {name}")
        return mcp_client().get_prompt(endpoint, name, arguments)

    def complete(
        self,
        endpoint: Endpoint,
        ref: dict[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
    ) -> Completion:
        self.sent.append(f"complete {argument}")
        return mcp_client().complete(endpoint, ref, argument, value, context=context)


@pytest.fixture(scope="module")
def features_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.features_server"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def server(features_url: str) -> McpServer:
    server = McpServerFactory.create(
        identifier="feat", url=features_url, enabled=True, requires_approval=False, data_class="editorContent"
    )
    assert import_catalogue(server).ok
    enable_features(McpFeature.objects.filter(server=server).values_list("pk", flat=True))
    return server


def test_reads_and_gets_leave_rows_that_name_their_server(server: McpServer) -> None:
    """As a tool call's row: the server's key, identifier and data class, for a read that ran, a
    get that ran and a read refused before contact alike."""
    assert not resources.read("docs://readme", server="feat", actor="ann").is_error
    assert not prompts.get("greet", {"name": "Ann"}, actor="ann").is_error
    assert resources.read("docs://nothing", server="feat", actor="ann").status == "refused"
    rows = ToolCall.objects.order_by("created")
    assert [(row.tool_name, row.server_id, row.server_identifier, row.data_class) for row in rows] == [
        ("resources/read feat docs://readme", server.pk, "feat", "editorContent"),
        ("prompts/get feat greet", server.pk, "feat", "editorContent"),
        ("resources/read feat (refused)", server.pk, "feat", "editorContent"),
    ]


def test_a_read_whose_row_the_database_refuses_is_not_sent(
    server: McpServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No row, no request: the database refuses the running row, the server is never asked, the
    caller reads why, the operator's log keeps the driver's words."""

    def refuse(work: Any, **options: Any) -> None:
        raise OperationalError('relation "nr_llm_toolcall" is locked')

    monkeypatch.setattr(ledger, "run_in_own_transaction", refuse)
    client = Counting()
    with caplog.at_level(logging.ERROR, logger="nr_llm.resources"):
        read = resources.read("docs://readme", server="feat", client=client)
        got = prompts.get("greet", {"name": "Ann"}, client=client)
    assert (read.status, read.is_error, client.sent) == ("failed", True, [])
    assert "could not be recorded in the ledger (the database refused the write" in read.text
    assert read.text.endswith("it was not sent") and "nr_llm_toolcall" not in read.text
    assert (got.status, got.is_error) == ("failed", True) and got.text.endswith("it was not sent")
    assert any("is locked" in record.getMessage() for record in caplog.records)
    monkeypatch.undo()
    assert ToolCall.objects.count() == 0


def test_on_sqlite_a_read_inside_the_callers_transaction_is_not_sent(server: McpServer) -> None:
    """SQLite's one writer is the caller's own transaction: the row cannot be written, so the
    read is not sent (the database's own refusal, nothing patched)."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL writes the row beside the caller's transaction")
    client = Counting()
    with transaction.atomic():
        read = resources.read("docs://readme", server="feat", client=client)
    assert (read.status, client.sent) == ("failed", [])
    assert "inside a transaction" in read.text
    assert ToolCall.objects.count() == 0


def _per_user(server: McpServer) -> None:
    """The same server switched to per-user OAuth: each call must act with its actor's grant."""
    McpServer.objects.filter(pk=server.pk).update(auth_placement="oauth", oauth_mode="per_user")


@pytest.mark.parametrize(("who", "reason"), [(None, "no actor"), ("alice", "not connected")])
def test_a_per_user_server_is_not_contacted_without_the_actors_grant(
    server: McpServer, who: str | None, reason: str
) -> None:
    """read, get and complete as tools.execute: ``needs_authorization`` with the URL where the
    actor connects, nothing sent; the read and the get each leave their refused row."""
    _per_user(server)
    actor = User.objects.create_user(who) if who else None
    client = Counting()
    read = resources.read("docs://readme", server="feat", actor=actor, client=client)
    got = prompts.get("greet", {"name": "Ann"}, actor=actor, client=client)
    completed = prompts.complete("greet", "style", "p", actor=actor, client=client)
    connect = reverse("nr_llm_connect", args=["feat"])
    for result in (read, got, completed):
        assert result.status == "needs_authorization", result
        assert result.connect_url == connect, result
        assert reason in result.text and connect in result.text
    assert (read.is_error, got.is_error, got.messages, completed.values) == (True, True, [], ())
    assert client.sent == []
    rows = ToolCall.objects.order_by("created")
    assert [(row.tool_name, row.status, row.error_kind, row.server_identifier) for row in rows] == [
        ("resources/read feat docs://readme", "failed", "needs_authorization", "feat"),
        ("prompts/get feat greet", "failed", "needs_authorization", "feat"),
    ]


def test_completion_is_a_frozen_result(server: McpServer) -> None:
    completed = prompts.complete("greet", "style", "p", actor="ann")
    assert completed == prompts.CompletionResult(("plain", "pirate", "poem"), total=None, has_more=False)
    with pytest.raises(AttributeError):
        completed.values = ()  # type: ignore[misc]
    refused = prompts.complete("nothing", "style", "p")
    assert (refused.status, refused.values) == ("refused", ())
    assert "no enabled prompt 'nothing'" in refused.text
