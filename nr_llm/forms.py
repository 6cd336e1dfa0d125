"""Admin forms. The credential is write-only: it is never rendered back, not even masked."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from .arguments import argument_problems
from .models import McpServer


class McpServerForm(forms.ModelForm[McpServer]):
    new_credential = forms.CharField(
        label="Credential",
        required=False,
        strip=True,
        # render_value=False: a bound form re-rendered after a validation error must
        # not echo the secret back into the page either.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only. Enter a value to set or replace the stored credential; empty keeps it.",
    )
    clear_credential = forms.BooleanField(
        label="Clear the stored credential", required=False, help_text="Removes the stored secret."
    )

    class Meta:
        model = McpServer
        fields = [
            "identifier",
            "name",
            "description",
            "url",
            "enabled",
            "data_class",
            "requires_approval",
            "operation_timeout",
            "auth_placement",
            "auth_header_name",
            "credential_env",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("new_credential") and cleaned.get("clear_credential"):
            raise forms.ValidationError("Either replace the credential or clear it, not both.")
        if cleaned.get("new_credential") and cleaned.get("credential_env"):
            self.add_error("credential_env", "Use either a stored credential or an environment variable.")
        # Applied here, before the model's own validation runs (ModelForm._post_clean),
        # so McpServer.clean() judges the row as it will be saved.
        if cleaned.get("clear_credential"):
            self.instance.credential_ciphertext = ""
        elif secret := cleaned.get("new_credential"):
            self.instance.set_credential(secret)
        return cleaned


class TryToolForm(forms.Form):
    """JSON arguments for one tool call, checked against the tool's stored schema."""

    arguments = forms.CharField(
        label="Arguments (JSON object)",
        initial="{}",
        strip=False,
        widget=forms.Textarea(
            attrs={"rows": 8, "cols": 80, "spellcheck": "false", "class": "vLargeTextField"}
        ),
    )

    def __init__(self, *args: Any, schema: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = schema

    def clean_arguments(self) -> dict[str, Any]:
        raw: str = self.cleaned_data["arguments"]
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"This is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            ) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("The arguments must be a JSON object, e.g. {}.")
        if problems := argument_problems(self.schema, value):
            raise forms.ValidationError(problems)
        return value
