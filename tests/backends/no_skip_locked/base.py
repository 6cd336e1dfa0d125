"""A backend with row locks but no SKIP LOCKED, as MariaDB before 10.6 (which Django 5.2 still
accepts): retention would fail on its first batch instead of stepping past a live row."""

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper
from django.db.backends.sqlite3.features import DatabaseFeatures as SQLiteFeatures


class DatabaseFeatures(SQLiteFeatures):
    has_select_for_update = True
    has_select_for_update_skip_locked = False


class DatabaseWrapper(SQLiteWrapper):
    display_name = "SQLite with row locks but no SKIP LOCKED"
    features_class = DatabaseFeatures
