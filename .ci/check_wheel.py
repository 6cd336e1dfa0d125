"""Run inside a clean venv with only the wheel installed (stdin: the tracked nr_llm files), from
the checkout's root.

Every tracked file of the package must be installed, and the installed app must migrate. The
wheel's metadata must be ready to publish: its version is ``nr_llm.__version__``, CHANGELOG.md
has a section for it and the README's install line names its file; the classifiers name every
Python and Django version CI runs; no project URL points at another project.
"""

import re
import sys
from importlib import metadata
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

version = nr_llm.__version__
wheel = metadata.metadata("nr-llm")
if wheel["Version"] != version:
    sys.exit(f"the wheel says version {wheel['Version']}, nr_llm.__version__ says {version}")
classifiers = set(wheel.get_all("Classifier") or [])
wanted = {
    *(f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12, 13)),
    *(f"Framework :: Django :: {release}" for release in ("5.2", "6.0")),
}
if missing_classifiers := sorted(wanted - classifiers):
    sys.exit("the wheel's classifiers lack: " + ", ".join(missing_classifiers))
urls = dict(entry.split(", ", 1) for entry in wheel.get_all("Project-URL") or [])
if foreign := {name: url for name, url in urls.items() if "t3x-nr-llm" in url}:
    sys.exit(f"the wheel's project URLs point at another project: {foreign}")
if not re.search(rf"^## {re.escape(version)}\b", Path("CHANGELOG.md").read_text(), re.MULTILINE):
    sys.exit(f"CHANGELOG.md has no section '## {version}'")
if f"dist/nr_llm-{version}-py3-none-any.whl" not in Path("README.md").read_text():
    sys.exit(f"the README's install line does not name dist/nr_llm-{version}-py3-none-any.whl")

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
print(f"wheel OK: nr-llm {version} from {installed}")
