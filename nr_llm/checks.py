"""System checks: bad ``NR_LLM_*`` settings fail ``manage.py check`` with a stable id."""

from __future__ import annotations

import os
import ssl
from typing import Any
from urllib.parse import urlsplit

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags
from django.core.checks import register as register_check
from django.db import DatabaseError, NotSupportedError, connections, router
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils.module_loading import import_string

from .conf import DEFAULT_REQUEST_EVENTS, parse_lifetime, parse_retention_days, parse_timeout
from .vocabulary import DataClass

_MISSING = object()


def _given(name: str) -> Any:
    """The setting's value, or ``_MISSING`` when it is unset, None or blank (the default)."""
    raw = getattr(settings, name, _MISSING)
    return _MISSING if raw is None or (isinstance(raw, str) and not raw.strip()) else raw


def _lifetime(name: str, check_id: str, hint: str) -> list[CheckMessage]:
    """A number of seconds of 0 or more, or unset (the default)."""
    raw = _given(name)
    if raw is _MISSING or parse_lifetime(raw) is not None:
        return []
    return [Error(f"{name} must be a number of seconds of 0 or more, not {raw!r}.", hint=hint, id=check_id)]


def check_operation_timeout(**kwargs: Any) -> list[CheckMessage]:
    # Empty means "use the default"; anything else must be a usable number.
    raw = _given("NR_LLM_MCP_OPERATION_TIMEOUT")
    if raw is _MISSING:
        return []
    if parse_timeout(raw) is None:
        return [
            Error(
                f"NR_LLM_MCP_OPERATION_TIMEOUT must be a positive number of seconds, not {raw!r}.",
                hint="Set it to e.g. 20, or remove it to use the default of 20 seconds.",
                id="nr_llm.E001",
            )
        ]
    return []


