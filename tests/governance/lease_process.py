"""A process of its own on the test database, for tests/governance/test_leases.py.

``python -m tests.governance.lease_process turn CALLS_JSON``: prints ``READY``, waits for a line
on stdin, runs one turn of ``(name, arguments)`` pairs and prints its results as JSON.
``python -m tests.governance.lease_process hold SERVER_PK BUDGET``: takes one lease of the
server, prints ``HELD`` and sleeps until it is killed (a process that dies holding a place).
"""

from __future__ import annotations

import json
import os
import sys
import time

import django


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from nr_llm import tools
    from nr_llm.governance import leases

    mode = sys.argv[1]
    if mode == "turn":
        print("READY", flush=True)
        sys.stdin.readline()  # the test starts both processes' turns at once
        results = tools.execute_many([tuple(call) for call in json.loads(sys.argv[2])], actor="process")
        print(json.dumps([[result.status, result.text] for result in results]), flush=True)
    elif mode == "hold":
        lease = leases.take(
            int(sys.argv[2]), "held", cap=1, alone=False, writes_alone=False, budget=float(sys.argv[3])
        )
        assert lease.pk is not None, lease.refusal
        print("HELD", flush=True)
        time.sleep(600)


if __name__ == "__main__":
    main()
