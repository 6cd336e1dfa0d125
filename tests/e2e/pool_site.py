"""A site process on Django's psycopg pool (tests/e2e/pool_settings.py) for the burst test
(tests/e2e/test_pool_burst.py): ``CALLS`` calls at once through the async twin, then one more
query from the process's own thread; everything it saw as one JSON line on stdout."""

import asyncio
import json
import os
import sys
import time

import django

os.environ["DJANGO_SETTINGS_MODULE"] = "tests.e2e.pool_settings"
django.setup()

from django.db import connection  # noqa: E402

from nr_llm import tools  # noqa: E402
from nr_llm.models import ToolCall  # noqa: E402


async def burst(count: int) -> list[tools.ToolResult]:
    return list(
        await asyncio.gather(*(tools.aexecute("mcp_pool_echo", {"text": f"burst {n}"}) for n in range(count)))
    )


def main() -> None:
    count = int(sys.argv[1])
    started = time.monotonic()
    results = asyncio.run(burst(count))
    seconds = time.monotonic() - started
    ids = [str(result.call_id) for result in results if result.call_id is not None]
    # The process's own queries after the burst: the pool must have connections to give.
    started = time.monotonic()
    try:
        finished = ToolCall.objects.filter(pk__in=ids, status="succeeded", finished_at__isnull=False).count()
        after = ""
    except Exception as exc:  # a reporting boundary: the parent asserts on what it was
        finished, after = -1, f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
    print(
        json.dumps(
            {
                "texts": [result.text for result in results],
                "ids": ids,
                "burst_seconds": round(seconds, 2),
                "finished": finished,
                "after": after,
                "after_seconds": round(time.monotonic() - started, 2),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
