"""Run inside a clean venv with only the wheel installed (stdin: the tracked nr_llm files).

Every tracked file of the package must be installed, and the installed app must migrate.
"""

import sys
from pathlib import Path

import django
from django.conf import settings
from django.core.management import call_command

import nr_llm

installed = Path(nr_llm.__file__).parent
tracked = [Path(line.strip()).relative_to("nr_llm") for line in sys.stdin if line.strip()]
missing = [str(name) for name in tracked if not (installed / name).exists()]
if missing:
    sys.exit("the wheel is missing: " + ", ".join(missing))
if "site-packages" not in installed.parts:
    sys.exit(f"nr_llm was imported from the checkout ({installed}), not from the wheel")

settings.configure(
    INSTALLED_APPS=[
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
        "nr_llm",
    ],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    ],
    TEMPLATES=[
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "APP_DIRS": True,
            "OPTIONS": {
                "context_processors": [
                    "django.template.context_processors.request",
                    "django.contrib.auth.context_processors.auth",
                    "django.contrib.messages.context_processors.messages",
                ]
            },
        }
    ],
    SECRET_KEY="wheel-check-only-0123456789",
)
django.setup()
call_command("migrate", verbosity=0)
call_command("check")

from django.template.loader import get_template  # noqa: E402

# Every shipped template must load from the installed package.
for name in tracked:
    if name.parts[0] == "templates":
        get_template(str(Path(*name.parts[1:])))
print(f"wheel OK: {installed}")
