"""Settings of the authorization-server peer site, read from OAUTH_PEER_* variables.

OAUTH_PEER_DIR: the folder of the SQLite file and the request log (required).
OAUTH_PEER_ISSUER: the issuer URL, set by the launcher once the port is known.
OAUTH_PEER_HOST: a host name the site is reached by besides 127.0.0.1 and localhost (TLS by name).
OAUTH_PEER_ACCESS_TOKEN_SECONDS: access-token lifetime (default 300).
OAUTH_PEER_SECRET_KEY: the site's SECRET_KEY (a fixed test-only key when unset).
"""

from __future__ import annotations

import os
from pathlib import Path

import oauth2_provider

PEER_DIR = Path(os.environ["OAUTH_PEER_DIR"])
ISSUER = os.environ.get("OAUTH_PEER_ISSUER", "")
ACCESS_TOKEN_SECONDS = int(os.environ.get("OAUTH_PEER_ACCESS_TOKEN_SECONDS", "300"))
REQUEST_LOG = PEER_DIR / "requests.jsonl"

# A fixed key is fine for a test session on 127.0.0.1; `make demo`, whose site a person
# signs in to for longer, passes a random one of its own.
SECRET_KEY = (
    os.environ.get("OAUTH_PEER_SECRET_KEY") or "oauth-peer-tests-only-0123456789abcdefghijklmnopqrstuvwxyz"
)
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", os.environ.get("OAUTH_PEER_HOST", "127.0.0.1")]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
    "tests.peers.oauth_site",
]

MIDDLEWARE = [
    "tests.peers.oauth_site.request_log.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "tests.peers.oauth_site.urls"
WSGI_APPLICATION = "tests.peers.oauth_site.wsgi.application"
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": PEER_DIR / "oauth.sqlite3",
        # Concurrent token requests (two workers refreshing at once) wait for the write lock
        # instead of failing with "database is locked".
        # No fsync: the file is thrown away with the session, and fsync on every migration's
        # commit made startup take many seconds on a loaded machine.
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA synchronous=OFF; PRAGMA journal_mode=WAL;",
        },
    }
}
# Tables straight from the models (migrate --run-syncdb), as pytest-django's --nomigrations
# does: replaying some forty migrations took seconds of CPU at every start.
MIGRATION_MODULES: dict[str, str | None] = dict.fromkeys(
    ("auth", "contenttypes", "sessions", "oauth2_provider")
)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The peer hashes the seeded password and client secrets on every login and token request;
# PBKDF2's cost would dominate a test's time on a 2-core machine, and nothing here is kept.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "/static/"
# The toolkit's own stylesheet, served by the peer (no collectstatic for a throwaway site).
STATIC_DIR = Path(oauth2_provider.__file__).resolve().parent / "static"
LOGIN_URL = "/accounts/login/"
# Cookies are not kept apart by port: with the site under test also on 127.0.0.1, both would
# use "sessionid" and "csrftoken", and signing in here would sign the operator out there.
SESSION_COOKIE_NAME = "oauth_peer_sessionid"
CSRF_COOKIE_NAME = "oauth_peer_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ISS_ENDPOINT": ISSUER,
    "SCOPES": {
        "mcp:tools": "Call the MCP server's tools",
        "mcp:admin": "Call the MCP server's administrative tools",
        "offline_access": "Keep access while you are away (refresh tokens)",
    },
    "DEFAULT_SCOPES": ["mcp:tools"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": ACCESS_TOKEN_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "PKCE_REQUIRED": True,
    # Refresh-token rotation, and a reused (already rotated) refresh token revokes the family.
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Loopback redirect URIs match on any port (RFC 8252 §7.3); pytest-django's live server
    # is on "localhost", so that name counts as loopback too.
    "ALLOW_LOCALHOST_LOOPBACK": True,
    # Consent is asked on every authorization request, so a browser test always sees it.
    "REQUEST_APPROVAL_PROMPT": "force",
    # RFC 9700 behaviour now rather than at the toolkit's 4.0: S256 only, no implicit or
    # password grant, tokens only in the Authorization header, and the RFC 9207 `iss`
    # parameter on every authorization response.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "client_credentials", "refresh_token"],
    # Open dynamic client registration (RFC 7591), as MCP clients expect.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    # The toolkit warns on every request a client makes in a way RFC 9700 discourages;
    # the tests provoke some on purpose.
    "loggers": {"oauth2_provider": {"level": "ERROR"}},
}
