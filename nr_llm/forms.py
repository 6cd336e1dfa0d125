"""Admin forms. The credential is write-only: it is never rendered back, not even masked."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from .models import McpServer, McpTool
from .servers import credentials
from .tools.arguments import argument_problems, argument_template


class WriteOnlyTextarea(forms.Textarea):
    """A textarea that never renders a value back (a PEM key re-shown after an error is a leak)."""

    def format_value(self, value: Any) -> None:
        return None


def private_key_problem(pem: str) -> str:
    """Why ``pem`` cannot sign a client assertion, or "" (the message never quotes the key)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        return "This is not an unencrypted PEM private key."
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return "Use an EC (P-256) or RSA key."
    return ""


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

    new_oauth_client_secret = forms.CharField(
        label="Client secret",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only. A pre-registered client's secret; empty keeps the stored one.",
    )
    new_oauth_private_key = forms.CharField(
        label="Private key (PEM)",
        required=False,
        strip=True,
        widget=WriteOnlyTextarea(attrs={"rows": 4, "cols": 64, "autocomplete": "off"}),
        help_text="Write-only. For private_key_jwt (ES256/RS256) instead of a secret; empty keeps it.",
    )
    clear_oauth_client_secret = forms.BooleanField(
        label="Clear the stored client secret and key", required=False
    )
    new_oauth_idp_client_secret = forms.CharField(
        label="Client secret at the identity provider",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only. Enterprise-managed only, if the identity provider wants one; empty keeps it.",
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
            "max_concurrent_calls",
            "run_writes_alone",
            "auth_placement",
            "auth_header_name",
            "credential_env",
            "oauth_grant_type",
            "oauth_mode",
            "oauth_dpop",
            "oauth_registration",
            "oauth_issuer",
            "oauth_client_id",
            "oauth_key_id",
            "oauth_scopes",
            "oauth_idp_token_endpoint",
            "oauth_idp_client_id",
            "oauth_assertion_file",
            "oauth_assertion_env",
            "catalogue_user",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only meaningful for OAuth: a form (or script) that leaves them out keeps the defaults.
        # A view-only operator's form has neither (every field is read-only there).
        for name in ("oauth_grant_type", "oauth_registration", "oauth_mode"):
            if name in self.fields:
                self.fields[name].required = False

    def clean_oauth_grant_type(self) -> str:
        return str(self.cleaned_data.get("oauth_grant_type") or self.instance.oauth_grant_type)

    def clean_oauth_mode(self) -> str:
        return str(self.cleaned_data.get("oauth_mode") or self.instance.oauth_mode)

    def clean_oauth_registration(self) -> str:
        return str(self.cleaned_data.get("oauth_registration") or self.instance.oauth_registration)

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
        self._apply_oauth_secrets(cleaned)
        return cleaned

    def _apply_oauth_secrets(self, cleaned: dict[str, Any]) -> None:
        secret, key = cleaned.get("new_oauth_client_secret"), cleaned.get("new_oauth_private_key")
        if cleaned.get("clear_oauth_client_secret"):
            if secret or key:
                raise forms.ValidationError(
                    "Either replace the client secret or key, or clear them, not both."
                )
            self.instance.oauth_client_secret_ciphertext = ""
            self.instance.oauth_private_key_ciphertext = ""
            return
        if key:
            if problem := private_key_problem(key):
                self.add_error("new_oauth_private_key", problem)
                return
            self.instance.oauth_private_key_ciphertext = credentials.encrypt(key)
        if secret:
            self.instance.oauth_client_secret_ciphertext = credentials.encrypt(secret)
        if idp_secret := cleaned.get("new_oauth_idp_client_secret"):
            self.instance.oauth_idp_client_secret_ciphertext = credentials.encrypt(idp_secret)


class McpToolForm(forms.ModelForm[McpTool]):
    """The tool's one editable switch, and the fingerprint of the definition its page showed."""

    # Enabling accepts the definition the operator read, not one an import stored since.
    reviewed_fingerprint = forms.CharField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = McpTool
        fields = ["enabled", "run_alone"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reviewed_fingerprint"].initial = self.instance.definition_fingerprint

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "enabled" in self.changed_data and cleaned.get("enabled"):
            current = McpTool.objects.filter(pk=self.instance.pk).values_list(
                "definition_fingerprint", flat=True
            )
            if list(current) != [cleaned.get("reviewed_fingerprint", "")]:
                raise forms.ValidationError(
                    "An import changed this tool's definition while the page was open: read it again below."
                )
        return cleaned


class TryToolForm(forms.Form):
    """JSON arguments for one tool call, checked against the tool's stored schema."""

    MIN_ROWS, MAX_ROWS = 4, 24

    arguments = forms.CharField(
        label="Arguments (JSON object)",
        strip=False,
        widget=forms.Textarea(attrs={"cols": 60, "spellcheck": "false", "class": "vLargeTextField"}),
    )

    def __init__(self, *args: Any, schema: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = schema
        # Start from what the schema requires, typed, rather than from "{}".
        template = argument_template(schema)
        self.fields["arguments"].initial = (
            json.dumps(template, indent=2, ensure_ascii=False) if template else "{}"
        )
        # Room for the template, a line for each optional property an operator may add, one spare.
        properties = schema.get("properties")
        optional = len(set(properties) - set(template)) if isinstance(properties, dict) else 0
        wanted = len(self.fields["arguments"].initial.splitlines()) + optional + 1
        self.fields["arguments"].widget.attrs["rows"] = max(self.MIN_ROWS, min(self.MAX_ROWS, wanted))

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
