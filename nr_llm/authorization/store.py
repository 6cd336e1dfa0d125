"""The protocol client's ``GrantStore`` over the database, shared by every worker.

Three rules from the issues shape it:

- One refresh per server at a time. Within a process: one lock per server identifier
  (``ServerLocks``; the app builds a store per operation, so the lock cannot belong to a
  store). Across processes: a row lock (``SELECT … FOR UPDATE``) on the server's grant row,
  held around re-read, refresh and save; the grant is re-read after the lock is taken
  (``load`` inside ``exclusive`` reads through the locking transaction). SQLite has no row
  locks: there the process lock is all there is, so several processes sharing one SQLite
  file can each spend a refresh token (use PostgreSQL for more than one worker process).
- Waiting is part of the operation: the process lock, PostgreSQL's ``lock_timeout`` and
  SQLite's busy timeout are each what is left of the budget less one leg, and a wait that
  ends there is ``deadline_exhausted``. A database failure is ``authorization_failed``
  (``grant_store``), never the driver's exception.
- A rotated refresh token is committed in a transaction of its own: the authorization
  server has already invalidated the old one, so a caller's rollback (an ``atomic``
  block around a tool call, ``ATOMIC_REQUESTS``) must not take the new one with it. A
  save (or the commit that ends the lock) that fails is raised to the caller.

A per-user server keeps one row per (server, user) (``UserGrantRecord``): the store is then
built for one user (``DatabaseGrantStore(user_id=…)``), every read, write and lock is that
row's, and the process lock is keyed by (server, user), so two users' refreshes never wait
for each other and no call ever reads another user's row. The client registration stays the
server's (one client for the whole site, on the shared row).

Both need a transaction that is not the caller's (``nr_llm.own_transaction``): the store's
writes run on a thread of their own, whose transaction commits whatever the calling thread
later does with its own.
"""

from __future__ import annotations

import contextlib
import json
import math
import queue
import threading
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from ..mcp import MINIMUM_LEG_SECONDS, AuthorizationError, McpTransportError, OperationDeadline
from ..mcp.oauth import ClientRegistration, Grant, ServerLocks, lock_wait_seconds, wait_exhausted
from ..models import McpServer
from ..own_transaction import run_in_own_transaction
from ..servers import credentials
from .models import GrantFields, OAuthGrantRecord, UserGrantRecord

T = TypeVar("T")


@dataclass(frozen=True)
class Owner:
    """Whose grant row: the server's shared one (``user_id`` None), or one user's."""

    server: str
    user_id: int | None = None

    @property
    def lock_key(self) -> Hashable:
        return self.server if self.user_id is None else (self.server, self.user_id)

    def rows(self) -> QuerySet[Any]:
        if self.user_id is None:
            return OAuthGrantRecord.objects.filter(server__identifier=self.server)
        return UserGrantRecord.objects.filter(server__identifier=self.server, user_id=self.user_id)


# One per process: every DatabaseGrantStore of the process shares them.
_SERVER_LOCKS = ServerLocks()
# PostgreSQL's SQLSTATE for a lock wait that ran into lock_timeout.
_LOCK_NOT_AVAILABLE = "55P03"
#: MySQL and MariaDB's ER_LOCK_WAIT_TIMEOUT.
_MYSQL_LOCK_WAIT_TIMEOUT = 1205
# Time for the lock thread to connect and start beyond its lock wait before it is given up.
_START_SECONDS = 1.0


