"""``mcp_rotate_credentials`` over the ledger: short batches, resumable after an interruption,
rows written meanwhile covered; SQLite and PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

from nr_llm.models import ToolCall, ToolCallStatus
from nr_llm.servers import credential_rotation, credentials
from nr_llm.servers.credential_rotation import rotate_stored_credentials

from .helpers import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

OLD = ["old-key-0123456789abcdef"]
BOTH = ["new-key-0123456789abcdef", "old-key-0123456789abcdef"]
NEW = ["new-key-0123456789abcdef"]
NOW = FakeClock().now


def _calls(count: int, start: int = 0) -> list[ToolCall]:
    """Finished calls whose arguments and answer are encrypted under OLD, one minute apart."""
    with override_settings(NR_LLM_CREDENTIAL_KEYS=OLD):
        return [
            ToolCall.objects.create(
                created=NOW + timedelta(minutes=start + n),
                status=ToolCallStatus.SUCCEEDED,
                arguments_ciphertext=credentials.encrypt(f'{{"n": {start + n}}}'),
                result_preview_ciphertext=credentials.encrypt(f"answer {start + n}"),
            )
            for n in range(count)
        ]


def _readable_with_new_key_only() -> list[str]:
    with override_settings(NR_LLM_CREDENTIAL_KEYS=NEW):
        return [
            credentials.decrypt(row.arguments_ciphertext)
            for row in ToolCall.objects.order_by("created", "id")
        ]


def test_the_ledger_is_rotated_in_batches():
    """Five calls in batches of two: three batches, ten tokens, every one readable with the new
    key alone."""
    _calls(5)
    with override_settings(NR_LLM_CREDENTIAL_KEYS=BOTH):
        report = rotate_stored_credentials(ledger_batch_rows=2)
    assert (report.rotated, report.ledger_batches, report.unreadable) == (10, 3, ())
    assert _readable_with_new_key_only() == [f'{{"n": {n}}}' for n in range(5)]


def test_an_interrupted_rotation_keeps_its_batches_and_a_second_run_does_the_rest():
    """A failure in the third row's batch keeps the first batch rotated and rolls back only its
    own; run again, it rotates what is left and leaves the done rows as they are."""
    _calls(5)
    real = credential_rotation._rotated
    seen: list[int] = []

    def failing(row: Any, fields: tuple[str, ...]) -> Any:
        seen.append(1)
        if len(seen) == 3:
            raise RuntimeError("the worker was stopped")
        return real(row, fields)

    with override_settings(NR_LLM_CREDENTIAL_KEYS=BOTH):
        with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError):
            patch.setattr(credential_rotation, "_rotated", failing)
            rotate_stored_credentials(ledger_batch_rows=2)
        done = [row.pk for row in ToolCall.objects.all() if credentials.is_current(row.arguments_ciphertext)]
        assert len(done) == 2
        report = rotate_stored_credentials(ledger_batch_rows=2)
    assert report.rotated == 6  # three rows left, two tokens each
    assert _readable_with_new_key_only() == [f'{{"n": {n}}}' for n in range(5)]


def test_rows_written_during_the_rotation_are_rotated_too():
    """A call written (under the old key, by a process not yet redeployed) while the first batch
    is rotated comes later in the walk and is rotated in the same run."""
    _calls(3)
    real = credential_rotation._rotated
    written: list[ToolCall] = []

    def writing(row: Any, fields: tuple[str, ...]) -> Any:
        if not written:
            written.extend(_calls(1, start=60))
        return real(row, fields)

    with override_settings(NR_LLM_CREDENTIAL_KEYS=BOTH), pytest.MonkeyPatch.context() as patch:
        patch.setattr(credential_rotation, "_rotated", writing)
        report = rotate_stored_credentials(ledger_batch_rows=2)
    assert report.rotated == 8
    assert _readable_with_new_key_only()[-1] == '{"n": 60}'


def test_unreadable_ledger_rows_are_named_up_to_a_limit_and_left_alone():
    """Tokens no key reads are left untouched; the command names at most 20 and counts the rest."""
    calls = _calls(3)
    with override_settings(NR_LLM_CREDENTIAL_KEYS=["unrelated-key-0123456789ab"]):
        report = rotate_stored_credentials()
    assert len(report.unreadable) == 6 and f"tool call {calls[0].pk} (arguments)" in report.unreadable
    with (
        override_settings(NR_LLM_CREDENTIAL_KEYS=["unrelated-key-0123456789ab"]),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(credential_rotation, "NAMED_AT_MOST", 2)
        with pytest.raises(Exception, match="4 more tool-call fields"):
            call_command("mcp_rotate_credentials", stdout=io.StringIO())
    assert [row.arguments_ciphertext for row in ToolCall.objects.order_by("created")] == [
        row.arguments_ciphertext for row in calls
    ]
