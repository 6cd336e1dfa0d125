"""Resources, resource templates and prompts in the catalogue, beside the tools.

An import reads what a server offers besides tools (``McpClient.list_features``, one operation
under one budget) and reconciles it as it does tools: rows upserted per server, kind and key,
missing ones marked orphaned (never deleted), new ones disabled; an enabled row whose definition
changed is disabled until an operator reviews it (``DEFINITION_CHANGED``). The server's row is
locked while it reconciles, never while the server is asked.

A listed item that cannot be kept (no key, an oversized definition, more than ``MAX_FEATURES``
of one kind) is skipped with its reason; the rest are imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from django.db import transaction
from django.utils import timezone

from ..mcp import Endpoint, Features, McpTransportError, clean, redact
from ..models import DEFINITION_CHANGED, FeatureKind, McpFeature, McpServer, feature_definition
from ..servers.endpoints import mcp_client
from . import identity
from .pins import fingerprint

MAX_FEATURES = 1_000
# As for tools (imports.py): what a row keeps of a name and a description, and of a definition.
MAX_TITLE = 200
MAX_DESCRIPTION = 4_000
MAX_RAW_PART_BYTES = 32 * 1024
MAX_KEY = 2_048
_KEYS: dict[str, str] = {"resource": "uri", "template": "uriTemplate", "prompt": "name"}


@runtime_checkable
class FeaturesClient(Protocol):
    def list_features(self, endpoint: Endpoint) -> Features: ...


@dataclass(frozen=True)
class FeatureReport:
    """What an import did with a server's resources, templates and prompts."""

    resources: int = 0
    templates: int = 0
    prompts: int = 0
    skipped: int = 0
    orphaned: int = 0
    skip_reasons: tuple[str, ...] = ()
    #: Keys of enabled rows disabled because their definition changed.
    changed: tuple[str, ...] = ()
    refused: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "resources": self.resources,
            "templates": self.templates,
            "prompts": self.prompts,
            "skipped": self.skipped,
            "orphaned": self.orphaned,
            "skip_reasons": list(self.skip_reasons),
            "changed": list(self.changed),
            "refused": self.refused,
        }


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


def import_features(server: McpServer, client: FeaturesClient | None = None) -> FeatureReport:
    """Walk and reconcile ``server``'s resources, templates and prompts."""
    try:
        endpoint = identity.import_identity(server).endpoint
    except identity.NoImportGrant as exc:
        return FeatureReport(refused=str(exc))
    try:
        listed = (client or mcp_client()).list_features(endpoint)
    except McpTransportError as exc:
        return FeatureReport(refused=redact(str(exc), endpoint.credential))
    items: list[tuple[str, dict[str, Any]]] = []
    reasons: list[str] = []
    for kind, advertised in (
        (FeatureKind.RESOURCE, listed.resources),
        (FeatureKind.TEMPLATE, listed.templates),
        (FeatureKind.PROMPT, listed.prompts),
    ):
        if len(advertised) > MAX_FEATURES:
            reasons.append(f"{len(advertised)} {kind}s advertised; at most {MAX_FEATURES} are imported")
            advertised = advertised[:MAX_FEATURES]
        for item in advertised:
            problem = _problem(kind, item)
            if problem:
                reasons.append(problem)
            else:
                items.append((kind, item))
    skipped = sum(len(x) for x in (listed.resources, listed.templates, listed.prompts)) - len(items)
    return _reconcile(server, items, reasons, skipped)


def _problem(kind: str, item: dict[str, Any]) -> str:
    key = item.get(_KEYS[kind])
    if not isinstance(key, str) or not key.strip():
        return f"a {kind} without a {_KEYS[kind]} was skipped"
    if len(key) > MAX_KEY or "\x00" in key:
        return f"a {kind} whose {_KEYS[kind]} is over {MAX_KEY} characters or holds NUL was skipped"
    if len(json.dumps(feature_definition(item), ensure_ascii=False)) > MAX_RAW_PART_BYTES:
        return f"{kind} {clean(key, 100)!r} was skipped: its definition is over {MAX_RAW_PART_BYTES} bytes"
    return ""


