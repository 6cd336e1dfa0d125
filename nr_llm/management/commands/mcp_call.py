"""``manage.py mcp_call <tool> --args '<json>' [--actor NAME]`` and ``mcp_call --resume <id>``.

Runs one tool call through the site's own API (``nr_llm.tools.execute`` / ``resume``), so it
is recorded in the ledger and held for approval like any other call. Exit codes: 0 the tool
answered, 1 the call failed (or was denied, or expired), 2 a usage error (bad JSON, a call id
that is malformed or unknown), 3 the call awaits approval, or another process is running it.
Exit 3 is not a failure: it prints a notice with what to do next, not ``CommandError: …``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import NoReverseMatch, reverse

from nr_llm import tools
from nr_llm.conf import conf
from nr_llm.governance import ceiling, ledger, visible
from nr_llm.governance.models import ToolCall
from nr_llm.servers.credentials import CredentialUnavailable

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WAITING = 3
DEFAULT_ACTOR = "manage.py mcp_call"


class Command(BaseCommand):
    help = "Call one tool through nr_llm.tools (recorded in the ledger), or resume an approved call."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tool", nargs="?", help="the tool's name, e.g. mcp_demo_echo")
        parser.add_argument(
            "--args", dest="arguments", default="{}", help="the arguments as a JSON object (default: {})"
        )
        parser.add_argument("--actor", default=DEFAULT_ACTOR, help="who is calling, kept in the ledger")
        parser.add_argument(
            "--ceiling",
            choices=ceiling.ORDER,
            help="the data-class ceiling of this call (default: NR_LLM_DATA_CLASS_CEILING)",
        )
        parser.add_argument("--resume", metavar="CALL_ID", help="run an approved call (its id as printed)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if bool(options["tool"]) == bool(options["resume"]):
            raise CommandError("give either a tool name or --resume CALL_ID", returncode=EXIT_USAGE)
        if options["resume"]:
            result = tools.resume(options["resume"])
            if result.call_id is None:
                # A malformed or unknown id: the command was asked the wrong thing.
                raise CommandError(result.text, returncode=EXIT_USAGE)
        else:
            try:
                arguments = json.loads(options["arguments"])
            except ValueError as exc:
                raise CommandError(f"--args is not JSON: {exc}", returncode=EXIT_USAGE) from None
            if not isinstance(arguments, dict):
                raise CommandError(
                    '--args must be a JSON object, e.g. \'{"text": "hi"}\'', returncode=EXIT_USAGE
                )
            result = tools.execute(
                options["tool"], arguments, actor=options["actor"], data_class_ceiling=options["ceiling"]
            )
        self._print(result, as_json=options["json"])
        if options["resume"] or result.status == "awaiting_approval":
            self._show_arguments(result)
        if result.status == "awaiting_approval":
            raise Waiting(
                f"tool call {result.call_id} awaits approval: {_where(result)}, "
                f"then run: manage.py mcp_call --resume {result.call_id}"
            )
        if result.status == "running":
            raise Waiting(
                f"tool call {result.call_id} is being run by another process; its outcome is recorded "
                "when it ends (resume it again to read it)"
            )
        if result.is_error:
            what = f"tool call {result.call_id}" if result.call_id else "the call (not recorded)"
            raise CommandError(f"{what} {result.status}", returncode=EXIT_FAILED)
        self.stderr.write(f"tool call {result.call_id or '(not recorded)'} succeeded")

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except Waiting as waiting:
            # run_from_argv would print "CommandError: …" for what is the normal way of a held
            # call; call_command's callers (and --traceback) still get the exception.
            if not getattr(self, "_called_from_command_line", False) or options.get("traceback"):
                raise
            self.stderr.write(str(waiting), style_func=self.style.NOTICE)
            sys.exit(waiting.returncode)

    def _show_arguments(self, result: tools.ToolResult) -> None:
        """The recorded arguments of a call held for approval or resumed, on stderr, with every
        invisible or direction-changing character escaped: what is approved is what is read."""
        row = ToolCall.objects.filter(pk=result.call_id).first() if result.call_id else None
        if row is None or not row.arguments_ciphertext:
            return
        try:
            arguments = ledger.arguments_of(row)
        except CredentialUnavailable as exc:
            self.stderr.write(f"the arguments of tool call {result.call_id} cannot be shown: {exc}")
            return
        found = visible.hidden_in(arguments)
        note = (
            f" (invisible or direction-changing characters shown escaped: "
            f"{', '.join(visible.name(char) for char in found)})"
            if found
            else ""
        )
        self.stderr.write(f"arguments of tool call {result.call_id}{note}:\n{visible.pretty(arguments)}")

    def _print(self, result: tools.ToolResult, *, as_json: bool) -> None:
        if not as_json:
            self.stdout.write(result.text)
            return
        document = {
            "status": result.status,
            "is_error": result.is_error,
            "server": result.server,
            "call_id": str(result.call_id) if result.call_id else None,
            "text": result.text,
        }
        self.stdout.write(json.dumps(document, indent=2))


class Waiting(CommandError):
    """Exit 3: the call waits (for an approval, or for another process); nothing failed."""

    def __init__(self, notice: str) -> None:
        super().__init__(notice, returncode=EXIT_WAITING)


def _where(result: tools.ToolResult) -> str:
    try:
        path = reverse("admin:nr_llm_toolcall_change", args=[result.call_id])
    except NoReverseMatch:
        return "approve it with nr_llm.tools.approve()"
    # Absolute where the site knows its public origin: an operator opens it from a deploy log.
    return f"approve it in the admin at {conf.PUBLIC_BASE_URL}{path}"
