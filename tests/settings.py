"""Test settings: the demo site's, with a fixed key and fast password hashing."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-0123456789abcdef")

from project.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# No EMAIL_BACKEND: the test environment already swaps in locmem, and Django 6.1 deprecates
# the setting (a warning, which this suite turns into an error).
