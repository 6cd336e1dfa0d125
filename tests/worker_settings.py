"""Settings of the ``db_worker`` processes the worker tests start: the tests' own, queued in the database.

The database itself comes from ``DATABASE_URL``, which the test points at its test database.
"""

from tests.settings import *  # noqa: F403

TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
