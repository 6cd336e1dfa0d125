"""McpClient: ping(), list_tools(), call_tool(), each one operation under one deadline.

An operation is one conversation with one server, in the era the server speaks:

- 2026-07-28 ("modern"): every request is one self-describing POST; ``server/discover``
  tells the era and is the ``ping``.
- the handshake era (2025-xx): ``initialize``, the ``notifications/initialized``
  confirmation, the work, and a DELETE ending the session when the server issued one.

The era is learnt per origin by probing ``server/discover`` and remembered in-process
(``eras``), so steady state against a modern server is one POST per tool call. Every leg,
probes included, spends the same ``OperationDeadline``. A fresh ``requests`` session per
operation keeps one server's session id and cookies away from every other server; connections
are kept between operations per origin (pool.py), and carry nothing of either. No
other traffic is sent: no GET stream, no hidden ``tools/list``.

Exactly once (resend.py): a request is sent again, in a new session or the other era, only
when the server refused it in a way that proves it did not run it. Once a server accepted a
``tools/call`` (a 2xx status line), nothing sends it again; what cannot be finished is
``interrupted`` and says the tool may have run, as does every other failure of a written call
that no answer proves refused (``resend.may_have_run``: a timeout, a 5xx, an error code that is
no refusal).

The client takes no cancellation token and has no abort method: the budget alone decides
what the next request gets and whether it is sent at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from ..oauth import OperationTokens, SystemWallClock, WallClock
from ..wire.connection import ConnectionSettings
from ..wire.deadline import Clock, MonotonicClock, OperationDeadline
from ..wire.errors import McpTransportError
from ..wire.hostgate import refuse_private, resolve
from ..wire.legs import SessionFactory, default_session
from ..wire.redaction import Secrets
from ..wire.text import NAME_LIMIT, clean
from . import elicitation, features, modern, progress, resend, tasks
from . import pages as listing
from .content import DEFAULT_LIMITS, ContentLimits, outcome_of
from .endpoint import Endpoint
from .eras import DEFAULT_ERA_CACHE_SECONDS, EraCache, lifetime_seconds, process_cache
from .features import Completion, PromptOutcome
from .handshake import KNOWN_PROTOCOL_VERSIONS, PROTOCOL_VERSION, HandshakeConversation
from .modern_conversation import InputResponder, ModernConversation
from .param_headers import param_headers
from .progress import ProgressListener
from .results import CallOutcome, ConnectionReport
from .shared_cache import ToolsCache
from .tasks import Follower, TaskError, TaskOptions, TaskState
from .transport import Transport, auth_headers, refuse_clear_text

__all__ = ["KNOWN_PROTOCOL_VERSIONS", "MAX_PAGES", "PROTOCOL_VERSION", "InputResponder", "McpClient"]

logger = logging.getLogger("nr_llm.mcp")

MAX_PAGES = 50
T = TypeVar("T")
Conversation = HandshakeConversation | ModernConversation

# Failures that say nothing about the era: they stay errors and are never remembered.
_NOT_EVIDENCE = frozenset(
    {
        "deadline_exhausted",
        "timeout",
        "unreachable",
        # A failed TLS handshake: no HTTP answer at all, so nothing about the era.
        "tls",
        "refused_host",
        "redirect",
        "too_large",
        "missing_credential",
        # An OAuth exchange's failure says nothing about the era the server speaks.
        "authorization_required",
        "authorization_failed",
        # Accepted, then cut off: no answer to read an era from.
        "interrupted",
        # A task's failures come after its tools/call was accepted: the era is known.
        "task_pending",
        "task_lost",
        "task_failed",
        "task_cancelled",
    }
)


class HealthSink(Protocol):
    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None: ...


class McpClient:
    def __init__(
        self,
        *,
        connection: ConnectionSettings | None = None,
        clock: Clock | None = None,
        health: HealthSink | None = None,
        session_factory: SessionFactory | None = None,
        era_cache: EraCache | None = None,
        era_cache_seconds: float = DEFAULT_ERA_CACHE_SECONDS,
        wall: WallClock | None = None,
        result_limits: ContentLimits = DEFAULT_LIMITS,
        tools_cache: ToolsCache | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        """How the client connects is one value, ``connection`` (wire/connection.py says what
        each part means; the defaults when it is not given), handed whole to every leg, MCP and
        OAuth alike. ``result_limits``: the caps on a tool's answer (content.py). ``tools_cache``:
        where ``tools/list`` answers a server allows to be cached are shared (shared_cache.py).
        ``sleep``: how the client waits between polls of a task (tasks.py); tests pass one
        that moves a fake clock."""
        self.result_limits = result_limits
        self.connection = connection or ConnectionSettings()
        # Epoch seconds for OAuth token expiry, which is absolute so it survives a restart.
        self.wall: WallClock = wall or SystemWallClock()
        self.clock: Clock = clock or MonotonicClock()
        self.health = health
        self.session_factory: SessionFactory = session_factory or default_session
        # Shared by every client of the process unless one is given: the app builds a
        # client per operation, and the verdict must outlive it.
        self.era_cache = era_cache if era_cache is not None else process_cache()
        self.era_cache_seconds = era_cache_seconds
        self.tools_cache = tools_cache
        self.sleep: Callable[[float], None] = sleep or time.sleep

    def ping(self, endpoint: Endpoint) -> ConnectionReport:
        """``server/discover`` for a modern server, else the handshake only; a transport
        failure is a report with ``reachable=False`` that keeps the error (``failure``)."""

        def check(conversation: Conversation) -> tuple[ConnectionReport, int]:
            if isinstance(conversation, ModernConversation):
                _, latency_ms = conversation.discovered or conversation.discover()
            else:
                latency_ms = conversation.open()
            info = conversation.server_info
            report = ConnectionReport(
                reachable=True,
                latency_ms=latency_ms,
                protocol_version=conversation.protocol_version or "",
                server_name=clean(info.get("name", ""), NAME_LIMIT),
                server_version=clean(info.get("version", ""), NAME_LIMIT),
                era=conversation.era,
            )
            return report, latency_ms

        try:
            report = self._operate(endpoint, check, opens=False)
        except McpTransportError as exc:
            return ConnectionReport(reachable=False, error=str(exc), failure=exc)
        return report

    def list_tools(
        self,
        endpoint: Endpoint,
        on_page: Callable[[int, int], None] | None = None,
        *,
        fresh: bool = True,
    ) -> list[dict[str, Any]]:
        """Every advertised tool object, all pages, under one budget.

        ``fresh=False`` accepts an answer the server allowed to be cached (its ``ttlMs`` and
        ``cacheScope``) from ``tools_cache``, without a request; a fresh walk replaces it.

        ``on_page(pages, tools)`` hears after each page how far the walk is. It is progress
        only: whatever it raises is logged and the walk goes on, so it can never serve as
        the cancellation this client deliberately lacks.
        """

        if not fresh and self.tools_cache is not None:
            cached = self.tools_cache.get(endpoint)
            if cached is not None:
                return cached
        hints: list[tuple[object, object]] = []  # each page's (ttlMs, cacheScope)

        def walk(conversation: Conversation) -> tuple[list[dict[str, Any]], int]:
            tools: list[dict[str, Any]] = []
            seen: set[str] = set()
            cursor: str | None = None
            for pages in range(1, MAX_PAGES + 1):
                result, latency_ms = conversation.request(
                    "tools/list", {} if cursor is None else {"cursor": cursor}
                )
                page = result.get("tools")
                if not isinstance(page, list):
                    raise conversation.malformed("sent a tools/list page without a tools list")
                tools.extend(tool for tool in page if isinstance(tool, dict))
                hints.append((result.get("ttlMs"), result.get("cacheScope")))
                if on_page is not None:
                    _report_progress(on_page, pages, len(tools))
                cursor = result.get("nextCursor")
                if cursor is None:
                    return tools, latency_ms
                if not isinstance(cursor, str):
                    raise conversation.malformed("sent a nextCursor that is not a string")
                if cursor in seen:
                    raise conversation.malformed("repeated a page cursor; the catalogue would never end")
                seen.add(cursor)
            raise conversation.malformed(f"advertises more than {MAX_PAGES} pages of tools")

        tools = self._operate(endpoint, walk)
        if self.tools_cache is not None:
            self.tools_cache.remember(endpoint, tools, *_cache_hint(hints))
        return tools

    def call_tool(
        self,
        endpoint: Endpoint,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        responder: InputResponder | None = None,
        on_progress: ProgressListener | None = None,
        task: TaskOptions | None = None,
    ) -> CallOutcome:
        """Call one tool; ``isError`` is a failed outcome, a broken conversation an exception.

        ``input_schema`` is the tool's listed schema: in the 2026-07-28 era its
        ``x-mcp-header`` properties become ``Mcp-Param-*`` headers, and a schema with an
        invalid one is refused (``invalid_tool``) before anything is sent. ``responder``
        answers a 2026 server's input requests; without one they are ``input_required``.
        ``output_schema``, the tool's listed one, is what its structured content is checked against.
        ``on_progress``: the request carries a ``progressToken`` and each ``notifications/progress``
        the server sends for it is handed over (``progress.py``); it must not raise. The token
        stays valid while a task runs (2025-11-25), so it is heard on the task's polls too.

        ``task`` lets the server answer with a task (tasks.py: the 2026 extension declared on
        this request, or the 2025-11-25 ``task`` parameter where server and tool allow it); the
        task is then polled within this operation's budget and its result read once, and the
        outcome's ``task`` is its last state. A task that outlives the budget is ``task_pending``
        (a ``TaskError`` whose ``task`` resumes it: ``poll_task``).
        """
        arguments = arguments or {}
        # Checked before any leg, whatever the era: a tool the specification says clients
        # must exclude is not called, and no network is spent learning that.
        headers = param_headers(name, input_schema, arguments, endpoint.identifier)

        handed: list[Conversation] = []  # the conversations the call went to (at most two eras)

        def call(conversation: Conversation) -> tuple[CallOutcome, int]:
            handed.append(conversation)
            params: dict[str, Any] = {"name": name, "arguments": arguments}
            transport = conversation.transport
            if on_progress is not None:
                token = progress.new_token()
                params = progress.with_token(params, token)
                transport.on_notification = progress.reader(token, on_progress)
            task_state = None
            try:
                # The result came masked: a credential a server echoes never reaches a model.
                if task is None:
                    result, latency_ms = conversation.request("tools/call", params, headers)
                elif isinstance(conversation, ModernConversation):
                    result, latency_ms = conversation.request(
                        "tools/call", params, headers, capabilities=tasks.extension_capabilities(responder)
                    )
                else:
                    if tasks.wants_task(conversation, task):
                        params["task"] = tasks.task_param(task)
                    result, latency_ms = conversation.request("tools/call", params, headers)
                state = tasks.created(result, endpoint.identifier, conversation) if task is not None else None
                if state is not None:
                    assert task is not None
                    result, task_state, latency_ms = self._follow(conversation, state, task, responder, name)
            finally:
                transport.on_notification = None
            outcome = outcome_of(result, endpoint.identifier, output_schema, self.result_limits)
            return dataclasses.replace(outcome, era=conversation.era, task=task_state), latency_ms

        try:
            return self._operate(endpoint, call, responder=responder)
        except McpTransportError as exc:
            needed = elicitation.needs_input(exc, name) if responder is None else None
            if needed is not None:
                raise needed from exc
            if not handed:
                # A probe, initialize or an OAuth leg failed: the call itself was never sent.
                exc.written = False
                raise
            if exc.accepted or exc.kind == "interrupted" or not resend.may_have_run(exc):
                raise  # it says so already, or it could not run
            # Written, and no answer proves a refusal (a timeout, a 5xx, an error code that
            # is no refusal): a caller reading only this error must learn it may have run.
            raise McpTransportError(
                exc.kind,
                exc.server,
                f"{exc} The tool {clean(name, NAME_LIMIT)!r} may have run; the call is not sent again.",
                http_status=exc.http_status,
                code=exc.code,
                data=exc.data,
            ) from exc

    # -- tasks: a call the server answered with a task (tasks.py) ------------------------------

    def poll_task(
        self,
        endpoint: Endpoint,
        task: TaskState,
        name: str = "",
        *,
        output_schema: dict[str, Any] | None = None,
        responder: InputResponder | None = None,
        options: TaskOptions | None = None,
    ) -> CallOutcome:
        """Go on following a task an earlier operation (in this process or another) was left
        with: a ``tasks/get`` at once, then polls as ``call_tool`` makes them, and the result read
        once, all under one new budget. ``name`` is the tool's, for messages. Never sends the
        ``tools/call`` again; the ends are those of ``call_tool`` with ``task``."""
        options = options or TaskOptions()

        def follow(conversation: Conversation, deadline: OperationDeadline) -> tuple[CallOutcome, int]:
            result, state, latency_ms = self._follow(
                conversation, task, options, responder, name, look_first=True
            )
            outcome = outcome_of(result, endpoint.identifier, output_schema, self.result_limits)
            return dataclasses.replace(outcome, era=conversation.era, task=state), latency_ms

        return self._operate_on_task(endpoint, task, responder, follow)

    def get_task(self, endpoint: Endpoint, task: TaskState, name: str = "") -> TaskState:
        """One ``tasks/get``: the task's state now (a task the server forgot is ``task_lost``)."""

        def look(conversation: Conversation, deadline: OperationDeadline) -> tuple[TaskState, int]:
            follower = Follower(conversation, deadline, TaskOptions(), None, self.sleep, name)
            try:
                return follower.get(task)
            except TaskError:
                raise
            except McpTransportError as exc:
                raise follower.after(exc, task) from exc

        return self._operate_on_task(endpoint, task, None, look)

    def cancel_task(self, endpoint: Endpoint, task: TaskState, name: str = "") -> TaskState:
        """Ask the server to stop a task (``tasks/cancel``), an operation of its own with its own
        budget: no request in flight is aborted, the server is asked, and it decides.
        Returns the task's state as the server then reports it (it may still be working, or
        have ended otherwise); a task the server forgot is ``task_lost``."""

        def ask(conversation: Conversation, deadline: OperationDeadline) -> tuple[TaskState, int]:
            follower = Follower(conversation, deadline, TaskOptions(), None, self.sleep, name)
            return follower.cancel(task), 0

        return self._operate_on_task(endpoint, task, None, ask)

    def _follow(
        self,
        conversation: Conversation,
        state: TaskState,
        options: TaskOptions,
        responder: InputResponder | None,
        name: str,
        *,
        look_first: bool = False,
    ) -> tuple[dict[str, Any], TaskState, int]:
        follower = Follower(conversation, conversation.deadline, options, responder, self.sleep, name)
        try:
            return follower.follow(state, look_first=look_first)
        except TaskError as exc:
            if (
                isinstance(conversation, HandshakeConversation)
                and exc.task is not None
                and not exc.task.terminal
            ):
                # The session is the task's home: ending it would end the task (tasks.py).
                conversation.keep_session = True
            raise

    def _operate_on_task(
        self,
        endpoint: Endpoint,
        task: TaskState,
        responder: InputResponder | None,
        work: Callable[[Conversation, OperationDeadline], tuple[T, int]],
    ) -> T:
        """One operation on a known task, in the era and session the task was created in (no
        probe, no handshake when its session is known); every credential masked as in
        ``_operate``."""
        secrets = Secrets()
        if endpoint.needs_credential:
            secrets.add(endpoint.credential)
        try:
            with self._transport(endpoint, secrets) as (transport, deadline):
                conversation: Conversation
                if task.era == "modern":
                    conversation = ModernConversation(
                        transport, deadline, task.protocol_version or modern.MODERN_VERSION, responder
                    )
                else:
                    conversation = HandshakeConversation(transport, deadline, responder)
                    if task.session_id is not None:
                        conversation.adopt(task.session_id, task.protocol_version)
                    else:
                        conversation.open()
                try:
                    answer, latency_ms = work(conversation, deadline)
                except TaskError as exc:
                    if isinstance(conversation, HandshakeConversation) and exc.task is not None:
                        conversation.keep_session = conversation.keep_session or not exc.task.terminal
                    raise
                else:
                    if isinstance(conversation, HandshakeConversation) and isinstance(answer, TaskState):
                        # A look leaves the session to whoever reads the result; only a task
                        # that ended cancelled has nothing left in it to read.
                        conversation.keep_session = answer.status != "cancelled"
                finally:
                    conversation.end()
        except McpTransportError as exc:
            _mask_error(exc, secrets)
            raise
        self._record(endpoint, latency_ms)
        return answer

    # -- beyond tools: resources, prompts, completion (features.py shapes the answers) ----------

    def list_features(self, endpoint: Endpoint) -> Features:
        """The server's resources, resource templates and prompts, every page of each, in one
        operation under one budget (what an import reads beside ``list_tools``). A kind the
        server does not offer (-32601) is empty."""

        def walk(conversation: Conversation) -> tuple[Features, int]:
            resources, latency_ms = listing.walk_if_offered(conversation, "resources/list", "resources")
            templates, latency = listing.walk_if_offered(
                conversation, "resources/templates/list", "resourceTemplates"
            )
            prompts, last = listing.walk_if_offered(conversation, "prompts/list", "prompts")
            return Features(resources, templates, prompts), last or latency or latency_ms

        return self._operate(endpoint, walk)

    def list_resources(self, endpoint: Endpoint) -> list[dict[str, Any]]:
        return self._operate(endpoint, lambda c: listing.walk(c, "resources/list", "resources"))

    def list_resource_templates(self, endpoint: Endpoint) -> list[dict[str, Any]]:
        return self._operate(
            endpoint, lambda c: listing.walk(c, "resources/templates/list", "resourceTemplates")
        )

    def list_prompts(self, endpoint: Endpoint) -> list[dict[str, Any]]:
        return self._operate(endpoint, lambda c: listing.walk(c, "prompts/list", "prompts"))

    def read_resource(self, endpoint: Endpoint, uri: str) -> CallOutcome:
        """``resources/read``: the contents as embedded-resource blocks under the result caps;
        an unknown URI is ``resource_not_found``."""

        def read(conversation: Conversation) -> tuple[CallOutcome, int]:
            try:
                result, latency_ms = conversation.request("resources/read", {"uri": uri})
            except McpTransportError as exc:
                named = features.not_found(exc, uri)
                if named is not None:
                    raise named from exc
                raise
            outcome = features.resource_outcome(result, endpoint.identifier, self.result_limits)
            return dataclasses.replace(outcome, era=conversation.era), latency_ms

        return self._operate(endpoint, read)

    def get_prompt(
        self, endpoint: Endpoint, name: str, arguments: dict[str, str] | None = None
    ) -> PromptOutcome:
        def get(conversation: Conversation) -> tuple[PromptOutcome, int]:
            result, latency_ms = conversation.request(
                "prompts/get", {"name": name, "arguments": arguments or {}}
            )
            return features.prompt_outcome(result, endpoint.identifier, self.result_limits), latency_ms

        return self._operate(endpoint, get)

    def complete(
        self,
        endpoint: Endpoint,
        ref: dict[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
    ) -> Completion:
        """``completion/complete`` for a prompt's (``{"type": "ref/prompt", "name": ...}``) or a
        template's (``{"type": "ref/resource", "uri": ...}``) argument."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}

        def ask(conversation: Conversation) -> tuple[Completion, int]:
            result, latency_ms = conversation.request("completion/complete", params)
            return features.completion_of(result, endpoint.identifier), latency_ms

        return self._operate(endpoint, ask)

    def _operate(
        self,
        endpoint: Endpoint,
        work: Callable[[Conversation], tuple[T, int]],
        *,
        opens: bool = True,
        responder: InputResponder | None = None,
    ) -> T:
        """Run ``work`` in the origin's era; a remembered era that proves wrong (a refusal that
        shows nothing ran) is dropped and the work runs once more the other way, within the
        same budget.

        Every credential of the operation (``secrets``) is masked where server text enters: in
        each answer the transport decodes, and in the message of any error that leaves here.
        """
        secrets = Secrets()
        if endpoint.needs_credential:
            secrets.add(endpoint.credential)
        try:
            return self._operate_masked(endpoint, work, opens, responder, secrets)
        except McpTransportError as exc:
            _mask_error(exc, secrets)
            raise

    def _operate_masked(
        self,
        endpoint: Endpoint,
        work: Callable[[Conversation], tuple[T, int]],
        opens: bool,
        responder: InputResponder | None,
        secrets: Secrets,
    ) -> T:
        key = self.era_cache.key_for(endpoint.url)
        # Looked up before the operation's clock starts: the lookup is not a leg.
        known = self.era_cache.get(key, self.clock.monotonic_ns())
        with self._transport(endpoint, secrets) as (transport, deadline):
            if known is None:
                conversation = self._negotiate(transport, deadline, key, responder)
                answer, latency_ms = _run_once(conversation, work, opens)
            else:
                conversation = (
                    ModernConversation(transport, deadline, known.version, responder)
                    if known.era == "modern"
                    else HandshakeConversation(transport, deadline, responder)
                )
                try:
                    answer, latency_ms = _run(conversation, work, opens)
                except _WrongEra as wrong:
                    logger.info(
                        "MCP server %s no longer speaks the %s era (%s); negotiating again",
                        endpoint.identifier,
                        known.era,
                        wrong.error.kind,
                    )
                    self.era_cache.forget(key)
                    conversation = self._negotiate(transport, deadline, key, responder)
                    same_version = (conversation.protocol_version or "") == known.version
                    if conversation.era == known.era and same_version:
                        # Still the same era: the refusal was about the request, not the era.
                        raise wrong.error from None
                    answer, latency_ms = _run_once(conversation, work, opens)
        self._record(endpoint, latency_ms)
        return answer

    def _negotiate(
        self, transport: Transport, deadline: OperationDeadline, key: str, responder: InputResponder | None
    ) -> Conversation:
        """Probe ``server/discover``; a result listing our revision means the modern era, any
        other answer the handshake era. Failures that are no answer stay errors."""
        version = modern.MODERN_VERSION
        for attempt in range(2):
            probe = ModernConversation(transport, deadline, version, responder)
            try:
                result, _ = probe.discover()
            except McpTransportError as exc:
                if not _is_era_evidence(exc):
                    raise
                named = (
                    modern.supported_in_error(exc.data) if exc.code == modern.UNSUPPORTED_VERSION else None
                )
                if named is not None and attempt == 0:
                    version = named  # -32022 naming a revision we speak: ask once more in it
                    continue
                break
            chosen = modern.modern_version_in(result.get("supportedVersions"))
            if chosen is None:
                break
            probe.protocol_version = chosen
            seconds = lifetime_seconds(result.get("ttlMs"), self.era_cache_seconds)
            self.era_cache.remember(key, "modern", chosen, seconds, self.clock.monotonic_ns())
            return probe
        seconds = lifetime_seconds(None, self.era_cache_seconds)
        self.era_cache.remember(key, "handshake", "", seconds, self.clock.monotonic_ns())
        return HandshakeConversation(transport, deadline, responder)

    @contextlib.contextmanager
    def _transport(
        self, endpoint: Endpoint, secrets: Secrets
    ) -> Iterator[tuple[Transport, OperationDeadline]]:
        deadline = OperationDeadline(endpoint.budget_seconds, self.clock, endpoint.identifier)
        # These refusals come before any session exists: nothing is sent, nothing attached.
        credential_headers = auth_headers(endpoint)
        connection = self.connection
        if not connection.allow_private_networks:
            refuse_clear_text(endpoint, bool(credential_headers) or endpoint.oauth is not None)
        # The lookup spends the operation's budget like a leg does; an answer as young as the
        # idle-connection limit is used again (hostgate.py: why that is safe).
        addresses = resolve(
            endpoint.url,
            endpoint.identifier,
            deadline.wait_seconds(),
            connection.resolver,
            remember_seconds=connection.keepalive_seconds,
        )
        if not connection.allow_private_networks:
            refuse_private(addresses, endpoint.identifier)
        tokens = None
        if endpoint.oauth is not None:
            tokens = OperationTokens(
                endpoint.identifier,
                endpoint.url,
                endpoint.oauth,
                deadline,
                connection,
                wall=self.wall,
                session_factory=self.session_factory,
                secrets=secrets,
            )
        session = self.session_factory()
        try:
            if tokens is not None:
                # A valid stored token costs nothing; an expired one is refreshed here,
                # before the first MCP leg, from the same budget.
                credential_headers = tokens.authorization(tokens.bearer())
            yield (
                Transport(
                    endpoint,
                    session,
                    self.clock,
                    auth_headers=credential_headers,
                    connection=connection,
                    addresses=addresses,
                    authorizer=tokens,
                    secrets=secrets,
                ),
                deadline,
            )
        finally:
            session.close()
            if tokens is not None:
                tokens.close()

    def _record(self, endpoint: Endpoint, latency_ms: int) -> None:
        if self.health is None:
            return
        try:
            self.health.record_contact(endpoint, latency_ms)
        except Exception:
            # A reporting boundary: the operation has its answer; bookkeeping must not undo it.
            logger.warning("could not record contact with MCP server %s", endpoint.identifier, exc_info=True)


@dataclasses.dataclass(frozen=True)
class Features:
    """What a server offers beside its tools, as listed (each item a JSON object)."""

    resources: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    prompts: list[dict[str, Any]]


class _WrongEra(Exception):
    """A remembered era was refused in a way that proves nothing was run."""

    def __init__(self, error: McpTransportError) -> None:
        super().__init__(str(error))
        self.error = error


def _mask_error(exc: McpTransportError, secrets: Secrets) -> None:
    """Mask ``exc``'s message and data, and those of the errors it was raised from (a logged
    traceback shows them), in place: its type and attributes are what callers branch on."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while isinstance(current, McpTransportError) and id(current) not in seen:
        seen.add(id(current))
        if current.args and isinstance(current.args[0], str):
            current.args = (secrets.mask(current.args[0]), *current.args[1:])
        current.data = secrets.mask_json(current.data)
        current = current.__cause__ or current.__context__


