"""Which scopes to ask for (MCP authorization, "Scope Selection Strategy" and step-up)."""

from __future__ import annotations

from collections.abc import Iterable

OFFLINE_ACCESS = "offline_access"


def select_scopes(
    challenged: tuple[str, ...] | None,
    resource_supported: tuple[str, ...] | None,
    server_supported: tuple[str, ...] | None,
    *,
    wants_refresh: bool,
) -> tuple[str, ...]:
    """The challenge's scopes, else the resource's ``scopes_supported``, else none (omitted).

    ``offline_access`` is added only when the authorization server lists it and a refresh
    token is of use: asking an AS for a scope it does not know fails the whole request.
    """
    if challenged is not None:
        chosen = challenged
    elif resource_supported is not None:
        chosen = resource_supported
    else:
        chosen = ()
    if wants_refresh and chosen and server_supported and OFFLINE_ACCESS in server_supported:
        chosen = union_scopes(chosen, (OFFLINE_ACCESS,))
    return chosen


def union_scopes(*groups: Iterable[str]) -> tuple[str, ...]:
    """Every scope of every group once, in first-seen order (step-up keeps what was granted)."""
    return tuple(dict.fromkeys(scope for group in groups for scope in group))
