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
missing = [
    name
    for name in (line.strip() for line in sys.stdin)
    if name and not (installed / Path(name).relative_to("nr_llm")).exists()
]
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
    SECRET_KEY="wheel-check-only-0123456789",
)
django.setup()
call_command("migrate", verbosity=0)
call_command("check")
print(f"wheel OK: {installed}")