def _is_era_evidence(exc: McpTransportError) -> bool:
    """An answer (not a failure to get one) from a server that does not show itself modern."""
    if exc.kind in _NOT_EVIDENCE:
        return False
    status = exc.http_status
    return not (status in (401, 403) or (status is not None and status >= 500))


def _run(
    conversation: Conversation, work: Callable[[Conversation], tuple[T, int]], opens: bool
) -> tuple[T, int]:
    """Open, work, end. A refusal of the opening (initialize) or of a modern request the way a
    server of the other era refuses is ``_WrongEra``: neither ran anything, so trying the other
    era is safe (resend.py decides; an accepted request is never among them)."""
    try:
        try:
            if opens:
                conversation.open()
            return work(conversation)
        finally:
            conversation.end()
    except McpTransportError as exc:
        opened = isinstance(conversation, HandshakeConversation) and conversation.protocol_version is not None
        if not opened and resend.other_era(exc):
            raise _WrongEra(exc) from exc
        raise


def _run_once(
    conversation: Conversation, work: Callable[[Conversation], tuple[T, int]], opens: bool
) -> tuple[T, int]:
    """``_run`` where the era was just learnt: a refusal is the answer, not a reason to retry."""
    try:
        return _run(conversation, work, opens)
    except _WrongEra as wrong:
        raise wrong.error from None


def _cache_hint(hints: list[tuple[object, object]]) -> tuple[object, object]:
    """One (ttlMs, cacheScope) for a walk of several pages: the shortest lifetime, and public
    only when every page said so."""
    ttls = [ttl for ttl, _ in hints]
    if not ttls or not all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in ttls):
        return 0, "private"
    scope = "public" if all(scope == "public" for _, scope in hints) else "private"
    return min(ttls), scope  # type: ignore[type-var]


def _report_progress(on_page: Callable[[int, int], None], pages: int, tools: int) -> None:
    try:
        on_page(pages, tools)
    except Exception:
        # A reporting boundary: a broken progress display must neither fail nor stop the walk.
        logger.warning("MCP progress callback failed", exc_info=True)