class _LockHolder:
    """A thread holding the row lock in its transaction, running the store's calls in it.

    Without row locks (SQLite) no transaction stays open across the network leg (it would
    hold the database's lock meanwhile): each call commits on its own.
    """

    def __init__(self, owner: Owner, deadline: OperationDeadline) -> None:
        self._owner = owner
        self._server = owner.server
        self._deadline = deadline
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._locked: Future[None] = Future()
        self._finished: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="nr-llm-grant-lock", daemon=True)

    def __enter__(self) -> _LockHolder:
        self._wait = lock_wait_seconds(self._deadline)
        self._thread.start()
        try:
            with _typed_errors(self._server, self._deadline):
                self._locked.result(timeout=self._wait + _START_SECONDS)
        except FutureTimeout:
            self._jobs.put(None)  # it lets go (and rolls back) as soon as it gets the lock
            raise wait_exhausted(self._deadline, self._server) from None
        except McpTransportError:
            self._thread.join()
            raise
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        self._jobs.put(None)
        self._thread.join()
        try:
            with _typed_errors(self._server, None):
                self._finished.result()
        except McpTransportError:
            # The commit of what was saved failed: the caller must know (unless it is
            # already failing for a reason of its own).
            if exc_type is None:
                raise

    def call(self, work: Callable[[], T]) -> T:
        done: Future[T] = Future()
        self._jobs.put((work, done))
        with _typed_errors(self._server, self._deadline):
            return done.result()

    def _run(self) -> None:
        try:
            if connection.features.has_select_for_update:
                with transaction.atomic():
                    _bound_lock_wait(self._wait)
                    _locked_record(self._owner)
                    self._locked.set_result(None)
                    self._serve(each_in_own_transaction=False)
            else:
                _bound_lock_wait(self._wait)
                self._locked.set_result(None)
                self._serve(each_in_own_transaction=True)
        except BaseException as exc:
            (self._finished if self._locked.done() else self._locked).set_exception(exc)
        else:
            self._finished.set_result(None)
        finally:
            connection.close()

    def _serve(self, *, each_in_own_transaction: bool) -> None:
        while (job := self._jobs.get()) is not None:
            work, done = job
            try:
                if each_in_own_transaction:
                    with transaction.atomic():
                        outcome = work()
                else:
                    outcome = work()
            except BaseException as exc:
                done.set_exception(exc)
            else:
                done.set_result(outcome)


def _bound_lock_wait(seconds: float) -> None:
    """Let this connection wait for a lock no longer than ``seconds``."""
    milliseconds = max(int(seconds * 1000), 1)  # 0 would mean "no limit" to PostgreSQL
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SET LOCAL lock_timeout = '{milliseconds}ms'")
        elif connection.vendor == "sqlite":
            cursor.execute(f"PRAGMA busy_timeout = {milliseconds}")
        elif connection.vendor == "mysql":
            # Whole seconds, 1 at least (InnoDB's unit), for the session: this thread's
            # connection is closed when its lock is given up (_LockHolder._run).
            cursor.execute(f"SET SESSION innodb_lock_wait_timeout = {max(math.ceil(seconds), 1)}")


def _locked_record(owner: Owner) -> GrantFields:
    # The grant row only (created first if missing): locking the server row would also hold
    # up every other write to it (health, the admin) for the length of a refresh.
    record = _ensure_record(owner)
    locked: GrantFields = _rows_of(record).select_for_update().get(pk=record.pk)
    return locked


@contextlib.contextmanager
def _typed_errors(server: str, deadline: OperationDeadline | None) -> Iterator[None]:
    """The store's failures as the protocol client's errors (``deadline``: inside ``exclusive``)."""
    try:
        yield
    except DatabaseError as exc:
        raise _typed(exc, server, deadline) from exc
    except credentials.CredentialUnavailable as exc:
        message = f"MCP server {server!r}: its stored OAuth grant cannot be read ({exc})."
        raise McpTransportError("missing_credential", server, message) from exc


def _typed(exc: DatabaseError, server: str, deadline: OperationDeadline | None) -> McpTransportError:
    """A database failure as the protocol client's error: a lock wait that ran out is the
    budget's, anything else ``grant_store`` (the driver's text stays in the chained cause)."""
    cause = exc.__cause__
    if deadline is not None and (
        _lock_wait_ran_out(cause)
        or ("locked" in str(exc) and deadline.remaining_ns() < 2 * MINIMUM_LEG_SECONDS * 1_000_000_000)
    ):
        return wait_exhausted(deadline, server)
    return AuthorizationError(
        "authorization_failed",
        server,
        f"MCP server {server!r}: its stored OAuth grant could not be read or kept "
        f"(database error: {type(exc).__name__}).",
        reason="grant_store",
    )