def _values(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    definition = feature_definition(item)
    mime = item.get("mimeType")
    return {
        "name": clean(item.get("name", ""), MAX_TITLE),
        "title": clean(item.get("title", ""), MAX_TITLE),
        "description": clean(item.get("description", ""), MAX_DESCRIPTION),
        "mime_type": clean(mime, MAX_TITLE) if isinstance(mime, str) else "",
        "definition": definition,
        "definition_fingerprint": fingerprint(definition),
    }


def _reconcile(
    server: McpServer, items: list[tuple[str, dict[str, Any]]], reasons: list[str], skipped: int
) -> FeatureReport:
    now = timezone.now()
    counts: dict[str, int] = {"resource": 0, "template": 0, "prompt": 0}
    changed: list[str] = []
    with transaction.atomic():
        McpServer.objects.select_for_update().filter(pk=server.pk).values_list("pk").first()
        existing = {(row.kind, row.key_digest): row for row in McpFeature.objects.filter(server=server)}
        seen: set[tuple[str, str]] = set()
        for kind, item in items:
            key = item[_KEYS[kind]]
            digest = key_digest(key)
            if (kind, digest) in seen:
                reasons.append(f"{kind} {clean(key, 100)!r} was listed twice; the first was kept")
                skipped += 1
                continue
            seen.add((kind, digest))
            counts[kind] += 1
            values = _values(kind, item)
            row = existing.get((kind, digest))
            if row is None:
                McpFeature.objects.create(
                    server=server,
                    kind=kind,
                    key=key,
                    key_digest=digest,
                    pinned_definition=values["definition"],
                    pinned_fingerprint=values["definition_fingerprint"],
                    **values,
                )
                continue
            for field, value in values.items():
                setattr(row, field, value)
            row.orphaned, row.orphaned_at = False, None
            if not row.enabled:
                row.pinned_definition = values["definition"]
                row.pinned_fingerprint = values["definition_fingerprint"]
            elif row.pinned_fingerprint != values["definition_fingerprint"]:
                row.enabled = False
                row.disabled_reason, row.disabled_at = DEFINITION_CHANGED, now
                changed.append(key)
            row.save()
        gone = [row.pk for pair, row in existing.items() if pair not in seen and not row.orphaned]
        McpFeature.objects.filter(pk__in=gone).update(orphaned=True, orphaned_at=now, updated=now)
    return FeatureReport(
        resources=counts[FeatureKind.RESOURCE],
        templates=counts[FeatureKind.TEMPLATE],
        prompts=counts[FeatureKind.PROMPT],
        skipped=skipped,
        orphaned=len(gone),
        skip_reasons=tuple(dict.fromkeys(reasons)),
        changed=tuple(changed),
    )


def enable_features(ids: Iterable[int]) -> int:
    """Enable the given rows, except orphans and rows whose definition awaits review."""
    with _locked(ids) as rows:
        chosen = [row for row in rows if not (row.enabled or row.orphaned or row.awaiting_review)]
        for row in chosen:
            _accept(row)
            row.save()
    return len(chosen)


def disable_features(ids: Iterable[int]) -> int:
    with _locked(ids) as rows:
        ids_on = [row.pk for row in rows if row.enabled]
        McpFeature.objects.filter(pk__in=ids_on).update(enabled=False, updated=timezone.now())
    return len(ids_on)


def accept_feature_definition(feature_id: int, reviewed: str) -> str:
    """Enable one row, its current definition becoming the pinned one; "" or why not."""
    with _locked([feature_id]) as rows:
        if not rows:
            return "it no longer exists"
        (row,) = rows
        if row.orphaned:
            return "it is gone from its server's catalogue"
        if row.definition_fingerprint != reviewed:
            return "its definition changed again while you read it; read it again"
        _accept(row)
        row.save()
    return ""


def _accept(row: McpFeature) -> None:
    row.enabled = True
    row.pinned_definition = row.definition
    row.pinned_fingerprint = row.definition_fingerprint
    row.disabled_reason, row.disabled_at = "", None


@contextlib.contextmanager
def _locked(ids: Iterable[int]) -> Iterator[list[McpFeature]]:
    wanted = list(ids)
    with transaction.atomic():
        servers = (
            McpFeature.objects.filter(pk__in=wanted).order_by().values_list("server_id", flat=True).distinct()
        )
        list(
            McpServer.objects.select_for_update()
            .filter(pk__in=list(servers))
            .order_by("pk")
            .values_list("pk")
        )
        yield list(McpFeature.objects.filter(pk__in=wanted).select_related("server").order_by("pk"))
