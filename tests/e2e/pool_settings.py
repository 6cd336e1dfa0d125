"""The suite's settings with Django's psycopg connection pool at its default size
(``OPTIONS["pool"] = True``), on the database named by ``NR_LLM_POOL_DATABASE`` (the test run's)."""

import os

from tests.settings import *  # noqa: F403

DATABASES["default"]["NAME"] = os.environ["NR_LLM_POOL_DATABASE"]  # noqa: F405
DATABASES["default"].setdefault("OPTIONS", {})["pool"] = True  # noqa: F405
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405  (a pool and persistent connections exclude each other)
