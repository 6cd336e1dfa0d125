"""``manage.py mcp_server <identifier> [--url ... flags] | --file servers.toml``: servers as code.

Thin: parse, build the configuration, call ``nr_llm.servers.configuration.configure``, print
the reports. Idempotent (a second run changes nothing and says "unchanged"); only the fields
named are set. Credentials only from environment variable NAMES: a literal one is refused.
Exit codes: 0 applied (or would be, with ``--dry-run``), 1 applied but an import was refused or
a named tool was left disabled, 2 a usage or configuration error (nothing was written).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from nr_llm.models import AuthPlacement, DataClass, OAuthGrantType, OAuthRegistration
from nr_llm.servers.configuration import (
    ConfigurationError,
    ServerReport,
    ServerSpec,
    configure,
    spec_from_mapping,
    specs_from_file,
)

EXIT_FAILED = 1
EXIT_USAGE = 2
#: Flag -> the configuration key it sets (the model's field names).
FIELD_FLAGS = {
    "name": "name",
    "description": "description",
    "url": "url",
    "data_class": "data_class",
    "enabled": "enabled",
    "requires_approval": "requires_approval",
    "operation_timeout": "operation_timeout",
    "auth": "auth_placement",
    "header_name": "auth_header_name",
    "credential_env": "credential_env",
    "oauth_grant": "oauth_grant_type",
    "oauth_registration": "oauth_registration",
    "oauth_issuer": "oauth_issuer",
    "oauth_client_id": "oauth_client_id",
    "oauth_key_id": "oauth_key_id",
    "oauth_scopes": "oauth_scopes",
    "oauth_client_secret_env": "oauth_client_secret_env",
    "oauth_private_key_env": "oauth_private_key_env",
}
#: Flags that would put a secret on the command line: accepted by the parser only to be refused.
LITERAL_FLAGS = ("credential", "oauth_client_secret", "oauth_private_key", "token")


class Command(BaseCommand):
    help = (
        "Create or update an MCP server from flags or a JSON/TOML file (idempotent); optionally "
        "import its catalogue and enable named tools. Credentials only from environment variables."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("identifier", nargs="?", help="the server's identifier, e.g. orders")
        parser.add_argument(
            "--file", type=Path, help="a .json or .toml file of servers (instead of an identifier and flags)"
        )
        fields = parser.add_argument_group("fields (only those given are set; a new server starts disabled)")
        fields.add_argument("--name", help="display name (a new server: its identifier)")
        fields.add_argument("--description")
        fields.add_argument("--url", help="the MCP endpoint, http:// or https://")
        fields.add_argument("--data-class", choices=DataClass.values, help="what data the server may see")
        fields.add_argument("--enabled", action=argparse.BooleanOptionalAction, help="new servers: disabled")
        fields.add_argument(
            "--requires-approval", action=argparse.BooleanOptionalAction, help="new servers: required"
        )
        fields.add_argument(
            "--operation-timeout",
            metavar="SECONDS",
            help="this server's budget in whole seconds, or 'default' for NR_LLM_MCP_OPERATION_TIMEOUT",
        )
        fields.add_argument("--auth", choices=AuthPlacement.values, help="how the credential is sent")
        fields.add_argument("--header-name", help="the header carrying the credential (--auth header)")
        fields.add_argument(
            "--credential-env", metavar="NAME", help="the environment variable holding the credential"
        )
        fields.add_argument("--oauth-grant", choices=OAuthGrantType.values)
        fields.add_argument("--oauth-registration", choices=OAuthRegistration.values)
        fields.add_argument("--oauth-issuer")
        fields.add_argument("--oauth-client-id")
        fields.add_argument("--oauth-key-id")
        fields.add_argument("--oauth-scopes")
        fields.add_argument(
            "--oauth-client-secret-env", metavar="NAME", help="read now from this variable, stored encrypted"
        )
        fields.add_argument(
            "--oauth-private-key-env", metavar="NAME", help="read now from this variable, stored encrypted"
        )
        for flag in LITERAL_FLAGS:
            # Parsed only to say why not: argparse's "unrecognized arguments" would not.
            fields.add_argument(f"--{flag.replace('_', '-')}", nargs="?", const="", help=argparse.SUPPRESS)
        parser.add_argument(
            "--import", dest="run_import", action="store_true", help="import the catalogue after saving"
        )
        parser.add_argument(
            "--enable-tool",
            dest="enable_tools",
            action="append",
            default=[],
            metavar="NAME",
            help="enable this tool after saving (and importing); local or remote name; repeatable",
        )
        parser.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
        parser.add_argument("--json", action="store_true", help="print the reports as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if given := [flag for flag in LITERAL_FLAGS if options[flag] is not None]:
            raise CommandError(
                f"--{given[0].replace('_', '-')} is refused: a credential on the command line stays in "
                "shell history and the process list. Put it in an environment variable and name that "
                "variable: --credential-env NAME (the site reads it at each call), or "
                "--oauth-client-secret-env / --oauth-private-key-env NAME (read now, stored encrypted).",
                returncode=EXIT_USAGE,
            )
        try:
            specs = self._specs(options)
            reports = configure(specs, dry_run=options["dry_run"])
        except ConfigurationError as exc:
            raise CommandError(f"{exc}; nothing was written", returncode=EXIT_USAGE) from None
        if options["json"]:
            self.stdout.write(json.dumps([_as_json(report) for report in reports], indent=2))
        else:
            for report in reports:
                self._print(report)
        failed = [report.identifier for report in reports if not report.ok]
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(reports)} server(s) saved, not ready as asked: {', '.join(failed)}",
                returncode=EXIT_FAILED,
            )

    def _specs(self, options: dict[str, Any]) -> list[ServerSpec]:
        flags = {key: options[flag] for flag, key in FIELD_FLAGS.items() if options[flag] is not None}
        if options["file"] is not None:
            if options["identifier"] or flags or options["enable_tools"]:
                raise ConfigurationError(
                    "give either --file or an identifier with flags, not both (--import, --dry-run and "
                    "--json go with either)"
                )
            specs = specs_from_file(options["file"])
            if options["run_import"]:
                specs = [dataclasses.replace(spec, import_catalogue=True) for spec in specs]
            return specs
        if not options["identifier"]:
            raise ConfigurationError("give a server's identifier (with flags), or --file")
        if "operation_timeout" in flags:
            flags["operation_timeout"] = _seconds(flags["operation_timeout"])
        entry = {
            "identifier": options["identifier"],
            **flags,
            "import": options["run_import"],
            "enable_tools": options["enable_tools"],
        }
        return [spec_from_mapping(entry)]

    def _print(self, report: ServerReport) -> None:
        verb = {"created": "would create", "updated": "would update", "unchanged": "unchanged"}
        action = verb[report.action] if report.dry_run else report.action
        what = f": {', '.join(report.changed)}" if report.changed and report.action != "unchanged" else ""
        self.stdout.write(f"{report.identifier}: {action}{what}")
        for note in report.notes:
            self.stdout.write(f"  note: {note}")
        if report.imported is not None:
            imported = report.imported
            if imported.ok:
                self.stdout.write(
                    f"  import: {imported.imported} imported, {imported.skipped} skipped, "
                    f"{imported.orphaned} orphaned"
                )
                for reason in imported.skip_reasons:
                    self.stdout.write(f"  skipped: {reason}")
            else:
                self.stdout.write(self.style.ERROR(f"  import refused — {imported.refused}"))
        for name in report.enabled_tools:
            self.stdout.write(f"  enabled: {name}")
        for reason in report.not_enabled:
            self.stdout.write(self.style.ERROR(f"  not enabled: {reason}"))
        for why in report.holds:
            self.stdout.write(self.style.WARNING(f"  not in use yet: {why}"))


def _seconds(raw: str) -> int | None:
    if raw == "default":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(
            "--operation-timeout takes whole seconds, or 'default' for NR_LLM_MCP_OPERATION_TIMEOUT"
        ) from None


def _as_json(report: ServerReport) -> dict[str, Any]:
    document = asdict(report)
    document["ok"] = report.ok
    if report.imported is not None:
        document["imported"] = {**asdict(report.imported), "status": report.imported.status}
    return document
