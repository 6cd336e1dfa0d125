"""Another worker process holding one server's grant row lock, as a slow refresh would.

``python -m tests.authorization.lock_worker <identifier> <seconds>`` locks the server's row
and its grant row (``SELECT … FOR UPDATE``) in one transaction, prints ``locked`` once it
holds them, and keeps them for ``seconds`` (or until stdin closes) before it rolls back.
"""

from __future__ import annotations

import select
import sys
import time


def main(identifier: str, seconds: float) -> None:
    import django

    django.setup()
    from django.db import transaction

    from nr_llm.models import McpServer, OAuthGrantRecord

    with transaction.atomic():
        McpServer.objects.select_for_update().filter(identifier=identifier).get()
        OAuthGrantRecord.objects.select_for_update().filter(server__identifier=identifier).get()
        print("locked", flush=True)
        # Held until the time is up or the test closes our stdin (it is done with us).
        select.select([sys.stdin], [], [], max(seconds, 0))
        time.sleep(0)
        transaction.set_rollback(True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
