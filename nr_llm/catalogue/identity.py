"""Whose grant a catalogue import uses.

A shared server has one grant, so an import uses it. A per-user server has none: every grant
is a user's own, and nothing may fall back to another user's. Its import therefore acts as
the one user the operator names on the server (``catalogue_user``, usually the operator's own
account, connected through the site's Connect page like any user's): the catalogue is what
that account sees. With no such user, or one without a usable grant, the import is refused
with a reason that says what to do, and the server is not contacted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..authorization import actors
from ..mcp import Endpoint
from ..models import McpServer
from ..servers.endpoints import endpoint_for


@dataclass(frozen=True)
class ImportIdentity:
    """The endpoint an import calls with, and the user whose grant it carries (None: shared)."""

    endpoint: Endpoint
    user_id: int | None


class NoImportGrant(Exception):
    """A per-user server's import has no grant to act with; ``str()`` says what to do."""


def import_identity(server: McpServer) -> ImportIdentity:
    """The grant an import of ``server`` acts with, or ``NoImportGrant`` saying why there is none."""
    if not server.per_user:
        return ImportIdentity(endpoint_for(server), None)
    user_id = server.catalogue_user_id
    if user_id is None:
        raise NoImportGrant(
            "it is a per-user server and no user to import as is set: choose one in "
            '"imports act as" (usually your own account), then connect that account'
        )
    access = actors.resolve_user(server, user_id)
    if isinstance(access, actors.NeedsAuthorization):
        who = server.catalogue_user.get_username() if server.catalogue_user else f"user {user_id}"
        if access.reason == "sign_in":
            raise NoImportGrant(
                f"the user it imports as ({who}) has no identity token from the site now; they must "
                f"sign in again at {access.connect_url}"
            )
        raise NoImportGrant(
            f"the user it imports as ({who}) has no usable grant; they must connect their account "
            f"at {access.connect_url} first"
        )
    return ImportIdentity(access, user_id)
