"""The acting user's ID token for enterprise-managed authorization, from the site's hook.

The site knows how its users signed in (its OIDC login keeps the ID token, a social-auth
backend stores it); nr-llm does not. ``NR_LLM_OAUTH_IDENTITY_TOKEN`` names a
``callable(user, server) -> str | None`` that hands it over; None means the user has no
usable token now, and the call asks them to sign in again (``sign_in``). The token is
exchanged for an ID-JAG inside the operation and never stored, logged or shown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.utils.module_loading import import_string

from ..conf import conf
from ..models import McpServer

logger = logging.getLogger("nr_llm.authorization")


def hook() -> Callable[[Any, McpServer], str | None] | None:
    """The configured hook, or None when the site set none (checks.py E070 vets the path)."""
    path = conf.OAUTH_IDENTITY_TOKEN
    return import_string(path) if path else None


def identity_token(server: McpServer, user_id: int | None) -> str | None:
    """``user_id``'s ID token for ``server`` as the hook gives it, or None (no hook, no such
    user, or the hook has none): anything but a non-blank string is no token."""
    found = hook()
    if found is None or user_id is None:
        return None
    user = get_user_model()._default_manager.filter(pk=user_id).first()
    if user is None:
        return None
    try:
        token = found(user, server)
    except Exception:
        # The site's own code, called from execute(), which answers with a result and never
        # raises: a failing hook is logged for the site to fix and reads as "no token".
        logger.exception("the NR_LLM_OAUTH_IDENTITY_TOKEN hook failed for MCP server %s", server.identifier)
        return None
    return token.strip() if isinstance(token, str) and token.strip() else None


def token_source(server: McpServer, user_id: int | None) -> Callable[[], str | None]:
    """What the protocol client calls when, and only when, it needs a new grant: the hook is
    asked inside that operation, once, so a token the site just refreshed is the one used."""
    asked: list[str | None] = []

    def source() -> str | None:
        if not asked:
            asked.append(identity_token(server, user_id))
        return asked[0]

    return source
