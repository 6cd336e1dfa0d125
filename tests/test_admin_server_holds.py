"""A server saved so that it cannot be used yet says why, on save and in the changelist."""

import pytest
from django.urls import reverse

from nr_llm.models import McpServer
from nr_llm.servers import readiness

from .admin_clients import messages_of
from .factories import McpServerFactory

pytestmark = pytest.mark.django_db
ADD = reverse("admin:nr_llm_mcpserver_add")
CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")


def _add(admin_client, **fields):
    data = {
        "identifier": "wiki",
        "name": "Wiki",
        "url": "https://wiki.example/mcp",
        "auth_placement": "none",
        "requires_approval": "on",
        **fields,
    }
    response = admin_client.post(ADD, {key: value for key, value in data.items() if value != ""}, follow=True)
    assert response.status_code == 200
    assert McpServer.objects.filter(identifier="wiki").exists(), response.content.decode()[:3000]
    return messages_of(response)


def test_saving_without_a_data_class_warns_that_imports_will_refuse_it(admin_client):
    """Added with no data class (and enabled): saved, and a warning says an import refuses it and why."""
    shown = _add(admin_client, enabled="on", data_class="")
    warnings = [text for level, text in shown if level == "warning"]
    assert warnings == [
        "Saved wiki, but no data class is declared, so an import (here or manage.py mcp_import) refuses "
        "it and none of its tools is offered; declare what data it may see (its data class, under Policy)."
    ]
    assert any("was added successfully" in text for _, text in shown)


def test_saving_it_disabled_warns_that_its_tools_are_not_offered(admin_client):
    """Added disabled (the default) with a data class: one warning, about being disabled."""
    shown = _add(admin_client, data_class="publicContent")
    warnings = [text for level, text in shown if level == "warning"]
    assert len(warnings) == 1
    assert warnings[0].startswith("Saved wiki, but it is disabled, so manage.py mcp_import --all skips it")


def test_a_server_ready_for_use_saves_without_a_warning(admin_client):
    """Enabled with a data class: no warning at all."""
    shown = _add(admin_client, enabled="on", data_class="publicContent")
    assert [level for level, _ in shown] == ["success"]


def test_the_changelist_flags_what_holds_each_server_with_the_reason_on_hover(admin_client):
    """The server column flags a missing data class and a disabled server; a ready one has no flag."""
    McpServerFactory.create(identifier="nodc", name="No class", data_class="", enabled=True)
    McpServerFactory.create(identifier="off", name="Switched off", enabled=False)
    McpServerFactory.create(identifier="ready", name="Ready")
    page = admin_client.get(CHANGELIST).content.decode()
    cells = {
        name: page.split(f"{name}<div", 1)[1].split("</th>", 1)[0]
        for name in ("No class", "Switched off", "Ready")
    }
    assert "no data class: imports refused" in cells["No class"]
    assert "disabled" not in cells["No class"]
    assert "disabled: tools not offered" in cells["Switched off"]
    assert 'title="it is disabled, so manage.py mcp_import --all skips it' in cells["Switched off"]
    assert "nr-llm-warning" not in cells["Ready"]


def test_holds_lists_both_reasons_in_the_order_an_operator_fixes_them():
    """No data class first (it blocks the import), then disabled; nothing for a ready server."""
    assert [hold.flag for hold in readiness.holds(False, "")] == [
        "no data class: imports refused",
        "disabled: tools not offered",
    ]
    assert readiness.holds(True, "sourceCode") == ()
