"""``manage.py mcp_prune_ledger [--days N]``: retention for the tool-call ledger, from cron.

Thin: reap calls left running by a dead worker, delete finished rows older than N days
(default ``NR_LLM_LEDGER_RETENTION_DAYS``) in short batches, print what went. Safe while
calls are being written and when two runs overlap (nr_llm/governance/retention.py).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from nr_llm.governance.ledger import LedgerUnavailable
from nr_llm.governance.retention import prune


def _days(raw: str) -> int:
    if not raw.strip().isdigit():
        raise ValueError(raw)
    return int(raw)


_days.__name__ = "a whole number of days"  # argparse names the type in its error


class Command(BaseCommand):
    help = "Delete finished tool calls older than N days (NR_LLM_LEDGER_RETENTION_DAYS by default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=_days,
            default=None,
            help="keep this many days (0 keeps everything); default NR_LLM_LEDGER_RETENTION_DAYS",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = prune(options["days"])
        except LedgerUnavailable as exc:
            # Whatever was deleted before stays deleted: every batch commits on its own.
            raise CommandError(f"the ledger could not be pruned: {exc.for_log()}", returncode=1) from exc
        for line in report.lines():
            self.stdout.write(line)
