from typing import Any

from django.core.management.base import BaseCommand, CommandError

from nr_llm.servers.credential_rotation import rotate_stored_credentials


class Command(BaseCommand):
    help = "Re-encrypt every stored MCP credential under the first key of NR_LLM_CREDENTIAL_KEYS."

    def handle(self, *args: Any, **options: Any) -> None:
        report = rotate_stored_credentials()
        self.stdout.write(f"{report.rotated} credential(s) re-encrypted under the current key.")
        if report.unreadable:
            raise CommandError(
                "no configured key decrypts the credential of: "
                + ", ".join(report.unreadable)
                + ". Add the old key back after the new one, run this again, or set those credentials anew.",
                returncode=2,
            )
