"""The admin of resources, resource templates and prompts: listed per server, enabled one by
one (a changed definition only from its own page, after reading it), and tried.

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
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .. import prompts, resources
from ..mcp.protocol import templates
from ..models import FeatureKind, McpFeature, McpTool
from . import elicit_form, trial_questions
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
            uri = templates.expand(feature.key, values)
        except templates.TemplateError as exc:
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
