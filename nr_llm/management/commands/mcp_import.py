"""``manage.py mcp_import <identifier> | --all [--json]``: import catalogues from a deploy script.

Thin: parse, call ``import_catalogue`` per server, print the reports, fail through
``CommandError``. Exit codes: 0 all imported (partial imports included), 1 a server was
refused or failed, 2 an unknown identifier (a usage error is argparse's 2 as well).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from nr_llm.catalogue import ImportProgress, ImportReport, import_catalogue
from nr_llm.models import McpServer

logger = logging.getLogger("nr_llm.catalogue")


class Command(BaseCommand):
    help = "Import the tool catalogue of one MCP server, or of every enabled one."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("identifier", nargs="?", help="the identifier of the server to import")
        which.add_argument("--all", action="store_true", help="import every enabled server")
        parser.add_argument(
            "--json", action="store_true", help="print the reports as JSON (for deploy scripts)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["all"]:
            servers = list(McpServer.objects.filter(enabled=True).order_by("identifier"))
            if not servers:
                warning = self.style.WARNING("no enabled MCP server: nothing to import")
                self.stderr.write(warning, style_func=_plain)
                if options["json"]:
                    self.stdout.write("[]")
                return
        else:
            server = McpServer.objects.filter(identifier=options["identifier"]).first()
            if server is None:
                raise CommandError(
                    f"no MCP server with the identifier {options['identifier']!r}; "
                    "see the admin's MCP servers list, or use --all",
                    returncode=2,
                )
            servers = [server]

        reports = [self._import(server, position, len(servers)) for position, server in enumerate(servers, 1)]
        if options["json"]:
            self.stdout.write(json.dumps([_as_json(report) for report in reports], indent=2))
        else:
            for report in reports:
                self._print(report)
        refused = [report.identifier for report in reports if not report.ok]
        if refused:
            raise CommandError(f"{len(refused)} of {len(reports)} import(s) refused: {', '.join(refused)}")

    def _import(self, server: McpServer, position: int, total: int) -> ImportReport:
        progress = self._progress(position, total) if self.stderr.isatty() else None
        try:
            return import_catalogue(server, progress=progress)
        except Exception as exc:
            # A reporting boundary: one server's unexpected failure must not stop --all
            # from importing the others. The traceback goes to the log.
            logger.exception("importing MCP server %s failed", server.identifier)
            return ImportReport(
                server.identifier,
                0,
                0,
                0,
                (),
                refused=f"failed unexpectedly ({type(exc).__name__}); the traceback is in the log",
            )
        finally:
            if progress:
                self.stderr.write("\r\033[K", ending="", style_func=_plain)

    def _progress(self, position: int, total: int) -> Any:
        def show(event: ImportProgress) -> None:
            what = {
                "walking": "fetching the catalogue",
                "page": f"{event.pages} page(s), {event.tools} tools fetched",
                "walked": f"fetched {event.tools} tools",
                "reconciled": f"{event.tools} tools reconciled",
            }[event.stage]
            self.stderr.write(
                f"\r\033[K[{position}/{total}] {event.identifier}: {what}", ending="", style_func=_plain
            )
            self.stderr.flush()

        return show

    def _print(self, report: ImportReport) -> None:
        if not report.ok:
            # Styled before the line ends, so the colour stops on this line.
            self.stdout.write(self.style.ERROR(f"{report.identifier}: refused — {report.refused}"))
            return
        counts = f"{report.imported} imported, {report.skipped} skipped, {report.orphaned} orphaned"
        if report.changed:
            counts += f", {len(report.changed)} disabled: definition changed"
        self.stdout.write(f"{report.identifier}: {counts}")
        for reason in report.skip_reasons:
            self.stdout.write(f"  skipped: {reason}")
        for changed in report.changed:
            # Styled before the line ends, so the colour stops on this line.
            self.stdout.write(self.style.WARNING(f"  disabled until reviewed: {changed}"))
        self._print_features(report.features)

    def _print_features(self, features: dict[str, Any]) -> None:
        # A server that offers no resources or prompts adds no line: the tools' line says it all.
        counted = ("resources", "templates", "prompts", "skipped", "orphaned")
        if not features or not (features.get("refused") or any(features.get(key) for key in counted)):
            return
        if features.get("refused"):
            self.stdout.write(
                self.style.WARNING(f"  resources and prompts not imported: {features['refused']}")
            )
            return
        self.stdout.write(
            f"  {features['resources']} resources, {features['templates']} resource templates, "
            f"{features['prompts']} prompts imported "
            f"({features['skipped']} skipped, {features['orphaned']} orphaned)"
        )
        for reason in features.get("skip_reasons", ()):
            self.stdout.write(f"  skipped: {reason}")
        for key in features.get("changed", ()):
            self.stdout.write(self.style.WARNING(f"  disabled until reviewed: {key}"))


def _plain(text: str) -> str:
    """No style: Django styles everything on a terminal's stderr as an error, and progress is not one."""
    return text


def _as_json(report: ImportReport) -> dict[str, Any]:
    return {
        **asdict(report),
        "skip_reasons": list(report.skip_reasons),
        "status": report.status,
        "ok": report.ok,
    }
