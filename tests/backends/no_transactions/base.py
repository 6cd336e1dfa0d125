"""A backend that says it has no transactions, as MySQL does on a non-transactional storage
engine (MyISAM): nothing could commit a ledger row on its own or keep it past a rollback."""

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper
from django.db.backends.sqlite3.features import DatabaseFeatures as SQLiteFeatures


class DatabaseFeatures(SQLiteFeatures):
    supports_transactions = False


class DatabaseWrapper(SQLiteWrapper):
    display_name = "SQLite without transactions"
    features_class = DatabaseFeatures