def check_allow_private_networks(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS", False)
    if not isinstance(raw, bool):
        return [
            Error(
                f"NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS must be True or False, not {raw!r}.",
                hint="A string such as 'false' would read as true; use a boolean.",
                id="nr_llm.E002",
            )
        ]
    return []


def check_era_cache_seconds(**kwargs: Any) -> list[CheckMessage]:
    return _lifetime(
        "NR_LLM_MCP_ERA_CACHE_SECONDS",
        "nr_llm.E005",
        "Set it to e.g. 600, 0 to probe every operation, or remove it for the default of 600.",
    )


def check_cache(**kwargs: Any) -> list[CheckMessage]:
    """``NR_LLM_CACHE`` names a configured cache alias (or is None to keep caches per process)."""
    raw = getattr(settings, "NR_LLM_CACHE", None)
    if raw is None or raw == "":
        return []
    if not isinstance(raw, str) or raw not in getattr(settings, "CACHES", {"default": {}}):
        return [
            Error(
                f"NR_LLM_CACHE must name an alias of CACHES, not {raw!r}.",
                hint="Use an alias of CACHES (e.g. 'default'), or None to keep MCP caches per process.",
                id="nr_llm.E045",
            )
        ]
    return []


def check_reimport_interval(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, "NR_LLM_REIMPORT_INTERVAL", None)
    if raw is None or raw == "" or raw == 0:
        return []
    if parse_timeout(raw) is None:
        return [
            Error(
                f"NR_LLM_REIMPORT_INTERVAL must be a number of seconds above 0, not {raw!r}.",
                hint="Set it to e.g. 3600, or remove it (or 0) to re-import only on demand.",
                id="nr_llm.E046",
            )
        ]
    return []


def check_keepalive_seconds(**kwargs: Any) -> list[CheckMessage]:
    return _lifetime(
        "NR_LLM_MCP_KEEPALIVE_SECONDS",
        "nr_llm.E008",
        "Set it below your MCP servers' keep-alive timeout (e.g. 1.5), 0 to turn connection "
        "reuse off, or remove it for the default of 1.5.",
    )


def check_credential_keys(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, "NR_LLM_CREDENTIAL_KEYS", _MISSING)
    if raw is _MISSING or raw is None:
        return []
    if (
        not isinstance(raw, list | tuple)
        or not raw
        or not all(isinstance(key, str) and len(key) >= 16 for key in raw)
    ):
        return [
            Error(
                "NR_LLM_CREDENTIAL_KEYS must be a non-empty list of strings of at least 16 characters.",
                hint="The first key encrypts and every key decrypts; see docs/credentials.md on rotation.",
                id="nr_llm.E003",
            )
        ]
    return []


def check_request_events(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, "NR_LLM_REQUEST_EVENTS", _MISSING)
    if raw is _MISSING or raw is None:
        return []
    if not isinstance(raw, dict):
        problem = f"must be a dict, not {type(raw).__name__}"
    elif unknown := sorted(set(raw) - set(DEFAULT_REQUEST_EVENTS)):
        problem = f"has unknown keys {unknown}"
    elif not isinstance(raw.get("include_cancelled", False), bool):
        problem = "needs include_cancelled as True or False"
    else:
        return []
    return [
        Error(
            f"NR_LLM_REQUEST_EVENTS {problem}.",
            hint='Use e.g. {"include_cancelled": False}.',
            id="nr_llm.E004",
        )
    ]


def check_public_base_url(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, "NR_LLM_PUBLIC_BASE_URL", _MISSING)
    if raw is _MISSING or raw is None or raw == "":
        return []
    parts = urlsplit(raw) if isinstance(raw, str) else None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path.strip("/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        return [
            Error(
                "NR_LLM_PUBLIC_BASE_URL must be the site's origin such as 'https://example.org', "
                f"not {raw!r}.",
                hint="Where an operator's browser reaches this site; OAuth redirect URIs are built on it.",
                id="nr_llm.E006",
            )
        ]
    return []


def check_governance(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    preview = getattr(settings, "NR_LLM_TOOL_CALL_PREVIEW_CHARS", _MISSING)
    if preview is not _MISSING and (not isinstance(preview, int) or isinstance(preview, bool) or preview < 0):
        errors.append(
            Error(
                f"NR_LLM_TOOL_CALL_PREVIEW_CHARS must be a whole number of 0 or more, not {preview!r}.",
                hint="The ledger keeps that many characters of each answer (encrypted); 0 keeps none.",
                id="nr_llm.E020",
            )
        )
    expiry = getattr(settings, "NR_LLM_APPROVAL_EXPIRY_SECONDS", _MISSING)
    if expiry is not _MISSING and expiry is not None and parse_timeout(expiry) is None:
        errors.append(
            Error(
                f"NR_LLM_APPROVAL_EXPIRY_SECONDS must be a positive number of seconds, not {expiry!r}.",
                hint="Set it to e.g. 3600, or remove it for the default of one hour.",
                id="nr_llm.E021",
            )
        )
    second = getattr(settings, "NR_LLM_APPROVAL_SECOND_APPROVER", False)
    if not isinstance(second, bool):
        errors.append(
            Error(
                f"NR_LLM_APPROVAL_SECOND_APPROVER must be True or False, not {second!r}.",
                hint="A string such as 'false' would read as true; use a boolean.",
                id="nr_llm.E022",
            )
        )
    retention = getattr(settings, "NR_LLM_LEDGER_RETENTION_DAYS", None)
    if retention is not None and parse_retention_days(retention) is None:
        errors.append(
            Error(
                f"NR_LLM_LEDGER_RETENTION_DAYS must be a whole number of days, 0 or more: {retention!r}.",
                hint="Finished tool calls older than that are pruned; 0 keeps every row. Until it is "
                "fixed, nothing is pruned.",
                id="nr_llm.E024",
            )
        )
    ceiling = getattr(settings, "NR_LLM_DATA_CLASS_CEILING", None)
    if ceiling not in (None, "") and ceiling not in DataClass.values:
        errors.append(
            Error(
                f"NR_LLM_DATA_CLASS_CEILING must be one of {', '.join(DataClass.values)}, not {ceiling!r}.",
                hint="Until it is fixed, only publicContent tools are offered.",
                id="nr_llm.E023",
            )
        )
    return errors


def check_ca_bundle(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, "NR_LLM_MCP_CA_BUNDLE", _MISSING)
    if raw is _MISSING or raw is None or raw == "":
        return []
    problem = ca_bundle_problem(raw)
    if problem:
        return [
            Error(
                f"NR_LLM_MCP_CA_BUNDLE {problem}.",
                hint="Name a PEM file of the CA certificates to trust for https MCP and OAuth servers, "
                "or remove the setting to trust the certificates requests ships.",
                id="nr_llm.E007",
            )
        ]
    return []


def ca_bundle_problem(raw: object) -> str:
    """Why ``raw`` is no readable PEM file of CA certificates ("" when it is one)."""
    if not isinstance(raw, str | os.PathLike):
        return f"must be the path of a PEM file, not {type(raw).__name__}"
    try:
        # ssl parses the file as the transport will: a PEM file it cannot load fails here.
        loaded = ssl.create_default_context(cafile=os.fspath(raw)).cert_store_stats()["x509_ca"]
    except FileNotFoundError:
        return f"names no file ({os.fspath(raw)!r})"
    except (OSError, ssl.SSLError):
        return f"is not a readable PEM file of certificates ({os.fspath(raw)!r})"
    return "" if loaded else f"holds no CA certificate ({os.fspath(raw)!r})"


def check_telemetry(**kwargs: Any) -> list[CheckMessage]:
    capture = getattr(settings, "NR_LLM_OTEL_CAPTURE_CONTENT", None)
    if capture in (None, "") or capture in DataClass.values:
        return []
    return [
        Error(
            f"NR_LLM_OTEL_CAPTURE_CONTENT must be one of {', '.join(DataClass.values)}, not {capture!r}.",
            hint="It names the highest data class whose tool arguments and results may be span "
            "attributes; until it is fixed, none are (docs/telemetry.md).",
            id="nr_llm.E040",
        )
    ]


COMPLETION_MIDDLEWARE = "nr_llm.observability.middleware.RequestCompletionMiddleware"


def check_completion_middleware_is_last(**kwargs: Any) -> list[CheckMessage]:
    middleware = list(getattr(settings, "MIDDLEWARE", None) or [])
    # Only the innermost middleware's process_exception hook runs before every other
    # hook and Django's exception conversion (see nr_llm/observability/middleware.py).
    if COMPLETION_MIDDLEWARE in middleware and middleware[-1] != COMPLETION_MIDDLEWARE:
        return [
            Error(
                "RequestCompletionMiddleware must be the last entry in MIDDLEWARE.",
                hint="Anywhere else, another middleware turns a client disconnect into a 500 first.",
                id="nr_llm.E030",
            )
        ]
    return []


def check_tool_result_limits(**kwargs: Any) -> list[CheckMessage]:
    """The caps on a tool's answer (nr_llm/mcp/protocol/content.py): whole numbers of bytes above 0."""
    errors: list[CheckMessage] = []
    for name, check_id in (
        ("NR_LLM_TOOL_RESULT_BLOCK_BYTES", "nr_llm.E050"),
        ("NR_LLM_TOOL_RESULT_TOTAL_BYTES", "nr_llm.E051"),
    ):
        raw = _given(name)
        if raw is not _MISSING and (not isinstance(raw, int) or isinstance(raw, bool) or raw <= 0):
            errors.append(
                Error(
                    f"{name} must be a whole number of bytes above 0, not {raw!r}.",
                    hint="Remove it for the default (1 MiB per block, 2 MiB per answer).",
                    id=check_id,
                )
            )
    return errors


def check_identity_token_hook(**kwargs: Any) -> list[CheckMessage]:
    """The enterprise-managed hook must import and be callable: a typo found at a user's first
    call would read as "sign in again", which no sign-in fixes."""
    raw = getattr(settings, "NR_LLM_OAUTH_IDENTITY_TOKEN", _MISSING)
    if raw is _MISSING or raw is None or raw == "":
        return []
    hint = (
        "Set it to the dotted path of a callable(user, server) returning the user's ID token or None, "
        "e.g. 'mysite.auth.id_token_for'; see docs/operator-guide.md."
    )
    if not isinstance(raw, str):
        return [
            Error(
                f"NR_LLM_OAUTH_IDENTITY_TOKEN must be a dotted path, not {raw!r}.",
                hint=hint,
                id="nr_llm.E070",
            )
        ]
    try:
        hook = import_string(raw.strip())
    except ImportError as exc:
        return [
            Error(
                f"NR_LLM_OAUTH_IDENTITY_TOKEN {raw!r} cannot be imported ({exc}).",
                hint=hint,
                id="nr_llm.E070",
            )
        ]
    if not callable(hook):
        return [Error(f"NR_LLM_OAUTH_IDENTITY_TOKEN {raw!r} is not callable.", hint=hint, id="nr_llm.E070")]
    return []


def check_enterprise_servers_have_a_hook(databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """An enterprise-managed server with no hook can never act for anyone. It reads the server
    table, so it runs with ``check --database``, as the other database checks do."""
    if getattr(settings, "NR_LLM_OAUTH_IDENTITY_TOKEN", None) or not databases:
        return []
    model = apps.get_model("nr_llm", "McpServer")
    alias = router.db_for_read(model)
    if alias not in databases:
        return []
    try:
        names = list(
            model.objects.using(alias)
            .filter(auth_placement="oauth", oauth_grant_type="enterprise")
            .values_list("identifier", flat=True)[:5]
        )
    except DatabaseError:
        return []  # not migrated yet: nothing is configured
    if not names:
        return []
    return [
        Error(
            f"MCP servers {', '.join(names)} use enterprise-managed authorization, and "
            "NR_LLM_OAUTH_IDENTITY_TOKEN is not set.",
            hint="Point it at a callable(user, server) returning the signed-in user's ID token; "
            "see docs/operator-guide.md.",
            id="nr_llm.E071",
        )
    ]


#: The databases the ledger is written and tested on (.ci/run runs the suite on each), by
#: Django's vendor name: SQLite, PostgreSQL (psycopg 3 or psycopg2), MariaDB and MySQL.
SUPPORTED_VENDORS = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MariaDB/MySQL"}
DATABASES_HINT = (
    "nr_llm runs on SQLite, PostgreSQL (psycopg 3 or psycopg2) and MariaDB/MySQL (mysqlclient); "
    "see 'Supported databases' in docs/operator-guide.md."
)


def _package_databases() -> list[str]:
    """The aliases nr_llm's tables are written on (the site's routers decide; usually default)."""
    aliases = {router.db_for_write(model) for model in apps.get_app_config("nr_llm").get_models()}
    return sorted(alias for alias in aliases if alias in connections)


def _engine(alias: str) -> str:
    return str(connections[alias].settings_dict.get("ENGINE", "?"))


def check_database_vendor(**kwargs: Any) -> list[CheckMessage]:
    """A database the ledger has never run on is refused here, not at a tool call's first write."""
    errors: list[CheckMessage] = []
    for alias in _package_databases():
        vendor = connections[alias].vendor
        if vendor not in SUPPORTED_VENDORS:
            errors.append(
                Error(
                    f"The database {alias!r} ({_engine(alias)}, {connections[alias].display_name}) "
                    "is not one nr_llm can keep its tool-call ledger on.",
                    hint=DATABASES_HINT,
                    id="nr_llm.E060",
                )
            )
    return errors


def check_database_features(databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """What the ledger needs of the server itself: transactions (a row committed before a call
    is sent, kept if the caller rolls back), SKIP LOCKED (retention never waits on a live row)
    and a version Django supports. It needs a connection, so it runs with
    ``check --database`` and before ``migrate``, as Django's own database checks do."""
    errors: list[CheckMessage] = []
    for alias in _package_databases():
        if databases is None or alias not in databases:
            continue
        db = connections[alias]
        if db.vendor not in SUPPORTED_VENDORS:
            continue  # E060 said it
        try:
            db.ensure_connection()
        except NotSupportedError as exc:
            # Django refuses a server older than it supports on connecting; say it here.
            missing = str(exc)
        else:
            lacks = [
                what
                for what, has in (
                    ("transactions", db.features.supports_transactions),
                    # Where there are no row locks at all (SQLite), Django runs the query unlocked.
                    (
                        "SELECT ... FOR UPDATE SKIP LOCKED",
                        db.features.has_select_for_update_skip_locked
                        or not db.features.has_select_for_update,
                    ),
                )
                if not has
            ]
            missing = f"it lacks {' and '.join(lacks)}" if lacks else ""
        if missing:
            errors.append(
                Error(
                    f"The database {alias!r} ({_engine(alias)}, {db.display_name}) cannot keep nr_llm's "
                    f"tool-call ledger: {missing}.",
                    hint="MySQL and MariaDB need the InnoDB storage engine and MariaDB 10.6+ or "
                    "MySQL 8.0.1+. " + DATABASES_HINT,
                    id="nr_llm.E061",
                )
            )
        elif db.vendor == "mysql" and (offset := _session_utc_offset(db)):
            errors.append(
                Error(
                    f"The database {alias!r} ({_engine(alias)}) answers NOW() in a session time zone "
                    f"{offset} seconds from UTC; nr_llm judges approval expiry, overdue calls and "
                    "retention on the database's clock and stores UTC.",
                    hint="Set the connection's time zone to UTC: "
                    "OPTIONS={'init_command': \"SET time_zone = '+00:00'\"}.",
                    id="nr_llm.E062",
                )
            )
    return errors


def check_migrated_part_way(databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A database some but not all of a squash's replaced migrations were applied to. Django
    cannot use the squash there, drops it from the plan and ``migrate`` would then succeed
    without touching nr_llm's tables: refuse it here, before ``migrate``, saying what to do.
    It reads ``django_migrations``, so it runs with ``check --database`` as the others do."""
    if not databases:
        return []
    squashes = [
        migration
        for (app_label, _), migration in MigrationLoader(
            None, ignore_no_migrations=True
        ).disk_migrations.items()
        if app_label == "nr_llm" and migration.replaces
    ]
    errors: list[CheckMessage] = []
    for alias in sorted(alias for alias in databases if alias in connections):
        try:
            recorded = MigrationRecorder(connections[alias]).applied_migrations()
        except DatabaseError:
            continue  # cannot connect: Django's and E061 say so
        for squash in squashes:
            applied = [name for app_label, name in squash.replaces if (app_label, name) in recorded]
            if not applied or len(applied) == len(squash.replaces):
                continue
            last = squash.replaces[-1][1]
            errors.append(
                Error(
                    f"The database {alias!r} was migrated part-way by nr_llm's pre-release migrations "
                    f"(last: {applied[-1]}); {squash.name} replaces them and cannot continue from there, "
                    "so `migrate` would leave nr_llm's tables as they are.",
                    hint=f"Migrate it to {last} with nr_llm's code from before the squash, then upgrade; "
                    "or drop its nr_llm_* tables, delete its nr_llm rows from django_migrations and run "
                    "`manage.py migrate nr_llm`.",
                    id="nr_llm.E072",
                )
            )
    return errors


def _session_utc_offset(db: Any) -> int:
    """Seconds between the session's NOW() and UTC. Django stores UTC on MySQL/MariaDB but never
    sets the session's time zone, and there ``Now()`` is the session's local time."""
    with db.cursor() as cursor:
        cursor.execute("SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())")
        (offset,) = cursor.fetchone()
    return int(offset)


def register() -> None:
    # Tagged "database" alone, as Django's own database checks are: it connects, so it runs with
    # `check --database` and before `migrate`, never in `check --tag nr_llm` (which on Django 6
    # runs a tag's checks against every database).
    register_check(check_database_features, Tags.database)
    register_check(check_enterprise_servers_have_a_hook, Tags.database)
    register_check(check_migrated_part_way, Tags.database)
    for check in (
        check_operation_timeout,
        check_allow_private_networks,
        check_era_cache_seconds,
        check_keepalive_seconds,
        check_cache,
        check_reimport_interval,
        check_credential_keys,
        check_request_events,
        check_public_base_url,
        check_governance,
        check_ca_bundle,
        check_completion_middleware_is_last,
        check_telemetry,
        check_tool_result_limits,
        check_database_vendor,
        check_identity_token_hook,
    ):
        register_check(check, "nr_llm")
