"""Test settings: the demo site's, with a fixed key and fast password hashing."""

import os
from typing import Any

import django

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-0123456789abcdef")

from project.settings import *  # noqa: E402,F403

# The database task backend's tables exist in every test database, so the worker tests
# (tests/e2e/test_import_workers.py) can switch TASKS to it; the default stays immediate.
INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Admin error mails go to locmem. Django 6.1 replaced EMAIL_BACKEND with MAILERS and warns
# about either the old setting or no mailer at all (warnings are errors in this suite).
if django.VERSION >= (6, 1):
    MAILERS: dict[str, dict[str, Any]] = {
        "default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}
    }
else:
    EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    # The test database is SQLite's shared in-memory one, which locks a whole table against
    # other connections' readers while one writes (a file database waits instead): readers
    # that do not lock let the tests run calls on several threads, as a site's worker does.
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA read_uncommitted = 1;"  # noqa: F405
