"""Test settings: the demo site's, with a fixed key and fast password hashing."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-0123456789abcdef")

from project.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
