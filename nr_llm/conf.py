"""One settings object. Every value is read from ``django.conf.settings`` at call time.

Reading lazily means ``override_settings`` just works and nothing is captured at
import time. Defaults live here and only here; ``checks.py`` reports bad values.
"""

from __future__ import annotations

import math
import os
from typing import Any

from django.conf import settings as django_settings

from .mcp import DEFAULT_BLOCK_BYTES, DEFAULT_TOTAL_BYTES, ConnectionSettings, ContentLimits
from .vocabulary import DataClass

DEFAULT_OPERATION_TIMEOUT = 20.0
# How long a server's protocol era is remembered when it gives no ttlMs (docs/mcp-client.md).
DEFAULT_ERA_CACHE_SECONDS = 600.0
DEFAULT_REQUEST_EVENTS: dict[str, Any] = {"include_cancelled": False}
DEFAULT_TOOL_CALL_PREVIEW_CHARS = 500
DEFAULT_APPROVAL_EXPIRY_SECONDS = 3600.0
DEFAULT_QUEUED_OPERATION_TIMEOUT = 600.0
DEFAULT_QUEUED_TASK_SLICE = 30.0
DEFAULT_LEDGER_RETENTION_DAYS = 90
# Every declared data class passes: a site narrows it per model provider (docs/catalogue.md).
DEFAULT_DATA_CLASS_CEILING = "secretAdjacent"
# What an unusable configured ceiling falls back to: the lowest, never "everything".
FALLBACK_DATA_CLASS_CEILING = "publicContent"
# A turn's tool calls (docs/operator-guide.md, "Concurrency"): a small number per server, so a
# model's burst is not a denial of service; more overall; a cap on what one turn may ask for.
DEFAULT_TOOL_CONCURRENCY_PER_SERVER = 4
DEFAULT_TURN_CONCURRENCY = 8
DEFAULT_TURN_MAX_CALLS = 32
DEFAULT_TOOL_THREADS = 32


def parse_count(raw: object, default: int) -> int:
    """A positive whole number, or ``default`` for anything else (a typo never turns a cap off)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1:
        return raw
    return default


def parse_timeout(raw: object) -> float | None:
    """Return a usable budget in seconds, or None when ``raw`` is not one.

    Empty means "not set"; the caller falls back to the default.
    """
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        raw = raw.strip()
        if not raw:
            return None
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return value


def _positive_int(raw: object) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else None


def parse_lifetime(raw: object) -> float | None:
    """A usable number of seconds, zero included, or None (empty or not a number)."""
    if raw is None or isinstance(raw, bool) or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_retention_days(raw: object) -> int | None:
    """A whole number of days of 0 or more (``"30"`` from the environment too), or None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return raw if isinstance(raw, int) and raw >= 0 else None


