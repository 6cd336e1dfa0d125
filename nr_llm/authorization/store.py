"""The protocol client's ``GrantStore`` over the database, shared by every worker.

Two rules from the issue shape it:

- ``exclusive`` is a row lock (``SELECT … FOR UPDATE``) held around re-read, refresh
  and save, so that two processes never spend one refresh token; the grant is re-read
  after the lock is taken (``load`` inside ``exclusive`` reads through the locking
  transaction).
- A rotated refresh token is committed in a transaction of its own: the authorization
  server has already invalidated the old one, so a caller's rollback (an ``atomic``
  block around a tool call, ``ATOMIC_REQUESTS``) must not take the new one with it.

Both need a transaction that is not the caller's (``nr_llm.own_transaction``): the store's
writes run on a thread of their own, whose transaction commits whatever the calling thread
later does with its own.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db import connection, transaction
from django.utils import timezone

from .. import credentials
from ..mcp.oauth import ClientRegistration, Grant
from ..models import McpServer
from ..own_transaction import run_in_own_transaction
from .models import OAuthGrantRecord

T = TypeVar("T")

# Longest a worker waits for another worker's refresh of the same server: a refresh is one
# leg of an operation, so the operation's own budget ends first in practice.
LOCK_WAIT_SECONDS = 120


class _LockHolder:
    """A thread holding the row lock in its transaction, running the store's calls in it."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._locked: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="nr-llm-grant-lock", daemon=True)

    def __enter__(self) -> _LockHolder:
        self._thread.start()
        self._locked.result()
        return self

    def __exit__(self, *exc_info: object) -> None:
        # Commit whatever was saved: a rotated token is kept even if the caller then fails.
        self._jobs.put(None)
        self._thread.join()

    def call(self, work: Callable[[], T]) -> T:
        done: Future[T] = Future()
        self._jobs.put((work, done))
        return done.result()

    def _run(self) -> None:
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_SECONDS}s'")
                _locked_record(self._server)
                self._locked.set_result(None)
                while (job := self._jobs.get()) is not None:
                    work, done = job
                    try:
                        done.set_result(work())
                    except BaseException as exc:
                        done.set_exception(exc)
        except BaseException as exc:
            if not self._locked.done():
                self._locked.set_exception(exc)
        finally:
            connection.close()


def _locked_record(server: str) -> OAuthGrantRecord:
    # The server row is locked first: it always exists, so two first-time callers
    # serialize on it before either creates the grant row.
    server_pk = McpServer.objects.select_for_update().values_list("pk", flat=True).get(identifier=server)
    record, _ = OAuthGrantRecord.objects.get_or_create(server_id=server_pk)
    return OAuthGrantRecord.objects.select_for_update().get(pk=record.pk)


class DatabaseGrantStore:
    """``GrantStore`` for the Django app: one ``OAuthGrantRecord`` per server, secrets encrypted."""

    def __init__(self) -> None:
        self._holders: dict[str, _LockHolder] = {}
        self._guard = threading.Lock()

    # -- the protocol ------------------------------------------------------------------

    def load(self, server: str) -> Grant | None:
        return self._in_lock_or_not(server, lambda: _grant_of(_record(server)))

    def save(self, server: str, grant: Grant) -> None:
        self._in_lock_or_own(server, lambda: _write_grant(server, grant))

    def forget(self, server: str) -> None:
        self._in_lock_or_own(server, lambda: _forget(server))

    def load_registration(self, server: str, issuer: str) -> ClientRegistration | None:
        def read() -> ClientRegistration | None:
            registration = _registration_of(_record(server))
            return registration if registration is not None and registration.issuer == issuer else None

        return self._in_lock_or_not(server, read)

    def save_registration(self, server: str, registration: ClientRegistration) -> None:
        def write() -> None:
            record = _ensure_record(server)
            OAuthGrantRecord.objects.filter(pk=record.pk).update(
                registration_ciphertext=_encrypt_json(asdict(registration))
            )

        self._in_lock_or_own(server, write)

    @contextlib.contextmanager
    def exclusive(self, server: str) -> Iterator[None]:
        with self._guard:
            if server in self._holders:
                raise RuntimeError("exclusive() is not re-entrant for one server")
        with _LockHolder(server) as holder:
            with self._guard:
                self._holders[server] = holder
            try:
                yield
            finally:
                with self._guard:
                    del self._holders[server]

    # -- beyond the protocol: what the admin shows and sets ----------------------------

    def mark_attention(self, server: str, reason: str, scopes: tuple[str, ...]) -> None:
        """Remember that ``server`` needs an operator (shown as "needs reconnect")."""

        def write() -> None:
            record = _ensure_record(server)
            OAuthGrantRecord.objects.filter(pk=record.pk).update(
                attention_reason=reason[:32],
                attention_scopes=" ".join(scopes)[:1000],
                attention_since=timezone.now(),
            )

        self._in_lock_or_own(server, write)

    # -- plumbing ----------------------------------------------------------------------

    def _holder(self, server: str) -> _LockHolder | None:
        with self._guard:
            return self._holders.get(server)

    def _in_lock_or_not(self, server: str, work: Callable[[], T]) -> T:
        holder = self._holder(server)
        # Outside a lock a read on the caller's connection is enough (it sees what committed);
        # inside, it must go through the locking transaction: that is the re-read.
        return holder.call(work) if holder is not None else work()

    def _in_lock_or_own(self, server: str, work: Callable[[], T]) -> T:
        holder = self._holder(server)
        return (
            holder.call(work)
            if holder is not None
            else run_in_own_transaction(work, name="nr-llm-grant-store")
        )