def _lock_wait_ran_out(cause: BaseException | None) -> bool:
    """The driver's error says a lock wait ran out: PostgreSQL's SQLSTATE (psycopg 3 calls it
    ``sqlstate``, psycopg2 ``pgcode``), or MySQL's error number (first of mysqlclient's args)."""
    if (getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)) == _LOCK_NOT_AVAILABLE:
        return True
    args: tuple[object, ...] = getattr(cause, "args", ())
    return bool(args) and args[0] == _MYSQL_LOCK_WAIT_TIMEOUT


class DatabaseGrantStore:
    """``GrantStore`` for the Django app: one ``OAuthGrantRecord`` per server, or with ``user_id``
    that user's ``UserGrantRecord`` of each server; secrets encrypted."""

    def __init__(self, user_id: int | None = None) -> None:
        self.user_id = user_id
        # By thread and server: a store shared by threads routes each one's calls to its own lock.
        self._holders: dict[tuple[int, str], _LockHolder] = {}
        self._guard = threading.Lock()

    # -- the protocol ------------------------------------------------------------------

    def _owner(self, server: str) -> Owner:
        return Owner(server, self.user_id)

    def load(self, server: str) -> Grant | None:
        owner = self._owner(server)
        return self._in_lock_or_not(server, lambda: _grant_of(_record(owner)))

    def save(self, server: str, grant: Grant) -> None:
        owner = self._owner(server)
        self._in_lock_or_own(server, lambda: _write_grant(owner, grant))

    def forget(self, server: str) -> None:
        owner = self._owner(server)
        self._in_lock_or_own(server, lambda: _forget(owner))

    def load_registration(self, server: str, issuer: str) -> ClientRegistration | None:
        # The server's client, shared by its users: registered once, on the shared row.
        def read() -> ClientRegistration | None:
            registration = _registration_of(_record(Owner(server)))
            return registration if registration is not None and registration.issuer == issuer else None

        return self._in_lock_or_not(server, read)

    def save_registration(self, server: str, registration: ClientRegistration) -> None:
        def write() -> None:
            record = _ensure_record(Owner(server))
            OAuthGrantRecord.objects.filter(pk=record.pk).update(
                registration_ciphertext=_encrypt_json(asdict(registration))
            )

        self._in_lock_or_own(server, write)

    @contextlib.contextmanager
    def exclusive(self, server: str, deadline: OperationDeadline) -> Iterator[None]:
        key = (threading.get_ident(), server)
        with self._guard:
            if key in self._holders:
                raise RuntimeError("exclusive() is not re-entrant for one server")
        owner = self._owner(server)
        with _SERVER_LOCKS.holding(owner.lock_key, deadline, server), _LockHolder(owner, deadline) as holder:
            with self._guard:
                self._holders[key] = holder
            try:
                yield
            finally:
                with self._guard:
                    del self._holders[key]

    # -- beyond the protocol: what the admin shows and sets ----------------------------

    def mark_attention(self, server: str, reason: str, scopes: tuple[str, ...]) -> None:
        """Remember that ``server`` needs an operator (shown as "needs reconnect")."""

        owner = self._owner(server)

        def write() -> None:
            record = _ensure_record(owner)
            _rows_of(record).filter(pk=record.pk).update(
                attention_reason=reason[:32],
                attention_scopes=" ".join(scopes)[:1000],
                attention_since=timezone.now(),
            )

        self._in_lock_or_own(server, write)

    # -- plumbing ----------------------------------------------------------------------

    def _holder(self, server: str) -> _LockHolder | None:
        with self._guard:
            return self._holders.get((threading.get_ident(), server))

    def _in_lock_or_not(self, server: str, work: Callable[[], T]) -> T:
        holder = self._holder(server)
        if holder is not None:
            # Inside a lock a read must go through the locking transaction: that is the re-read.
            return holder.call(work)
        # Outside, a read on the caller's connection is enough (it sees what committed).
        with _typed_errors(server, None):
            return work()

    def _in_lock_or_own(self, server: str, work: Callable[[], T]) -> T:
        holder = self._holder(server)
        if holder is not None:
            return holder.call(work)
        with _typed_errors(server, None):
            return run_in_own_transaction(work, name="nr-llm-grant-store")


