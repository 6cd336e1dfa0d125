"""Admin test helpers: clients with given rights, posting an action, reading its messages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db.models import Model
from django.test import Client


def staff_client(*codenames: str) -> Client:
    """A logged-in staff user holding exactly the named permissions (e.g. view_mcpserver)."""
    user = User.objects.create_user("operator", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def csrf_checking_client() -> Client:
    """A superuser whose client enforces CSRF, as a browser on another site would meet it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def post_action(client: Client, changelist: str, action: str, rows: Iterable[Model]) -> Any:
    """POST an admin action for ``rows`` and follow the redirect back to the changelist."""
    return client.post(
        changelist, {"action": action, "_selected_action": [row.pk for row in rows]}, follow=True
    )


def messages_of(response: Any) -> list[tuple[str, str]]:
    """The (level, text) of each message the admin showed."""
    return [(message.level_tag, message.message) for message in response.context["messages"]]
