"""Demo site settings, read from the environment (django-environ).

The site exists to show and test `nr_llm`; it holds no product logic.

``ENV_FILE`` names a file of ``NAME=value`` lines read first, its values winning over the
environment's: ``make demo`` writes ``var/demo.env``, and ``ENV_FILE=var/demo.env`` in
front of any ``manage.py`` command runs it against the demo's database and settings, even
from a shell that exports ``DATABASE_URL`` for something else.
"""

import os
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

if _env_file := os.environ.get("ENV_FILE"):
    if not Path(_env_file).is_file():
        raise ImproperlyConfigured(f"ENV_FILE names {_env_file!r}, which is not a file.")
    environ.Env.read_env(_env_file, overwrite=True)

DEBUG = env.bool("DEBUG", default=False)

# A development key only while DEBUG is on: a production site must bring its own.
SECRET_KEY = env.str("SECRET_KEY", default="") or (
    "django-insecure-demo-only-key-never-use-in-production" if DEBUG else ""
)
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"] if DEBUG else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "nr_llm",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, always: its process_exception hook must run before every other one
    # (docs/observability.md, check nr_llm.E030).
    "nr_llm.observability.middleware.RequestCompletionMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

(BASE_DIR / "var").mkdir(exist_ok=True)
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'demo.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.mysql":
    # What Django's notes on MySQL and MariaDB ask of a site: full UTF-8 (utf8mb4, not the
    # three-byte utf8), strict mode so a value too long is an error instead of cut silently,
    # and READ COMMITTED (Django's default since 3.0) so a row another transaction committed
    # is seen without REPEATABLE READ's snapshot. The session's time zone is UTC because the
    # ledger compares against the database's NOW() and Django stores UTC (check nr_llm.E062).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "charset": "utf8mb4",
            "init_command": "SET sql_mode = 'STRICT_TRANS_TABLES', time_zone = '+00:00'",
            "isolation_level": "read committed",
        }
    )
    DATABASES["default"]["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"

# Every NR_LLM_* setting may come from an environment variable of the same name;
# unset ones are left to nr_llm's own defaults (nr_llm/conf.py).
_NR_LLM_FROM_ENV: dict[str, Any] = {
    "NR_LLM_MCP_CA_BUNDLE": env.str,
    "NR_LLM_MCP_KEEPALIVE_SECONDS": env.str,
    "NR_LLM_MCP_OPERATION_TIMEOUT": env.str,
    "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": env.bool,
    "NR_LLM_MCP_ERA_CACHE_SECONDS": env.str,
    "NR_LLM_CREDENTIAL_KEYS": env.list,
    "NR_LLM_REQUEST_EVENTS": env.json,
    "NR_LLM_PUBLIC_BASE_URL": env.str,
    "NR_LLM_TOOL_CALL_PREVIEW_CHARS": env.int,
    "NR_LLM_APPROVAL_EXPIRY_SECONDS": env.str,
    "NR_LLM_APPROVAL_SECOND_APPROVER": env.bool,
    "NR_LLM_DATA_CLASS_CEILING": env.str,
}
for _name, _read in _NR_LLM_FROM_ENV.items():
    if _name in env.ENVIRON:
        globals()[_name] = _read(_name)

# Every completion is an access record on nr_llm.access (stderr, via "nr_llm"), so the
# server console shows each request once: django.request's 4xx warnings ("Not Found: /x")
# are dropped for requests the access record covers (its 5xx errors, with their
# tracebacks, stay), and the lines of static files and the favicon served are left out.
# Structured RequestEvents (nr_llm.requests) go to stderr as JSON lines only when
# LOG_REQUEST_EVENTS is set.
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "jsonl": {"()": "nr_llm.observability.json_lines.JsonLinesFormatter"},
    },
    "filters": {
        "access_recorded": {"()": "nr_llm.observability.log_filters.AccessRecordedFilter"},
        "quiet_assets": {"()": "project.log_filters.QuietAssets"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": "plain"},
        "events": {
            "()": "nr_llm.observability.queue_handler.BoundedQueueHandler",
            "target": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
            "maxsize": 10_000,
            "formatter": "jsonl",
        },
    },
    "loggers": {
        "django.request": {"filters": ["access_recorded"]},
        # The site's own requests, not each static file and favicon a page pulls in.
        "nr_llm.access": {"filters": ["quiet_assets"]},
        "nr_llm": {"handlers": ["stderr"], "level": "INFO", "propagate": True},
        "project": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "nr_llm.requests": {
            "handlers": ["events"] if env.bool("LOG_REQUEST_EVENTS", default=False) else [],
            "level": "INFO",
            "propagate": False,
        },
    },
}
