"""The demo site's settings with its database changed as ``NR_LLM_TEST_DATABASE`` says, for
``manage.py check`` in a process of its own: ``unknown_vendor``, ``no_transactions`` and
``no_skip_locked`` (the backends beside this file, on a SQLite file named by ``DATABASE_URL``),
``myisam`` (the ``DATABASE_URL`` MySQL/MariaDB database, MyISAM the session's storage engine)
and ``mysql_local_time`` (that database, its session five hours east of UTC)."""

import os

from project.settings import *  # noqa: F403

_case = os.environ["NR_LLM_TEST_DATABASE"]
if _case in ("unknown_vendor", "no_transactions", "no_skip_locked"):
    DATABASES["default"]["ENGINE"] = f"tests.backends.{_case}"  # noqa: F405
elif _case == "myisam":
    # One SET: the driver runs init_command as a single statement.
    DATABASES["default"]["OPTIONS"]["init_command"] = (  # noqa: F405
        "SET sql_mode = 'STRICT_TRANS_TABLES', default_storage_engine = 'MyISAM'"
    )
elif _case == "mysql_local_time":
    DATABASES["default"]["OPTIONS"]["init_command"] = (  # noqa: F405
        "SET sql_mode = 'STRICT_TRANS_TABLES', time_zone = '+05:00'"
    )
else:
    raise ValueError(
        f"NR_LLM_TEST_DATABASE={_case!r} is none of unknown_vendor, no_transactions, "
        "no_skip_locked, myisam, mysql_local_time"
    )
