"""Create or update MCP servers from configuration: a mapping per server, or a JSON/TOML file.

Idempotent: a server is found by its identifier; only the fields a configuration names are
set, the others keep what an operator or an earlier run chose; nothing is written when nothing
differs. Validation is the admin's own (``McpServerForm``), so a value the admin refuses is
refused here with the same words, and nothing of the run is written.

Credentials never come as literals (they would sit in shell history, the process list or a
file in the repository): ``credential_env`` names the environment variable the site's processes
read at every call; an OAuth client secret or private key is read from a named variable when
this runs, and stored encrypted.

No network I/O here: ``import`` runs the catalogue service after the configuration is committed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from django.db import IntegrityError, transaction
from django.forms.models import model_to_dict

from .. import catalogue
from ..catalogue import ImportReport
from ..forms import McpServerForm
from ..models import McpServer, McpTool
from . import credentials, readiness

#: The fields a configuration may set, as the model (and the admin's form) names them.
FIELDS = tuple(name for name in McpServerForm.Meta.fields if name != "identifier")
BOOLEAN_FIELDS = frozenset({"enabled", "requires_approval"})
#: Read from the named environment variable when this runs, stored encrypted (the form's fields).
SECRET_FROM_ENV = {
    "oauth_client_secret_env": "new_oauth_client_secret",
    "oauth_private_key_env": "new_oauth_private_key",
}
#: The form's write-only secret fields, and the column holding each one's ciphertext.
CIPHERTEXT = {
    "new_oauth_client_secret": "oauth_client_secret_ciphertext",
    "new_oauth_private_key": "oauth_private_key_ciphertext",
}
#: Keys that would carry a secret itself: refused, whatever their value.
LITERAL_SECRETS = frozenset(
    {"credential", "secret", "token", "password", "api_key", "oauth_client_secret", "oauth_private_key"}
)
ACTIONS = frozenset({"import", "enable_tools"})


class ConfigurationError(Exception):
    """A configuration that cannot be applied; nothing of the run was written. Never holds a secret."""


@dataclass(frozen=True)
class ServerSpec:
    """One server's wanted state: the fields named, and what to do after it is saved."""

    identifier: str
    values: Mapping[str, Any] = field(default_factory=dict)
    #: Form field (``new_oauth_client_secret``...) -> the environment variable holding its value.
    secrets_from: Mapping[str, str] = field(default_factory=dict)
    import_catalogue: bool = False
    enable_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerReport:
    """What configuring one server did (or, in a dry run, would do)."""

    identifier: str
    action: Literal["created", "updated", "unchanged"]
    #: The names of the fields that were (would be) set; never their values.
    changed: tuple[str, ...]
    dry_run: bool
    #: Why the server is not in use yet (readiness.Hold.why), after this run.
    holds: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    imported: ImportReport | None = None
    #: Tools named to be enabled that are enabled now (already, or by this run).
    enabled_tools: tuple[str, ...] = ()
    #: "name: why" for every named tool left disabled.
    not_enabled: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return (self.imported is None or self.imported.ok) and not self.not_enabled


Importer = Callable[[McpServer], ImportReport]


def spec_from_mapping(entry: Mapping[str, Any]) -> ServerSpec:
    """A ``ServerSpec`` from one server's mapping (a file's entry, or the command's flags)."""
    if not isinstance(entry, Mapping):
        raise ConfigurationError("each server must be a table (TOML) or an object (JSON)")
    identifier = entry.get("identifier")
    if not isinstance(identifier, str) or not identifier:
        raise ConfigurationError('each server needs its identifier, e.g. identifier = "orders"')
    where = f"server {identifier!r}"
    if literal := sorted(LITERAL_SECRETS & set(entry)):
        raise ConfigurationError(
            f"{where}: {', '.join(literal)} would be a credential written out in the configuration; "
            "a credential is never taken as a literal (it would sit in shell history, the process list "
            "or a file in the repository): put it in an environment variable and name that variable "
            "(credential_env, oauth_client_secret_env, oauth_private_key_env)"
        )
    known = {"identifier", *FIELDS, *SECRET_FROM_ENV, *ACTIONS}
    if unknown := sorted(set(entry) - known):
        raise ConfigurationError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    values: dict[str, Any] = {}
    for name in FIELDS:
        if name in entry:
            values[name] = _checked(where, name, entry[name])
    secrets_from = {}
    for key, form_field in SECRET_FROM_ENV.items():
        if key in entry:
            secrets_from[form_field] = _env_name(where, key, entry[key])
    if "credential_env" in values and values["credential_env"]:
        _env_name(where, "credential_env", values["credential_env"])
    enable = entry.get("enable_tools", [])
    if not isinstance(enable, list) or not all(isinstance(name, str) and name for name in enable):
        raise ConfigurationError(f"{where}: enable_tools must be a list of tool names")
    run_import = entry.get("import", False)
    if not isinstance(run_import, bool):
        raise ConfigurationError(f"{where}: import must be true or false")
    return ServerSpec(identifier, values, secrets_from, run_import, tuple(enable))


