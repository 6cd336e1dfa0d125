"""What an approver reads is what runs (issue 25, item 5): hidden characters in arguments shown.

``invoice\\u202egpj.exe`` renders as "invoiceexe.jpg"; on the approval page, the call's page and
in ``mcp_call`` every invisible or direction-changing character is its escape, marked and named.
"""

from __future__ import annotations

import html
import io
import json

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from nr_llm import tools
from nr_llm.governance import visible
from nr_llm.models import ToolCall
from tests.fakes import FakeClient

from .helpers import approver, guarded_tool, row_of

pytestmark = pytest.mark.django_db(transaction=True)

SPOOFED = "invoice\u202egpj.exe"
HIDDEN = {
    "file": SPOOFED,
    "note": "pay\u200b now\u2066\u2069",
    "tagged": "ok\U000e0041",
    "joined": "a\u2060b\ufeff",
}


@pytest.mark.parametrize(
    "char",
    [
        "\u202e",  # right-to-left override
        "\u202d",  # left-to-right override
        "\u2066",  # left-to-right isolate
        "\u200f",  # right-to-left mark
        "\u061c",  # Arabic letter mark
        "\u200b",  # zero-width space
        "\u200d",  # zero-width joiner
        "\u2060",  # word joiner
        "\ufeff",  # zero-width no-break space
        "\U000e0041",  # tag character
        "\u00ad",  # soft hyphen
        "\u0085",  # next line (C1 control, left as it is by JSON)
        "\u2028",  # line separator
        "\ue000",  # private use
        "\u034f",  # combining grapheme joiner
        "\u3164",  # Hangul filler
        "\ufe0f",  # variation selector
        "\U000e0100",  # variation selector supplement
    ],
)
def test_every_invisible_or_direction_changing_character_is_shown_as_its_escape(char):
    """The JSON shown holds the escape, never the character itself."""
    shown = visible.pretty({"value": f"a{char}b"})
    assert char not in shown and visible.escape(char) in shown


def test_letters_digits_emoji_and_a_typed_backslash_are_left_as_they_are():
    """Only hidden characters change: accented letters, CJK, an emoji and the text "\\u202e" a caller
    typed (a JSON backslash, so no escape can be forged) read as before."""
    value = {"a": "Grüße 世界 😀", "b": "\\u202e", "n": "two\nlines"}
    assert visible.pretty(value) == json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    assert visible.hidden_in(value) == []


def test_the_html_marks_each_escape_and_names_every_hidden_character_above():
    """Each escape is a titled <mark>; a note names U+202E and the rest; the text stays escaped HTML."""
    shown = str(visible.arguments_html({**HIDDEN, "html": "<script>x</script>"}))
    assert '<mark title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</mark>' in shown
    assert "\\udb40\\udc41" in shown and "U+E0041 TAG LATIN CAPITAL LETTER A" in shown
    assert "U+200B ZERO WIDTH SPACE" in shown.split("<pre>")[0]
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert not any(visible.hidden(char) for char in shown)


def _client_with(*codenames: str) -> Client:
    user = User.objects.create_user("reader", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def _held(arguments: dict[str, str]) -> ToolCall:
    tool = guarded_tool()
    return row_of(tools.execute(tool.tool_name, arguments, client=FakeClient(), actor="agent"))


@pytest.mark.parametrize("model", ["toolcallapproval", "toolcall"], ids=["approval-page", "calls-page"])
def test_the_approval_page_and_the_calls_page_show_the_escapes_not_the_characters(model):
    """An approver reading the call (on the approvals view or the ledger's) sees \\u202e marked
    where the override is, and no hidden character reaches the page's arguments."""
    call = _held(HIDDEN)
    client = _client_with("view_toolcall", "approve_toolcall", "view_toolcall_arguments")
    page = client.get(reverse(f"admin:nr_llm_{model}_change", args=[call.pk])).content.decode()
    assert '"invoice<mark title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</mark>gpj.exe"' in html.unescape(
        page
    ).replace("&quot;", '"')
    assert "Invisible or direction-changing characters, shown escaped and marked:" in page
    for char in "\u202e\u200b\u2066\u2069\u2060\ufeff\U000e0041":
        assert char not in page, hex(ord(char))
    # What is approved is what is stored: the digest shown binds the arguments unchanged.
    assert call.arguments_digest in page


def _mcp_call(*args: str) -> tuple[str, str, CommandError | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("mcp_call", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def test_mcp_call_shows_the_arguments_of_a_held_call_and_of_a_resumed_one_escaped():
    """Held for approval (exit 3) and resumed, mcp_call prints the recorded arguments with the
    override as \\u202e and names it; the character itself is never written."""
    guarded_tool()
    _, err, error = _mcp_call("mcp_guarded_echo", "--args", json.dumps({"text": SPOOFED}))
    assert error is not None and error.returncode == 3
    assert '"text": "invoice\\u202egpj.exe"' in err and "U+202E RIGHT-TO-LEFT OVERRIDE" in err
    assert "\u202e" not in err
    call = ToolCall.objects.get()
    tools.approve(call.pk, approver())
    _, err, _ = _mcp_call("--resume", str(call.pk))
    assert f"arguments of tool call {call.pk}" in err and '"invoice\\u202egpj.exe"' in err
    assert "\u202e" not in err
