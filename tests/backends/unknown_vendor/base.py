"""A third-party backend of a vendor nr_llm has never run on (as Oracle or a cloud database's
own backend would be)."""

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper


class DatabaseWrapper(SQLiteWrapper):
    vendor = "acme"
    display_name = "Acme DB"