def _record(server: str) -> OAuthGrantRecord | None:
    return OAuthGrantRecord.objects.filter(server__identifier=server).first()


def _ensure_record(server: str) -> OAuthGrantRecord:
    server_pk = McpServer.objects.values_list("pk", flat=True).get(identifier=server)
    record, _ = OAuthGrantRecord.objects.get_or_create(server_id=server_pk)
    return record


def _write_grant(server: str, grant: Grant) -> None:
    record = _ensure_record(server)
    OAuthGrantRecord.objects.filter(pk=record.pk).update(
        access_token_ciphertext=credentials.encrypt(grant.access_token),
        refresh_token_ciphertext=credentials.encrypt(grant.refresh_token) if grant.refresh_token else "",
        registration_ciphertext=_encrypt_json(asdict(grant.client)),
        expires_at=datetime.fromtimestamp(grant.expires_at, tz=UTC) if grant.expires_at is not None else None,
        granted_scopes=" ".join(grant.scopes)[:1000],
        grant_type=grant.grant_type,
        issuer=grant.issuer,
        token_endpoint=grant.token_endpoint,
        resource=grant.resource,
        connected_at=record.connected_at
        if record.issuer == grant.issuer and record.connected_at
        else timezone.now(),
        attention_reason="",
        attention_scopes="",
        attention_since=None,
    )


def _forget(server: str) -> None:
    OAuthGrantRecord.objects.filter(server__identifier=server).update(
        access_token_ciphertext="",
        refresh_token_ciphertext="",
        expires_at=None,
        granted_scopes="",
        connected_at=None,
        attention_reason="",
        attention_scopes="",
        attention_since=None,
    )


def _grant_of(record: OAuthGrantRecord | None) -> Grant | None:
    if record is None or not record.access_token_ciphertext:
        return None
    registration = _registration_of(record)
    if registration is None:
        return None
    return Grant(
        access_token=credentials.decrypt(record.access_token_ciphertext),
        refresh_token=credentials.decrypt(record.refresh_token_ciphertext)
        if record.refresh_token_ciphertext
        else None,
        issuer=record.issuer,
        token_endpoint=record.token_endpoint,
        resource=record.resource,
        client=registration,
        expires_at=record.expires_at.timestamp() if record.expires_at else None,
        scopes=tuple(record.granted_scopes.split()),
        grant_type=record.grant_type or "authorization_code",
    )


def _registration_of(record: OAuthGrantRecord | None) -> ClientRegistration | None:
    if record is None or not record.registration_ciphertext:
        return None
    data = json.loads(credentials.decrypt(record.registration_ciphertext))
    return ClientRegistration(**data)


def _encrypt_json(data: dict[str, Any]) -> str:
    return credentials.encrypt(json.dumps(data, sort_keys=True))
