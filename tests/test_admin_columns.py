"""The server changelist's columns as functions of a row and a fixed clock."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib import messages

from nr_llm import admin_columns as columns
from nr_llm.catalogue import ChangedDefinition, ImportReport
from nr_llm.mcp import ConnectionReport
from nr_llm.tasks import ImportStart

NOW = datetime(2026, 5, 6, 12, 0, 0, tzinfo=UTC)


def test_last_contact_reads_as_age_and_latency():
    """A contact three minutes before now with 42 ms reads "3 minutes ago · 42 ms"."""
    assert columns.last_contact(NOW - timedelta(minutes=3), 42, NOW) == "3\xa0minutes ago · 42 ms"


def test_last_contact_before_any_success_reads_never():
    """A server never contacted successfully says so instead of showing an empty cell."""
    assert columns.last_contact(None, None, NOW) == "never"


def test_last_contact_within_a_minute_or_from_a_clock_ahead_reads_just_now():
    """Under a minute, or slightly in the future (clock skew), reads "just now", not "0 minutes ago"."""
    assert columns.last_contact(NOW - timedelta(seconds=59), 7, NOW) == "just now · 7 ms"
    assert columns.last_contact(NOW + timedelta(seconds=5), 7, NOW) == "just now · 7 ms"
    assert columns.last_contact(NOW - timedelta(seconds=60), 7, NOW) == "1\xa0minute ago · 7 ms"


@pytest.mark.parametrize(
    ("stored", "header", "expected"),
    [
        ("none", "", "None"),
        ("bearer", "", "Authorization: Bearer"),
        ("header", "X-Api-Key", "Named header (X-Api-Key)"),
    ],
)
def test_authentication_shows_the_configured_placement(stored, header, expected):
    """Known placements read as their labels; a named header also names the header."""
    assert columns.authentication(stored, header) == expected


def test_unknown_authentication_value_is_shown_verbatim_escaped_and_flagged():
    """A stored value this version does not know is shown as stored, escaped, with a warning mark."""
    html = columns.authentication("oauth2<x>", "")
    assert "unknown: oauth2&lt;x&gt;" in html
    assert 'class="nr-llm-warning"' in html


def test_undeclared_data_class_is_a_warning():
    """No declared data class reads as a warning that imports are refused."""
    html = columns.data_class("")
    assert "undeclared: imports refused" in html
    assert "nr-llm-warning" in html
    assert columns.data_class("sourceCode") == "Source code"


def test_tools_counts_enabled_total_and_orphans():
    """Tools read "enabled / total enabled", with orphans counted only when there are any."""
    assert columns.tools(2, 5, 0) == "2 / 5 enabled"
    assert columns.tools(2, 5, 1) == "2 / 5 enabled, 1 orphaned"


def test_tools_before_a_first_import_say_so():
    """No tools and never imported reads "0 tools (not imported yet)"; an import that found none, 0 / 0."""
    assert columns.tools(0, 0, 0, imported=False) == "0 tools (not imported yet)"
    assert columns.tools(0, 0, 0, imported=True) == "0 / 0 enabled"


def test_breakable_names_break_only_after_underscores_and_hyphens():
    """A name gets <wbr> after each "_" and "-" and nowhere else, and is escaped."""
    assert columns.breakable("mcp_protected_admin-report") == "mcp_<wbr>protected_<wbr>admin-<wbr>report"
    assert columns.breakable("a<b>") == "a&lt;b&gt;"


def test_clipped_text_is_one_line_with_the_longer_text_as_its_title():
    """Whitespace collapses; the cell clips at the limit, the title at TITLE_CHARS; both escaped."""
    html = columns.clipped("line one\nline <two> " + "x" * 600, 20)
    assert html.startswith('<span title="line one line &lt;two&gt; xxx')
    assert html.endswith(">line one line &lt;two&gt;…</span>")
    title = html.split('"')[1]
    assert len(title.replace("&lt;", "<").replace("&gt;", ">")) == columns.TITLE_CHARS


def test_last_import_shows_status_and_age():
    """The import column joins the status label and how long ago it ran."""
    assert columns.last_import("never_imported", None, NOW) == "Never imported"
    assert columns.last_import("partial", NOW - timedelta(hours=2), NOW) == "Partial · 2\xa0hours ago"


def test_error_preview_is_truncated_and_on_one_line():
    """A long multi-line error is collapsed to one line and clipped with an ellipsis."""
    preview = columns.error_preview("first line\nsecond " + "x" * 200)
    assert "\n" not in preview
    assert len(preview) == columns.ERROR_PREVIEW_CHARS
    assert preview.startswith("first line second x")
    assert preview.endswith("…")


def test_connection_summary_names_latency_protocol_and_server():
    """A reachable server's line names latency, the protocol revision chosen, name and version."""
    report = ConnectionReport(
        reachable=True,
        latency_ms=42,
        protocol_version="2025-06-18",
        server_name="peer",
        server_version="1.2.3",
    )
    assert columns.connection_summary("demo", report) == (
        "Connection to demo: reachable in 42 ms · protocol 2025-06-18 · server “peer” version 1.2.3"
    )