def _checked(where: str, name: str, value: Any) -> Any:
    if name in BOOLEAN_FIELDS:
        if not isinstance(value, bool):
            raise ConfigurationError(f"{where}: {name} must be true or false")
        return value
    if name == "operation_timeout":
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigurationError(
                f"{where}: operation_timeout must be whole seconds, or null for the installation's default"
            )
        return value
    if not isinstance(value, str):
        raise ConfigurationError(f"{where}: {name} must be a string")
    return value


def _env_name(where: str, key: str, value: Any) -> str:
    # The message never repeats the value: a secret pasted in place of a name must not reach a log.
    if not isinstance(value, str) or not credentials.ENV_NAME_RE.fullmatch(value):
        raise ConfigurationError(
            f"{where}: {key} takes the NAME of an environment variable (letters, digits and _, e.g. "
            "MCP_ORDERS_TOKEN), not the credential itself; the value given is no such name and is not "
            "repeated here"
        )
    return value


def specs_from_file(path: Path) -> list[ServerSpec]:
    """The servers of a ``.json`` or ``.toml`` file: one server, a list of them, or ``servers = [...]``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from None
    try:
        if path.suffix == ".toml":
            document: Any = tomllib.loads(text)
        elif path.suffix == ".json":
            document = json.loads(text)
        else:
            raise ConfigurationError(f"{path}: name a .json or .toml file")
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"{path} is not valid {path.suffix[1:].upper()}: {exc}") from None
    if isinstance(document, Mapping) and "servers" in document:
        if set(document) != {"servers"} or not isinstance(document["servers"], list):
            raise ConfigurationError(f"{path}: 'servers' must be the only key, holding a list of servers")
        entries = document["servers"]
    else:
        entries = document if isinstance(document, list) else [document]
    specs = [spec_from_mapping(entry) for entry in entries]
    if not specs:
        raise ConfigurationError(f"{path} names no server")
    return specs


def configure(
    specs: Sequence[ServerSpec], *, dry_run: bool = False, importer: Importer | None = None
) -> list[ServerReport]:
    """Apply ``specs``: every server saved in one transaction, or none (``ConfigurationError``);
    then, outside it, each requested import and the named tools enabled."""
    seen = [spec.identifier for spec in specs]
    if duplicated := sorted({name for name in seen if seen.count(name) > 1}):
        raise ConfigurationError(f"named more than once: {', '.join(duplicated)}")
    try:
        with transaction.atomic():
            saved = [_save(spec, dry_run) for spec in specs]
    except IntegrityError:
        raise ConfigurationError(
            "another process saved one of these servers at the same moment; nothing was changed "
            "— run it again"
        ) from None
    return [
        _after_save(spec, server, report, importer or catalogue.import_catalogue)
        for spec, (server, report) in zip(specs, saved, strict=True)
    ]


def _save(spec: ServerSpec, dry_run: bool) -> tuple[McpServer, ServerReport]:
    # Locked: two deploys configuring one server at once apply one after the other.
    existing = McpServer.objects.select_for_update().filter(identifier=spec.identifier).first()
    server = existing or McpServer(identifier=spec.identifier)
    current = model_to_dict(server, fields=McpServerForm.Meta.fields)
    wanted = {**current, "identifier": spec.identifier, **spec.values}
    if existing is None and not wanted.get("name"):
        wanted["name"] = spec.identifier
    data = {key: "" if value is None else value for key, value in wanted.items()}
    for form_field, variable in spec.secrets_from.items():
        secret = os.environ.get(variable, "")
        if not secret:
            raise ConfigurationError(
                f"server {spec.identifier!r}: the environment variable {variable} is not set here; "
                "its value is read now and stored encrypted"
            )
        if not _stored_equals(server, form_field, secret):
            data[form_field] = secret
    form = McpServerForm(data=data, instance=server)
    if not form.is_valid():
        raise ConfigurationError(f"server {spec.identifier!r}: {_errors(form)}")
    changed = tuple(
        name
        for name in form.changed_data
        if name not in SECRET_FROM_ENV.values() and (existing is None or name in spec.values)
    )
    secrets = tuple(name for name in SECRET_FROM_ENV.values() if data.get(name))
    action: Literal["created", "updated", "unchanged"] = (
        "created" if existing is None else "updated" if changed or secrets else "unchanged"
    )
    notes = _notes(spec)
    if existing is None and form.instance.requires_approval:
        notes += (
            "each tool call waits for someone's approval (a new server's default; "
            "--no-requires-approval, or requires_approval = false in a file, runs calls at once)",
        )
    if not dry_run and action != "unchanged":
        instance = form.save(commit=False)
        if existing is None:
            instance.save()
        else:
            # Only what this run set: an import's status columns, written meanwhile, stay.
            instance.save(update_fields=[*changed, *(CIPHERTEXT[name] for name in secrets), "updated"])
    report = ServerReport(
        spec.identifier,
        action,
        changed + tuple(name.removeprefix("new_") for name in secrets),
        dry_run,
        holds=tuple(hold.said for hold in readiness.holds(form.instance.enabled, form.instance.data_class)),
        notes=notes,
    )
    return form.instance, report


def _stored_equals(server: McpServer, form_field: str, secret: str) -> bool:
    """The stored secret is already this one (so an unchanged run writes nothing)."""
    stored = getattr(server, CIPHERTEXT[form_field])
    if not stored:
        return False
    try:
        return credentials.decrypt(stored) == secret.strip()
    except credentials.CredentialUnavailable:
        return False


def _errors(form: McpServerForm) -> str:
    # The form's messages name fields and rules, never a submitted secret.
    named = {form_field: key for key, form_field in SECRET_FROM_ENV.items()}
    parts = []
    for name, messages in form.errors.items():
        text = " ".join(str(message).rstrip(".") for message in messages)
        parts.append(text if name == "__all__" else f"{named.get(name, name)}: {text}")
    return "; ".join(parts)


def _notes(spec: ServerSpec) -> tuple[str, ...]:
    variable = spec.values.get("credential_env")
    if variable and not os.environ.get(variable):
        # Not an error: the site's processes may have it where this command does not.
        return (f"{variable} is not set in this environment; the site's processes must have it",)
    return ()


def _after_save(
    spec: ServerSpec, server: McpServer, report: ServerReport, importer: Importer
) -> ServerReport:
    if report.dry_run:
        planned = []
        if spec.import_catalogue:
            planned.append("would import its catalogue")
        if spec.enable_tools:
            planned.append(f"would enable {', '.join(spec.enable_tools)} (if its catalogue has them)")
        return _with(report, notes=(*report.notes, *planned))
    imported = importer(server) if spec.import_catalogue else None
    if imported is not None and not imported.ok:
        skipped = tuple(f"{name}: not enabled, the import was refused" for name in spec.enable_tools)
        return _with(report, imported=imported, not_enabled=skipped)
    skipped_reasons = imported.skip_reasons if imported is not None else ()
    enabled, not_enabled = _enable(server, spec.enable_tools, skipped_reasons)
    return _with(report, imported=imported, enabled_tools=enabled, not_enabled=not_enabled)


def _enable(
    server: McpServer, names: Iterable[str], skip_reasons: Iterable[str] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Enable the named tools of ``server`` (local or remote names) through the catalogue service.

    A tool the import just skipped is named with the import's reason, not as one never imported.
    """
    skipped = list(skip_reasons)
    wanted = list(names)
    if not wanted:
        return (), ()
    rows = {row.tool_name: row for row in McpTool.objects.filter(server=server)}
    by_remote = {row.remote_name: row for row in rows.values()}
    found = {name: rows.get(name) or by_remote.get(name) for name in wanted}
    catalogue.enable_tools(row.pk for row in found.values() if row is not None)
    now = {
        row.pk: row
        for row in McpTool.objects.filter(pk__in=[row.pk for row in found.values() if row is not None])
    }
    enabled, refused = [], []
    for name, row in found.items():
        fresh = now.get(row.pk) if row is not None else None
        remote = name.removeprefix(f"mcp_{server.identifier}_")
        why = next((reason for reason in skipped if reason.startswith((f"{remote!r}:", f"{name!r}:"))), "")
        if fresh is None and why:
            refused.append(f"{name}: skipped by the import, {why}")
        elif fresh is None:
            refused.append(f"{name}: not in the catalogue of {server.identifier} (import it first)")
        elif fresh.enabled:
            enabled.append(fresh.tool_name)
        elif fresh.orphaned:
            refused.append(f"{name}: orphaned, gone from its server's catalogue")
        else:
            refused.append(
                f"{name}: its definition changed since it was enabled; it stays disabled until someone "
                "reviews the change (the tool's page in the admin) and enables it there"
            )
    return tuple(enabled), tuple(refused)


def _with(report: ServerReport, **changes: Any) -> ServerReport:
    return dataclasses.replace(report, **changes)
