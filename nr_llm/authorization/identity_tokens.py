"""The acting user's ID token for enterprise-managed authorization, from the site's hook
(``NR_LLM_OAUTH_IDENTITY_TOKEN``): only the site knows how its users signed in."""

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
    path = conf.OAUTH_IDENTITY_TOKEN
    return import_string(path) if path else None


def identity_token(server: McpServer, user_id: int | None) -> str | None:
    """The hook's token, or None: anything but a non-blank string is no token."""
    found = hook()
    if found is None or user_id is None:
        return None
    user = get_user_model()._default_manager.filter(pk=user_id).first()
    if user is None:
        return None
    try:
        token = found(user, server)
    except Exception:
        # execute() never raises: a failing hook is logged for the site and reads as no token.
        logger.exception("the NR_LLM_OAUTH_IDENTITY_TOKEN hook failed for MCP server %s", server.identifier)
        return None
    return token.strip() if isinstance(token, str) and token.strip() else None


def token_source(server: McpServer, user_id: int | None) -> Callable[[], str | None]:
    """Ask the hook only when a new grant is needed, once, so a freshly refreshed token is used."""
    asked: list[str | None] = []

    def source() -> str | None:
        if not asked:
            asked.append(identity_token(server, user_id))
        return asked[0]

    return source