@pytest.mark.parametrize(
    ("era", "version", "shown"),
    [
        ("modern", "2026-07-28", "protocol 2026-07-28 (no session, server/discover)"),
        ("handshake", "2025-11-25", "protocol 2025-11-25 (initialize handshake)"),
    ],
)
def test_connection_summary_names_the_era(era, version, shown):
    """The line says which era the server was reached in, beside the revision."""
    report = ConnectionReport(reachable=True, latency_ms=1, protocol_version=version, era=era)
    assert columns.connection_summary("demo", report) == f"Connection to demo: reachable in 1 ms · {shown}"


def test_import_task_reads_queued_running_or_nothing():
    """Queued and running say so with their age; an idle server's cell leaves it to the status."""
    assert (
        columns.import_task("queued", NOW - timedelta(minutes=3), 20, NOW) == "Import queued 3\xa0minutes ago"
    )
    assert (
        columns.import_task("running", NOW - timedelta(seconds=5), 20, NOW)
        == "Import running, started just now"
    )
    assert columns.import_task("idle", NOW, 20, NOW) == ""


def test_a_run_past_its_budget_reads_as_stalled_with_what_to_do():
    """A run older than its budget allows is flagged: its worker probably stopped; import again."""
    html = columns.import_task("running", NOW - timedelta(minutes=12), 20, NOW)
    assert "nr-llm-warning" in html
    assert (
        "Import stalled: started 12\xa0minutes ago, longer than its 20 s budget allows; "
        "its worker has probably stopped. Import again."
    ) in html


def test_connection_names_the_transport_and_the_authentication():
    """One line: the transport, then the authentication in words."""
    assert columns.connection("none", "") == "Streamable HTTP, no authentication"
    assert columns.connection("header", "X-Api-Key") == "Streamable HTTP, Named header (X-Api-Key)"


def test_the_import_message_names_each_tool_disabled_for_a_changed_definition():
    """A run that disabled changed tools is a warning naming each tool and the parts that changed."""
    report = ImportReport(
        "docs", 3, 0, 0, (), changed=(ChangedDefinition("mcp_docs_search", ("description", "inputSchema")),)
    )
    text, level = columns.import_message(ImportStart("docs", "t1", "ran", report=report))
    assert level == messages.WARNING
    assert text == (
        "Import of docs ran: 3 imported, 0 skipped, 0 orphaned. New tools start disabled: enable them one "
        "by one under MCP tools. Disabled because their definition changed since they were enabled: "
        "mcp_docs_search (description, input schema). Open each under MCP tools, read what changed, and "
        "enable it again if it is still what you want."
    )
