"""``manage.py mcp_watch [--seconds S]``: a long-lived worker that watches the servers marked
"watch for changes" and re-imports their catalogues when they announce a change; with
``NR_LLM_REIMPORT_INTERVAL`` set it also enqueues the periodic re-import of the others.

Thin: the watching is ``nr_llm.catalogue.watch``; each re-import is the import task, enqueued
on the site's task backend as the admin's import is. Stops on SIGTERM or SIGINT (or after S
seconds); run one per site (two cost a second connection per server, never a wrong catalogue).
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from nr_llm.catalogue.watch import Watcher
from nr_llm.conf import conf
from nr_llm.models import McpServer
from nr_llm.tasks import reimport_catalogues, start_import


class Command(BaseCommand):
    help = "Watch the servers marked 'watch for changes' and re-import them when they change."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seconds", type=float, default=None, help="stop after this many seconds")
        parser.add_argument(
            "--reload", type=float, default=30.0, help="seconds between re-reads of which servers are watched"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        if options["seconds"] is not None:
            threading.Timer(options["seconds"], stop.set).start()
        next_reimport = [time.monotonic()]

        def tick() -> None:
            interval = conf.REIMPORT_INTERVAL
            if interval is None or time.monotonic() < next_reimport[0]:
                return
            next_reimport[0] = time.monotonic() + interval
            reimport_catalogues.enqueue()

        def importer(server: McpServer) -> None:
            started = start_import(server)
            self.stdout.write(f"{server.identifier}: changed, re-import {started.state}")

        self.stdout.write("Watching MCP servers for changes (Ctrl-C stops).")
        Watcher(importer).run(stop, reload_seconds=options["reload"], tick=tick)
        self.stdout.write("Stopped watching.")