class Settings:
    """Typed access to the ``NR_LLM_*`` settings."""

    @property
    def MCP_OPERATION_TIMEOUT(self) -> float:
        """Seconds one MCP operation may take across all its legs (no upper clamp)."""
        raw = getattr(django_settings, "NR_LLM_MCP_OPERATION_TIMEOUT", None)
        value = parse_timeout(raw)
        return DEFAULT_OPERATION_TIMEOUT if value is None else value

    @property
    def MCP_ERA_CACHE_SECONDS(self) -> float:
        """Seconds a server's era (2026-07-28 or handshake) is remembered without a server ttlMs;
        0 probes before every operation. Unusable values fall back to the default."""
        value = parse_lifetime(getattr(django_settings, "NR_LLM_MCP_ERA_CACHE_SECONDS", None))
        return DEFAULT_ERA_CACHE_SECONDS if value is None else value

    @property
    def CACHE(self) -> str | None:
        """The ``CACHES`` alias shared with other processes (era verdicts, ``tools/list``);
        None (unset or empty) keeps them in this process's memory, as a local-memory cache would."""
        raw = getattr(django_settings, "NR_LLM_CACHE", None)
        return raw if isinstance(raw, str) and raw else None

    @property
    def REIMPORT_INTERVAL(self) -> float | None:
        """Seconds between periodic re-imports of every server's catalogue
        (``nr_llm.tasks.reimport_catalogues``); None (unset, 0, invalid): off."""
        return parse_timeout(getattr(django_settings, "NR_LLM_REIMPORT_INTERVAL", None))

    @property
    def MCP_KEEPALIVE_SECONDS(self) -> float:
        """Seconds an idle connection is kept for the next operation to the same server; 0: never."""
        value = parse_lifetime(getattr(django_settings, "NR_LLM_MCP_KEEPALIVE_SECONDS", None))
        # The protocol client's own default (it runs without Django too): below gunicorn's 2 s
        # keep-alive, uvicorn's 5 s and nginx's 75 s (nr_llm/mcp/wire/pool.py says why).
        return ConnectionSettings.keepalive_seconds if value is None else value

    @property
    def MCP_ALLOW_PRIVATE_NETWORKS(self) -> bool:
        """Allow MCP servers on loopback/private/link-local addresses (off: SSRF guard)."""
        return getattr(django_settings, "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS", False) is True

    @property
    def MCP_CA_BUNDLE(self) -> str | None:
        """A PEM file of the authorities to trust for https MCP and OAuth servers, instead of
        the certificates ``requests`` ships (certifi); None (unset or empty) keeps those.
        REQUESTS_CA_BUNDLE and SSL_CERT_FILE are never read (docs/mcp-client.md, "Trust")."""
        raw = getattr(django_settings, "NR_LLM_MCP_CA_BUNDLE", None)
        return str(raw) if isinstance(raw, str | os.PathLike) and str(raw) else None

    @property
    def MCP_CONNECTION(self) -> ConnectionSettings:
        """The only place the protocol client's connection settings are built from this site's."""
        return ConnectionSettings(
            allow_private_networks=self.MCP_ALLOW_PRIVATE_NETWORKS,
            ca_bundle=self.MCP_CA_BUNDLE,
            keepalive_seconds=self.MCP_KEEPALIVE_SECONDS,
        )

    @property
    def CREDENTIAL_KEYS(self) -> list[str]:
        """Keys for credentials at rest; the first encrypts, all decrypt (rotation)."""
        keys = getattr(django_settings, "NR_LLM_CREDENTIAL_KEYS", None)
        if isinstance(keys, list | tuple) and keys:
            return [str(key) for key in keys]
        # From SECRET_KEY and its fallbacks, so Django's key rotation keeps credentials readable.
        return [django_settings.SECRET_KEY, *getattr(django_settings, "SECRET_KEY_FALLBACKS", [])]

    @property
    def PUBLIC_BASE_URL(self) -> str:
        """The site's own public origin (``https://example.org``), for OAuth redirect URIs and
        client metadata URLs: behind a proxy ``build_absolute_uri`` can name the wrong host."""
        raw = getattr(django_settings, "NR_LLM_PUBLIC_BASE_URL", "")
        return raw.rstrip("/") if isinstance(raw, str) else ""

    @property
    def OAUTH_IDENTITY_TOKEN(self) -> str:
        """The dotted path of the site's hook ``callable(user, server) -> str | None`` giving a
        user's ID token for enterprise-managed authorization; empty: none (checks.py E070)."""
        raw = getattr(django_settings, "NR_LLM_OAUTH_IDENTITY_TOKEN", "")
        return raw.strip() if isinstance(raw, str) else ""

    @property
    def TOOL_CALL_PREVIEW_CHARS(self) -> int:
        """Characters of a tool's answer the ledger keeps (encrypted); 0 keeps none."""
        raw = getattr(django_settings, "NR_LLM_TOOL_CALL_PREVIEW_CHARS", None)
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            return raw
        return DEFAULT_TOOL_CALL_PREVIEW_CHARS

    @property
    def TOOL_RESULT_LIMITS(self) -> ContentLimits:
        """The caps on a tool's answer: per block, and for the whole answer (mcp/protocol/content.py)."""
        block = _positive_int(getattr(django_settings, "NR_LLM_TOOL_RESULT_BLOCK_BYTES", None))
        total = _positive_int(getattr(django_settings, "NR_LLM_TOOL_RESULT_TOTAL_BYTES", None))
        return ContentLimits(block or DEFAULT_BLOCK_BYTES, total or DEFAULT_TOTAL_BYTES)

    @property
    def APPROVAL_EXPIRY_SECONDS(self) -> float:
        """Seconds a call waits for a decision, and an approved call for its resume."""
        value = parse_timeout(getattr(django_settings, "NR_LLM_APPROVAL_EXPIRY_SECONDS", None))
        return DEFAULT_APPROVAL_EXPIRY_SECONDS if value is None else value

    @property
    def QUEUED_OPERATION_TIMEOUT(self) -> float:
        """Seconds a call enqueued on a worker (``tools.enqueue``) may take, waiting included: the
        budget of its MCP operation, and when the reaper ends a row no worker finished."""
        value = parse_timeout(getattr(django_settings, "NR_LLM_QUEUED_OPERATION_TIMEOUT", None))
        return DEFAULT_QUEUED_OPERATION_TIMEOUT if value is None else value

    @property
    def QUEUED_TASK_SLICE(self) -> float:
        """Seconds one worker follows an MCP task before handing it to the next delivery: how
        long a task waits, at most, when the worker following it is killed (plus a margin)."""
        value = parse_timeout(getattr(django_settings, "NR_LLM_QUEUED_TASK_SLICE", None))
        return DEFAULT_QUEUED_TASK_SLICE if value is None else value

    @property
    def LEDGER_RETENTION_DAYS(self) -> int:
        """Days a finished ledger row is kept; 0 keeps every row. An unusable value (check
        nr_llm.E024) keeps every row too: retention deletes, so a typo must not."""
        raw = getattr(django_settings, "NR_LLM_LEDGER_RETENTION_DAYS", None)
        if raw is None:
            return DEFAULT_LEDGER_RETENTION_DAYS
        return parse_retention_days(raw) or 0

    @property
    def APPROVAL_SECOND_APPROVER(self) -> bool:
        """True: the user who made a call cannot approve it; a second person must."""
        return getattr(django_settings, "NR_LLM_APPROVAL_SECOND_APPROVER", False) is True

    @property
    def DATA_CLASS_CEILING(self) -> str:
        """The highest data class a caller's tools may see when it names no ceiling itself."""
        raw = getattr(django_settings, "NR_LLM_DATA_CLASS_CEILING", None)
        if raw is None or raw == "":
            return DEFAULT_DATA_CLASS_CEILING
        return raw if raw in DataClass.values else FALLBACK_DATA_CLASS_CEILING

    @property
    def OTEL_CAPTURE_CONTENT(self) -> str:
        """The highest data class whose tool arguments and results may be span attributes
        (docs/telemetry.md); "" (unset, empty or not a data class) captures none."""
        raw = getattr(django_settings, "NR_LLM_OTEL_CAPTURE_CONTENT", "")
        return raw if isinstance(raw, str) and raw in DataClass.values else ""

    @property
    def TOOL_CONCURRENCY_PER_SERVER(self) -> int:
        """A turn's calls to one server at once, unless the server's own field says otherwise."""
        raw = getattr(django_settings, "NR_LLM_TOOL_CONCURRENCY_PER_SERVER", None)
        return parse_count(raw, DEFAULT_TOOL_CONCURRENCY_PER_SERVER)

    @property
    def TURN_CONCURRENCY(self) -> int:
        """A turn's calls at once, whatever their servers."""
        raw = getattr(django_settings, "NR_LLM_TURN_CONCURRENCY", None)
        return parse_count(raw, DEFAULT_TURN_CONCURRENCY)

    @property
    def TURN_MAX_CALLS(self) -> int:
        """Calls one turn may ask for; a turn asking for more runs none of them."""
        return parse_count(getattr(django_settings, "NR_LLM_TURN_MAX_CALLS", None), DEFAULT_TURN_MAX_CALLS)

    @property
    def TOOL_THREADS(self) -> int:
        """Threads of the process's tool-call pool (async twins and turns), read when it starts."""
        return parse_count(getattr(django_settings, "NR_LLM_TOOL_THREADS", None), DEFAULT_TOOL_THREADS)

    @property
    def REQUEST_EVENTS(self) -> dict[str, Any]:
        """Structured request events: ``include_cancelled`` is off by default."""
        configured = getattr(django_settings, "NR_LLM_REQUEST_EVENTS", None)
        merged = dict(DEFAULT_REQUEST_EVENTS)
        if isinstance(configured, dict):
            merged.update(configured)
        return merged


conf = Settings()
