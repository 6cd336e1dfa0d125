"""The MCP server row: where a server is, how its credential travels, its budget and limits.

Persistence only: no network I/O here (the services beside it in this package). Registered
with the app through ``nr_llm.models``, which re-exports it (migrations and ``app_label`` stay
``nr_llm``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator, URLValidator
from django.db import models

from ..conf import conf
from ..vocabulary import (
    AuthPlacement,
    DataClass,
    ImportStatus,
    ImportTaskState,
    OAuthGrantType,
    OAuthMode,
    OAuthRegistration,
)
from . import credentials

identifier_validator = RegexValidator(
    r"^[a-z0-9_]{1,32}$",
    "Use 1 to 32 lowercase letters, digits or underscores; it becomes part of every imported tool's name.",
)
header_name_validator = RegexValidator(
    r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$", "Enter a valid HTTP header name, e.g. X-Api-Key."
)
env_name_validator = RegexValidator(
    credentials.ENV_NAME_RE.pattern, "Enter an environment variable name, e.g. MCP_DEMO_TOKEN."
)


#: What to do with a server this app cannot reach: it speaks MCP over Streamable HTTP only.
STDIO_HINT = (
    "nr-llm reaches MCP servers over Streamable HTTP (an http:// or https:// URL, often ending in "
    "/mcp). A server run as a command (stdio: npx ..., uvx ..., python ...) has no URL: expose it "
    "over Streamable HTTP through a bridge (an MCP proxy that runs the command and serves it over HTTP)."
)


class McpServer(models.Model):
    identifier = models.CharField(max_length=32, unique=True, validators=[identifier_validator])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    url = models.CharField(
        "URL",
        max_length=500,
        blank=True,
        validators=[URLValidator(schemes=["http", "https"], message="Enter an http:// or https:// URL.")],
    )
    auth_placement = models.CharField(
        "authentication", max_length=16, choices=AuthPlacement.choices, default=AuthPlacement.NONE
    )
    auth_header_name = models.CharField(
        "header name", max_length=64, blank=True, validators=[header_name_validator]
    )
    # The secret itself is never stored in clear text: either a Fernet token
    # (credentials.py) or the name of an environment variable that holds it.
    credential_ciphertext = models.TextField(blank=True, editable=False)
    credential_env = models.CharField(
        "credential environment variable",
        max_length=128,
        blank=True,
        validators=[env_name_validator],
        help_text="Alternative to storing the credential: the name of an environment variable that holds it.",
    )
    # OAuth 2.1 (auth_placement "oauth"): how to obtain a grant. The grant itself is kept
    # apart (authorization.models.OAuthGrantRecord), written only by the store.
    oauth_grant_type = models.CharField(
        "OAuth grant",
        max_length=32,
        choices=OAuthGrantType.choices,
        default=OAuthGrantType.AUTHORIZATION_CODE,
    )
    oauth_mode = models.CharField(
        "authorization mode",
        max_length=16,
        choices=OAuthMode.choices,
        default=OAuthMode.SHARED,
        help_text="Per user: each call acts with its actor's own grant; a user without one is sent "
        "to connect their account, and the server is not contacted.",
    )
    oauth_dpop = models.BooleanField(
        "DPoP-bound tokens",
        default=False,
        help_text="Bind tokens to a key of each grant's own (RFC 9449); the authorization server must "
        "support DPoP with ES256.",
    )
    oauth_registration = models.CharField(
        "client registration",
        max_length=32,
        choices=OAuthRegistration.choices,
        default=OAuthRegistration.DYNAMIC,
    )
    oauth_issuer = models.CharField(
        "authorization server (issuer)",
        max_length=500,
        blank=True,
        validators=[URLValidator(schemes=["http", "https"], message="Enter an http:// or https:// URL.")],
        help_text="For a pre-registered client: the issuer it is registered at, exactly as that "
        "authorization server's metadata names it. Its secret goes to no other.",
    )
    oauth_client_id = models.CharField(
        "client id", max_length=500, blank=True, help_text="For a pre-registered client only."
    )
    oauth_client_secret_ciphertext = models.TextField(blank=True, editable=False)
    oauth_private_key_ciphertext = models.TextField(blank=True, editable=False)
    oauth_key_id = models.CharField(
        "key id", max_length=200, blank=True, help_text="The kid of the private key, if the server wants one."
    )
    oauth_scopes = models.CharField(
        "scopes to request",
        max_length=1000,
        blank=True,
        help_text="Space-separated. Empty: what the server's challenge or metadata asks for.",
    )
    # Enterprise-managed authorization (SEP-990): the identity provider that exchanges the
    # user's ID token (from the NR_LLM_OAUTH_IDENTITY_TOKEN hook) for an ID-JAG.
    oauth_idp_token_endpoint = models.CharField(
        "identity provider token endpoint",
        max_length=500,
        blank=True,
        validators=[URLValidator(schemes=["http", "https"], message="Enter an http:// or https:// URL.")],
        help_text="Enterprise-managed only: where the user's ID token is exchanged for an ID-JAG (RFC 8693).",
    )
    oauth_idp_client_id = models.CharField(
        "client id at the identity provider",
        max_length=500,
        blank=True,
        help_text="Enterprise-managed only: this site's client at the identity provider.",
    )
    oauth_idp_client_secret_ciphertext = models.TextField(blank=True, editable=False)
    # Workload identity federation (SEP-1933): where the platform mounts the workload's JWT.
    oauth_assertion_file = models.CharField(
        "workload token file",
        max_length=500,
        blank=True,
        help_text="Workload identity only: the file the platform mounts the JWT in (read afresh each time).",
    )
    oauth_assertion_env = models.CharField(
        "workload token environment variable",
        max_length=128,
        blank=True,
        validators=[env_name_validator],
        help_text="Workload identity only: the environment variable holding the JWT, instead of a file.",
    )
    # A per-user server has no shared grant: the catalogue is imported as one named user.
    catalogue_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="imports act as",
        help_text="Per user only: the user whose own grant imports the catalogue (usually the "
        "operator, once connected).",
    )
    data_class = models.CharField(
        max_length=32,
        choices=DataClass.choices,
        blank=True,
        help_text="What data this server may see. Imports are refused until it is declared.",
    )
    requires_approval = models.BooleanField(default=True)
    enabled = models.BooleanField(default=False)
    operation_timeout = models.PositiveIntegerField(
        "operation budget (seconds)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="One budget for a whole MCP operation; empty uses NR_LLM_MCP_OPERATION_TIMEOUT.",
    )
    # A model's turn (tools.execute_many): how its calls to this server share it.
    max_concurrent_calls = models.PositiveSmallIntegerField(
        "calls at once",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Calls to this server running at the same time, across the whole site (all "
        "turns and processes); empty: no site-wide cap, and a turn's own bound "
        "NR_LLM_TOOL_CONCURRENCY_PER_SERVER.",
    )
    run_writes_alone = models.BooleanField(
        "run tools that may write alone",
        default=False,
        help_text="Tools this server does not annotate read-only (readOnlyHint) run after a turn's "
        "other calls, one at a time, and across the site never beside another call of this server.",
    )
    # A long-lived connection per watched server (manage.py mcp_watch), so it is opt-in.
    watch_changes = models.BooleanField(
        "watch for changes",
        default=False,
        help_text="Keep a connection open (manage.py mcp_watch) on which the server announces "
        "changes to its tools, and re-import when it does; a changed enabled tool is disabled "
        "for review, as on a manual import.",
    )

    # Observed, never edited by an operator.
    import_status = models.CharField(
        max_length=16, choices=ImportStatus.choices, default=ImportStatus.NEVER_IMPORTED, editable=False
    )
    import_error = models.TextField(blank=True, editable=False)
    last_imported = models.DateTimeField(null=True, blank=True, editable=False)
    tool_count = models.PositiveIntegerField(default=0, editable=False)
    last_contact = models.DateTimeField(null=True, blank=True, editable=False)
    last_latency_ms = models.PositiveIntegerField("last latency (ms)", null=True, blank=True, editable=False)
    # Where the admin's latest import task is; the token tells that task's writes apart
    # from an older task's, so an earlier import finishing never clears a newer one's state.
    import_task_state = models.CharField(
        max_length=16, choices=ImportTaskState.choices, default=ImportTaskState.IDLE, editable=False
    )
    import_task_since = models.DateTimeField(null=True, blank=True, editable=False)
    import_task_token = models.CharField(max_length=32, blank=True, editable=False)

    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "identifier"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return f"{self.name} ({self.identifier})"

    def clean(self) -> None:
        super().clean()
        url = self.url.strip()
        if url and (urlsplit(url).scheme.lower() == "stdio" or "://" not in url):
            # A newcomer pastes a stdio server's command (npx ..., uvx ..., stdio://...): say
            # what this app can reach instead of only that the URL is not one.
            raise ValidationError({"url": STDIO_HINT})
        if self.auth_placement == AuthPlacement.HEADER and not self.auth_header_name:
            raise ValidationError({"auth_header_name": "Name the header that carries the credential."})
        if self.auth_placement == AuthPlacement.OAUTH:
            self._clean_oauth()
        if self.credential_ciphertext and self.credential_env:
            raise ValidationError(
                {"credential_env": "Use either a stored credential or an environment variable, not both."}
            )

    def _clean_oauth(self) -> None:
        if self.oauth_registration == OAuthRegistration.PREREGISTERED and not self.oauth_client_id:
            raise ValidationError({"oauth_client_id": "A pre-registered client needs its client id."})
        if self.oauth_registration == OAuthRegistration.PREREGISTERED and not self.oauth_issuer:
            raise ValidationError(
                {
                    "oauth_issuer": "A pre-registered client needs the authorization server (issuer) it is "
                    "registered at: its secret is sent to that server only."
                }
            )
        if urlsplit(self.oauth_issuer).query or urlsplit(self.oauth_issuer).fragment:
            raise ValidationError({"oauth_issuer": "An issuer has no query or fragment (RFC 8414)."})
        if (
            self.oauth_registration == OAuthRegistration.METADATA_DOCUMENT
            and self.oauth_grant_type != OAuthGrantType.AUTHORIZATION_CODE
        ):
            raise ValidationError(
                {"oauth_registration": "A client ID metadata document is for the authorization code grant."}
            )
        code_grant = self.oauth_grant_type == OAuthGrantType.AUTHORIZATION_CODE
        enterprise = self.oauth_grant_type == OAuthGrantType.ENTERPRISE
        if self.oauth_mode == OAuthMode.PER_USER and not (code_grant or enterprise):
            raise ValidationError(
                {
                    "oauth_mode": "Each user acts as themselves: that needs the authorization code or "
                    "enterprise-managed authorization."
                }
            )
        self._clean_federation()
        if (
            self.oauth_grant_type == OAuthGrantType.CLIENT_CREDENTIALS
            and self.oauth_registration == OAuthRegistration.PREREGISTERED
            and not (self.oauth_client_secret_ciphertext or self.oauth_private_key_ciphertext)
        ):
            raise ValidationError(
                {"oauth_client_id": "Client credentials need the client's secret or private key."}
            )

    def _clean_federation(self) -> None:
        if self.oauth_grant_type == OAuthGrantType.ENTERPRISE:
            if self.oauth_mode != OAuthMode.PER_USER:
                raise ValidationError(
                    {"oauth_mode": "Enterprise-managed authorization acts as each user: choose per user."}
                )
            if not self.oauth_idp_token_endpoint or not self.oauth_idp_client_id:
                raise ValidationError(
                    {
                        "oauth_idp_token_endpoint": "Enterprise-managed authorization needs the identity "
                        "provider's token endpoint and this site's client id there."
                    }
                )
        if self.oauth_grant_type == OAuthGrantType.WORKLOAD and (
            bool(self.oauth_assertion_file) == bool(self.oauth_assertion_env)
        ):
            raise ValidationError(
                {
                    "oauth_assertion_file": "Workload identity needs exactly one of the token file and "
                    "the environment variable."
                }
            )

    @property
    def uses_oauth(self) -> bool:
        return self.auth_placement == AuthPlacement.OAUTH

    @property
    def per_user(self) -> bool:
        """Whether each call acts with its actor's own grant (an OAuth server in per-user mode)."""
        return self.uses_oauth and self.oauth_mode == OAuthMode.PER_USER

    @property
    def budget_seconds(self) -> float:
        """This server's operation budget: its own override, else the installation's."""
        return float(self.operation_timeout) if self.operation_timeout else conf.MCP_OPERATION_TIMEOUT

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_ciphertext or self.credential_env)

    def set_credential(self, secret: str) -> None:
        self.credential_ciphertext = credentials.encrypt(secret)
        self.credential_env = ""

    def clear_credential(self) -> None:
        self.credential_ciphertext = ""
        self.credential_env = ""

    def resolve_credential(self) -> str | None:
        """The secret in clear text, or None when none is configured.

        Raises ``CredentialUnavailable`` when one is configured but cannot be read, so
        the caller fails closed instead of calling the server unauthenticated.
        """
        if self.credential_ciphertext:
            return credentials.decrypt(self.credential_ciphertext)
        if self.credential_env:
            return credentials.from_environment(self.credential_env)
        return None