def _record(owner: Owner) -> GrantFields | None:
    record: GrantFields | None = owner.rows().first()
    return record


def _ensure_record(owner: Owner) -> GrantFields:
    server_pk = McpServer.objects.values_list("pk", flat=True).get(identifier=owner.server)
    if owner.user_id is None:
        shared, _ = OAuthGrantRecord.objects.get_or_create(server_id=server_pk)
        return shared
    # A user deleted meanwhile makes this an IntegrityError: a typed grant_store failure.
    own, _ = UserGrantRecord.objects.get_or_create(server_id=server_pk, user_id=owner.user_id)
    return own


def _rows_of(record: GrantFields) -> QuerySet[Any]:
    if isinstance(record, UserGrantRecord):
        return UserGrantRecord.objects.all()
    return OAuthGrantRecord.objects.all()


def _write_grant(owner: Owner, grant: Grant) -> None:
    record = _ensure_record(owner)
    _rows_of(record).filter(pk=record.pk).update(
        access_token_ciphertext=credentials.encrypt(grant.access_token),
        refresh_token_ciphertext=credentials.encrypt(grant.refresh_token) if grant.refresh_token else "",
        registration_ciphertext=_encrypt_json(asdict(grant.client)),
        expires_at=datetime.fromtimestamp(grant.expires_at, tz=UTC) if grant.expires_at is not None else None,
        granted_scopes=" ".join(grant.scopes)[:1000],
        grant_type=grant.grant_type,
        issuer=grant.issuer,
        token_endpoint=grant.token_endpoint,
        resource=grant.resource,
        mcp_url=grant.mcp_url[:2048],
        resource_metadata=(grant.resource_metadata or "")[:2048],
        connected_at=record.connected_at
        if record.issuer == grant.issuer and record.connected_at
        else timezone.now(),
        attention_reason="",
        attention_scopes="",
        attention_since=None,
        token_type=grant.token_type if grant.token_type != "Bearer" else "",
        dpop_key_ciphertext=credentials.encrypt(grant.dpop_key) if grant.dpop_key else "",
    )


def _forget(owner: Owner) -> None:
    if owner.user_id is not None:
        owner.rows().delete()  # a user's row holds nothing worth keeping without its tokens
        return
    owner.rows().update(
        access_token_ciphertext="",
        refresh_token_ciphertext="",
        expires_at=None,
        granted_scopes="",
        mcp_url="",
        connected_at=None,
        attention_reason="",
        attention_scopes="",
        attention_since=None,
        token_type="",
        dpop_key_ciphertext="",
    )


def _grant_of(record: GrantFields | None) -> Grant | None:
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
        mcp_url=record.mcp_url,
        resource_metadata=record.resource_metadata or None,
        token_type=record.token_type or "Bearer",
        dpop_key=credentials.decrypt(record.dpop_key_ciphertext) if record.dpop_key_ciphertext else None,
    )


def _registration_of(record: GrantFields | None) -> ClientRegistration | None:
    if record is None or not record.registration_ciphertext:
        return None
    data = json.loads(credentials.decrypt(record.registration_ciphertext))
    return ClientRegistration(**data)


def _encrypt_json(data: dict[str, Any]) -> str:
    return credentials.encrypt(json.dumps(data, sort_keys=True))
