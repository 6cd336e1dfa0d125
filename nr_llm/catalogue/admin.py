"""The catalogue's admin: tools, resources, resource templates and prompts.

Tools are listed per server, enabled in bulk, their changed definitions reviewed on their own
page, and tried from the admin (``trial.py``). Resources, templates and prompts are listed per
server, enabled one by one (a changed definition only from its own page, after reading it),
and tried.

Try reads a resource (a template once its variables are filled) or fills a prompt through the
site API (``nr_llm.resources.read``, ``nr_llm.prompts.get``): the trial is recorded in the
ledger under the operator and obeys the same gate. A URI is shown as text; where one becomes a
link, ``links.safe_href`` renders a dangerous scheme inert.

``TryQuestionsAdmin`` (the tools' admin builds on it): the URLs through which a tool's Try page
shows a server's question (elicitation) while its Try request runs, and posts the operator's
answer to the waiting call (trial_questions.py: through Django's cache).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from .. import admin_columns as columns
from .. import prompts, resources
from ..forms import McpToolForm, TryToolForm
from ..mcp import TemplateError, expand_template
from ..models import DEFINITION_CHANGED, FeatureKind, McpFeature, McpTool
from ..tools.offering import strict_reason
from . import elicit_form, pins, trial_questions
from . import trial as tool_trial
from .features import accept_feature_definition, disable_features, enable_features
from .links import safe_href


class TryFeatureForm(forms.Form):
    values = forms.CharField(
        label="Values (JSON object)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
        help_text='A template\'s variables, or a prompt\'s arguments, e.g. {"name": "Ann"}.',
    )

    def clean_values(self) -> dict[str, str]:
        raw = self.cleaned_data.get("values") or "{}"
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise forms.ValidationError("Not JSON.") from exc
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise forms.ValidationError("A JSON object of strings.")
        return value


#: Every field is shown and none edited: enabling is an action, reviewing a page of its own.
_SHOWN = (
    "server",
    "kind",
    "key",
    "name",
    "title",
    "description",
    "mime_type",
    "enabled",
    "state_column",
    "definition_column",
    "review_column",
)


@admin.register(McpFeature)
class McpFeatureAdmin(admin.ModelAdmin[McpFeature]):
    list_display = ["key_column", "kind", "server", "enabled", "state_column", "try_column"]
    list_filter = ["server", "kind", "enabled", "orphaned"]
    list_select_related = ["server"]
    search_fields = ["key", "name", "description"]
    actions = ["enable_selected", "disable_selected"]
    fields = _SHOWN
    readonly_fields = _SHOWN

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<path:object_id>/try/",
                self.admin_site.admin_view(self.try_view),
                name="nr_llm_mcpfeature_try",
            ),
            path(
                "<path:object_id>/accept/",
                self.admin_site.admin_view(self.accept_view),
                name="nr_llm_mcpfeature_accept",
            ),
            *super().get_urls(),
        ]

    @admin.display(description="URI, template or name", ordering="key")
    def key_column(self, obj: McpFeature) -> SafeString:
        return format_html('{}<div class="nr-llm-detail">{}</div>', obj.key, obj.description or obj.name)

    @admin.display(description="state")
    def state_column(self, obj: McpFeature) -> str:
        if obj.orphaned:
            return "orphaned: no longer offered by its server"
        if obj.awaiting_review:
            return "disabled: its definition changed; read it on its page and accept"
        return "offered" if obj.offered else "disabled"

    @admin.display(description="definition")
    def definition_column(self, obj: McpFeature) -> SafeString:
        return format_html("<pre>{}</pre>", json.dumps(obj.definition, indent=2, ensure_ascii=False))

    @admin.display(description="review")
    def review_column(self, obj: McpFeature) -> SafeString | str:
        if not obj.awaiting_review:
            return ""
        return format_html(
            "<p>Enabled before: <pre>{}</pre></p><form method='post' action='{}'>"
            "<input type='hidden' name='reviewed' value='{}'>"
            "<button type='submit' formmethod='post'>Accept this definition and enable</button></form>",
            json.dumps(obj.pinned_definition, indent=2, ensure_ascii=False),
            reverse("admin:nr_llm_mcpfeature_accept", args=[obj.pk]),
            obj.definition_fingerprint,
        )

    @admin.display(description="try")
    def try_column(self, obj: McpFeature) -> SafeString | str:
        if not obj.offered or not obj.server.enabled:
            return "enable it (and its server) to try it"
        return format_html('<a href="{}">Try</a>', reverse("admin:nr_llm_mcpfeature_try", args=[obj.pk]))

    @admin.action(description="Enable selected resources and prompts")
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[McpFeature]) -> None:
        count = enable_features(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} enabled (orphans and changed definitions are left for review).")

    @admin.action(description="Disable selected resources and prompts")
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[McpFeature]) -> None:
        self.message_user(request, f"{disable_features(queryset.values_list('pk', flat=True))} disabled.")

    def accept_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        feature = self.get_object(request, object_id)
        if feature is None:
            raise Http404("No such resource or prompt.")
        if request.method != "POST" or not self.has_change_permission(request, feature):
            raise PermissionDenied
        why = accept_feature_definition(feature.pk, request.POST.get("reviewed", ""))
        if why:
            self.message_user(request, f"Not enabled: {why}.", messages.WARNING)
        else:
            self.message_user(request, f"{feature.key} enabled with its new definition.")
        return HttpResponseRedirect(reverse("admin:nr_llm_mcpfeature_change", args=[feature.pk]))

    def try_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        feature = self.get_object(request, object_id)
        if feature is None:
            raise Http404("No such resource or prompt.")
        if not self.has_change_permission(request, feature):
            raise PermissionDenied
        form = TryFeatureForm(request.POST if request.method == "POST" else None)
        outcome: dict[str, Any] | None = None
        if form.is_bound and form.is_valid():
            outcome = _try(feature, form.cleaned_data["values"], request.user)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Try {feature.key}",
            "feature": feature,
            "form": form,
            "outcome": outcome,
            "href": safe_href(feature.key),
        }
        return TemplateResponse(request, "admin/nr_llm/mcpfeature/try.html", context)


def _try(feature: McpFeature, values: dict[str, str], user: object) -> dict[str, Any]:
    server = feature.server.identifier
    if feature.kind == FeatureKind.PROMPT:
        got = prompts.get(feature.key, values, server=server, actor=user, data_class_ceiling="secretAdjacent")
        text = got.text or json.dumps(got.messages, indent=2, ensure_ascii=False)
        return {"is_error": got.is_error, "status": got.status, "text": text}
    uri = feature.key
    if feature.kind == FeatureKind.TEMPLATE:
        try:
            uri = expand_template(feature.key, values)
        except TemplateError as exc:
            return {"is_error": True, "status": "refused", "text": f"The template cannot be filled: {exc}."}
    read = resources.read(uri, server=server, actor=user, data_class_ceiling="secretAdjacent")
    return {"is_error": read.is_error, "status": read.status, "text": read.text, "uri": uri}


def counts(server: Any) -> SafeString | str:
    """The server's imported resources, templates and prompts, linked to their list."""
    rows = list(McpFeature.objects.filter(server=server, orphaned=False).values_list("kind", "enabled"))
    if not rows:
        return ""
    total = {kind: sum(1 for k, _ in rows if k == kind) for kind in FeatureKind.values}
    enabled = sum(1 for _, on in rows if on)
    return format_html(
        '<div class="nr-llm-detail"><a href="{}">{} resources, {} templates, {} prompts</a>'
        " ({} enabled)</div>",
        reverse("admin:nr_llm_mcpfeature_changelist") + f"?server__id__exact={server.pk}",
        total["resource"],
        total["template"],
        total["prompt"],
        enabled,
    )


