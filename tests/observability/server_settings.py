"""Settings for the servers the real-server tests start: JSON lines to a file, emails to files.

``NR_LLM_TEST_LOG`` names the log file, ``NR_LLM_TEST_MAIL_DIR`` the email folder;
``NR_LLM_TEST_BARE=1`` removes the completion middleware (the negative control).
"""

import os

import django

from tests.settings import *  # noqa: F403
from tests.settings import MIDDLEWARE

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
# Django 6 takes plain addresses and deprecates (name, address) pairs.
ADMINS = ["ops@example.invalid"] if django.VERSION >= (6, 0) else [("Ops", "ops@example.invalid")]
_MAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
_MAIL_DIR = os.environ["NR_LLM_TEST_MAIL_DIR"]
if django.VERSION >= (6, 1):
    # Django 6.1 deprecates EMAIL_BACKEND / EMAIL_FILE_PATH in favour of MAILERS.
    MAILERS = {"default": {"BACKEND": _MAIL_BACKEND, "OPTIONS": {"file_path": _MAIL_DIR}}}
else:
    EMAIL_BACKEND = _MAIL_BACKEND
    EMAIL_FILE_PATH = _MAIL_DIR

if os.environ.get("NR_LLM_TEST_BARE") == "1":
    MIDDLEWARE = [entry for entry in MIDDLEWARE if not entry.startswith("nr_llm.")]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"jsonl": {"()": "nr_llm.observability.json_lines.JsonLinesFormatter"}},
    "handlers": {
        "file": {
            "class": "logging.FileHandler",
            "filename": os.environ["NR_LLM_TEST_LOG"],
            "formatter": "jsonl",
        },
        "events": {
            "()": "nr_llm.observability.queue_handler.BoundedQueueHandler",
            "target": {"class": "logging.FileHandler", "filename": os.environ["NR_LLM_TEST_LOG"]},
            "formatter": "jsonl",
        },
    },
    "root": {"handlers": ["file"], "level": "WARNING"},
    "loggers": {
        # Everything Django says about requests, at every level, to catch a stray warning.
        "django.request": {"level": "DEBUG"},
        "django.security": {"level": "DEBUG"},
        "nr_llm": {"handlers": ["file"], "level": "INFO", "propagate": False},
        "nr_llm.requests": {"handlers": ["events"], "level": "INFO", "propagate": False},
        "project": {"handlers": ["file"], "level": "INFO", "propagate": False},
        "tests": {"handlers": ["file"], "level": "INFO", "propagate": False},
    },
}