class TryQuestionsAdmin(admin.ModelAdmin[McpTool]):
    """A tool's Try page, questions included: the page polls ``try/question/`` while its Try
    request runs and posts the operator's answer to ``try/answer/`` (both need the right to
    change the tool, as Try does, and see only the operator's own trial)."""

    def question_urls(self) -> list[URLPattern]:
        return [
            path(
                "<path:object_id>/try/question/",
                self.admin_site.admin_view(self.question_view),
                name="nr_llm_mcptool_try_question",
            ),
            path(
                "<path:object_id>/try/answer/",
                self.admin_site.admin_view(self.answer_view),
                name="nr_llm_mcptool_try_answer",
            ),
        ]

    def _tool(self, request: HttpRequest, object_id: str) -> McpTool:
        tool = self.get_object(request, object_id)
        if tool is None:
            raise Http404("No such MCP tool.")
        if not self.has_change_permission(request, tool):
            raise PermissionDenied
        return tool

    def question_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The waiting question as a form to answer, or 204 while there is none."""
        tool = self._tool(request, object_id)
        trial = request.GET.get("trial", "")
        asked = trial_questions.question(trial, request.user.pk)
        if asked is None:
            return HttpResponse(status=204)
        return self._question(request, tool, trial, asked, elicit_form.answer_form(asked.schema))

    def answer_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        tool = self._tool(request, object_id)
        trial, action = request.POST.get("trial", ""), request.POST.get("action", "")
        asked = trial_questions.question(trial, request.user.pk)
        number = request.POST.get("number", "")
        if asked is None or str(asked.number) != number:
            return _answered(
                request, "gone", "The question is no longer waiting: the call went on without it."
            )
        content = None
        if action == "accept" and asked.mode == "form":
            form = elicit_form.answer_form(asked.schema, request.POST)
            if not form.is_valid():
                return self._question(request, tool, trial, asked, form, status=400)
            content = elicit_form.content_of(form)
        if not trial_questions.answer(trial, request.user.pk, asked.number, action, content):
            return _answered(
                request, "gone", "The question is no longer waiting: the call went on without it."
            )
        return _answered(request, action, f"Answer sent ({action}); the call goes on.")

    def _question(
        self,
        request: HttpRequest,
        tool: McpTool,
        trial: str,
        asked: trial_questions.Question,
        form: elicit_form.AnswerForm,
        status: int = 200,
    ) -> HttpResponse:
        context = {
            "question": asked,
            "form": form,
            "trial": trial,
            "answer_url": reverse("admin:nr_llm_mcptool_try_answer", args=[tool.pk]),
        }
        return TemplateResponse(request, "admin/nr_llm/mcptool/try_question.html", context, status=status)


def _answered(request: HttpRequest, outcome: str, text: str) -> HttpResponse:
    status = 410 if outcome == "gone" else 200
    context = {"outcome": outcome, "text": text}
    return TemplateResponse(request, "admin/nr_llm/mcptool/try_answered.html", context, status=status)


class AwaitingReviewFilter(admin.SimpleListFilter):
    title = "definition"
    parameter_name = "definition"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("changed", "Changed, awaiting review")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        chosen = self.value() == "changed"
        return queryset.filter(disabled_reason=DEFINITION_CHANGED) if chosen else queryset


STYLES = {"all": ["nr_llm/admin.css"]}


@admin.register(McpTool)
class McpToolAdmin(TryQuestionsAdmin):
    form = McpToolForm
    # Description and remote name are second lines of the first two columns: seven columns
    # would not fit a 1280 px screen beside the filters and the admin's navigation.
    list_display = ["name_column", "server_column", "enabled", "state_column", "try_column"]
    list_display_links = ["name_column"]
    list_filter = ["server", "enabled", "orphaned", AwaitingReviewFilter]
    list_select_related = ["server"]
    search_fields = ["tool_name", "remote_name", "description"]
    actions = ["enable_tools", "disable_tools"]
    fields = [
        "tool_name",
        "server",
        "remote_name",
        "definition_review",
        "enabled",
        "run_alone",
        "reviewed_fingerprint",
        "orphan_state",
        "try_state",
        "title",
        "description",
        "schema_column",
        "strict_column",
        "output_schema_column",
        "annotations_column",
        "created",
        "updated",
    ]
    readonly_fields = [
        "server",
        "tool_name",
        "remote_name",
        "title",
        "description",
        "schema_column",
        "strict_column",
        "output_schema_column",
        "annotations_column",
        "definition_review",
        "orphan_state",
        "try_state",
        "created",
        "updated",
    ]

    class Media:
        css = STYLES

    def get_urls(self) -> list[URLPattern]:
        # Before the inherited patterns: their "<object_id>/" would otherwise swallow "/try/".
        try_url = path(
            "<path:object_id>/try/",
            self.admin_site.admin_view(self.try_tool_view),
            name="nr_llm_mcptool_try",
        )
        return [try_url, *self.question_urls(), *super().get_urls()]

    def try_tool_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        tool = self.get_object(request, object_id)
        if tool is None:
            raise Http404("No such MCP tool.")
        # Running a tool acts on a remote system: the same right as changing the tool.
        if not self.has_change_permission(request, tool):
            raise PermissionDenied
        if refusal := _untryable(tool):
            self.message_user(request, f"Cannot try {tool.tool_name}: {refusal}.", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:nr_llm_mcptool_change", args=[tool.pk]))
        form = TryToolForm(request.POST if request.method == "POST" else None, schema=tool.input_schema)
        report = None
        if form.is_valid():
            # The page's script answers the server's questions during the call (answering=1).
            trial = request.POST.get("trial", "") if request.POST.get("answering") else ""
            responder = (
                trial_questions.TrialResponder(trial, request.user.pk, tool.server.budget_seconds)
                if trial
                else None
            )
            report = tool_trial.try_tool(
                tool, form.cleaned_data["arguments"], actor=request.user, responder=responder
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Try {tool.tool_name}",
            "tool": tool,
            "form": form,
            "report": report,
            "elapsed": f"{report.elapsed_seconds:.2f}" if report else "",
            "budget": f"{tool.server.budget_seconds:g}",
            "schema": columns.pretty_json(tool.input_schema),
            "trial": trial_questions.new_trial(),
        }
        return TemplateResponse(request, "admin/nr_llm/mcptool/try_tool.html", context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Tools come from a server's catalogue; one typed by hand would call nothing real.
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: McpTool | None = None) -> list[str]:
        # The bulk action's rule on the change form too: an orphan is not switched on.
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "enabled"] if obj is not None and obj.orphaned and not obj.enabled else fields

    @admin.display(description="tool · description", ordering="tool_name")
    def name_column(self, obj: McpTool) -> SafeString:
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>',
            columns.breakable(obj.tool_name),
            columns.clipped(obj.description, DESCRIPTION_CHARS) if obj.description else "no description",
        )

    @admin.display(description="server · remote name", ordering="server__name")
    def server_column(self, obj: McpTool) -> SafeString:
        # Not the foreign key itself: the admin keeps that on one line (class "nowrap"),
        # and a long server name would push the Try column under the filters. The
        # identifier is in the tool's name already.
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>', obj.server.name, columns.breakable(obj.remote_name)
        )

    @admin.display(description="orphaned", ordering="orphaned")
    def orphan_column(self, obj: McpTool) -> SafeString | str:
        if not obj.orphaned:
            return ""
        since = f"since {obj.orphaned_at:%Y-%m-%d %H:%M}" if obj.orphaned_at else "gone from its server"
        return format_html(
            '<strong class="nr-llm-warning" title="no longer in the server\'s catalogue">ORPHANED</strong>'
            '<div class="nr-llm-detail">{}</div>',
            since,
        )

    @admin.display(description="orphaned")
    def orphan_state(self, obj: McpTool) -> SafeString | str:
        # The change page answers the question in words; the list leaves the cell of a live tool empty.
        if not obj.orphaned:
            return "no: the server still offers it"
        since = f" since {obj.orphaned_at:%Y-%m-%d %H:%M}" if obj.orphaned_at else ""
        return format_html(
            '<strong class="nr-llm-warning">ORPHANED{}</strong>: no longer in the server\'s catalogue', since
        )

    @admin.display(description="try")
    def try_column(self, obj: McpTool) -> SafeString:
        refusal, hint = _why_not_tryable(obj)
        if refusal:
            # Not a bare "-": what stands in the way, the whole sentence on hover.
            return format_html(
                '<span class="nr-llm-quiet" title="{}">{}</span>', f"{refusal}. {hint}", _TRY_HINTS[refusal]
            )
        return format_html(
            '<a class="nr-llm-nowrap" href="{}">Try tool</a>',
            reverse("admin:nr_llm_mcptool_try", args=[obj.pk]),
        )

    @admin.display(description="try tool")
    def try_state(self, obj: McpTool) -> SafeString | str:
        refusal, hint = _why_not_tryable(obj)
        if refusal:
            return f"Not available: {refusal}. {hint}"
        return format_html('<a href="{}">Try tool</a>', reverse("admin:nr_llm_mcptool_try", args=[obj.pk]))

    @admin.display(description="input schema")
    def schema_column(self, obj: McpTool) -> SafeString:
        return columns.pretty_json(obj.input_schema)

    @admin.display(description="OpenAI strict mode")
    def strict_column(self, obj: McpTool) -> str:
        # The same verdict definitions(strict=True) reaches, so an operator sees why a tool is
        # offered non-strict without reading the log (escaped: the reason quotes remote names).
        reason = strict_reason(obj.input_schema)
        return f"not strict: {reason}" if reason else "strict (definitions(..., strict=True) offers it so)"

    @admin.display(description="remote annotations")
    def annotations_column(self, obj: McpTool) -> SafeString:
        return columns.pretty_json(obj.remote_annotations)

    def get_fields(self, request: HttpRequest, obj: McpTool | None = None) -> Any:
        # The change review only where there is one to read.
        fields = list(super().get_fields(request, obj))
        if obj is None or not obj.awaiting_review:
            fields.remove("definition_review")
        return fields

    def save_model(self, request: HttpRequest, obj: McpTool, form: Any, change: bool) -> None:
        # Only "enabled" is editable, and it is switched through the catalogue's service (under
        # the server's lock, re-pinning the definition), never by saving a row read earlier,
        # which could write back a definition an import has replaced meanwhile.
        if "enabled" not in form.changed_data:
            return
        if not obj.enabled:
            pins.disable_tools([obj.pk])
            return
        if refusal := pins.accept_definition(obj.pk, form.cleaned_data["reviewed_fingerprint"]):
            self.message_user(request, f"{obj.tool_name} was not enabled: {refusal}.", messages.ERROR)

    @admin.display(description="state", ordering="orphaned")
    def state_column(self, obj: McpTool) -> SafeString | str:
        if obj.awaiting_review:
            return format_html(
                '<strong class="nr-llm-warning" title="{}">DEFINITION CHANGED</strong>'
                '<div class="nr-llm-detail">disabled {}</div>',
                f"{DEFINITION_CHANGED}: open the tool to read what changed",
                f"{obj.disabled_at:%Y-%m-%d %H:%M}" if obj.disabled_at else "by an import",
            )
        return self.orphan_column(obj)

    @admin.display(description="definition changed")
    def definition_review(self, obj: McpTool) -> SafeString:
        """What the server changed since the tool was enabled: each part as enabled, beside it now."""
        old, new = pins.review(obj)
        parts = pins.changed_parts(old, new)
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            ((pins.PARTS[part], _shown(old.get(part)), _shown(new.get(part))) for part in parts),
        )
        when = f" on {obj.disabled_at:%Y-%m-%d %H:%M}" if obj.disabled_at else ""
        return format_html(
            '<p><strong class="nr-llm-warning">Disabled by an import{}: its {}.</strong> A model is not '
            "offered it until you accept the change: read it, then tick Enabled and save (the definition "
            "shown as now becomes the one enabled).</p>"
            '<table class="nr-llm-review"><thead><tr><th>part</th><th>as enabled</th><th>now</th></tr>'
            "</thead><tbody>{}</tbody></table>",
            when,
            DEFINITION_CHANGED,
            rows
            or format_html(
                '<tr><td colspan="3">{}</td></tr>', "no difference now: the server changed it back"
            ),
        )

    @admin.display(description="output schema")
    def output_schema_column(self, obj: McpTool) -> SafeString:
        return columns.pretty_json(obj.output_schema)

    @admin.action(description="Enable selected tools", permissions=["change"])
    def enable_tools(self, request: HttpRequest, queryset: QuerySet[McpTool]) -> None:
        # An orphan is gone from its server: enabling it would only offer a model a tool that
        # fails. A changed definition is accepted on the tool's own page, where it can be read.
        done = pins.enable_tools(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{done.count} tool(s) enabled.")
        if done.orphaned:
            self.message_user(
                request,
                f"{done.orphaned} orphaned tool(s) left disabled: they are gone from their server.",
                messages.WARNING,
            )
        if done.to_review:
            self.message_user(
                request,
                f"{len(done.to_review)} tool(s) left disabled because their definition changed since "
                f"they were enabled: {', '.join(done.to_review)}. Open each to read what changed and "
                "enable it there.",
                messages.WARNING,
            )

    @admin.action(description="Disable selected tools", permissions=["change"])
    def disable_tools(self, request: HttpRequest, queryset: QuerySet[McpTool]) -> None:
        done = pins.disable_tools(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{done.count} tool(s) disabled.")


def _shown(value: Any) -> SafeString:
    """One part of a definition for reading: text as text, JSON pretty-printed."""
    if isinstance(value, str):
        if not value:
            return SafeString("<em>empty</em>")
        return format_html('<div class="nr-llm-error-text">{}</div>', value)
    return columns.pretty_json(value if value is not None else {})


_ORPHANED = "it is orphaned (gone from its server's catalogue)"
_CHANGED = f"its {DEFINITION_CHANGED}"
_NOT_ENABLED = "it is not enabled"
_SERVER_DISABLED = "its server is not enabled"
#: What the Try column says instead of a link: short, the whole reason in its title.
_TRY_HINTS = {
    _ORPHANED: "orphaned",
    _CHANGED: "review the change",
    _NOT_ENABLED: "enable it first",
    _SERVER_DISABLED: "server disabled",
}
#: A description in the tool list: one line's worth; the page holds the rest.
DESCRIPTION_CHARS = 70


def _untryable(tool: McpTool) -> str:
    """Why ``tool`` cannot be tried, or "" when it can."""
    return _why_not_tryable(tool)[0]


def _why_not_tryable(tool: McpTool) -> tuple[str, str]:
    """(why ``tool`` cannot be tried, what the operator can do about it); ("", "") when it can."""
    if tool.orphaned:
        return (
            _ORPHANED,
            "Import the server's catalogue again; if the server offers it again, it can be tried.",
        )
    if tool.awaiting_review:
        return _CHANGED, "Read what changed on the tool's page; tick Enabled and save to accept it."
    if not tool.enabled:
        return _NOT_ENABLED, "A tool must be enabled to try it: tick Enabled and save."
    if not tool.server.enabled:
        return _SERVER_DISABLED, "Enable its MCP server first."
    return "", ""
