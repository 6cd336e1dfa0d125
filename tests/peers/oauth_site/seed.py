"""Create the seeded user and clients from PEER_DIR/seed.json (written by tests/oauth_peers.py).

The secrets are chosen by the test session, so none is written in the repository.
"""

from __future__ import annotations

import json
from typing import Any

from tests.peers.oauth_site.settings import PEER_DIR

GRANTS = {"authorization_code": "authorization-code", "client_credentials": "client-credentials"}


def seed() -> None:
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import get_application_model

    data: dict[str, Any] = json.loads((PEER_DIR / "seed.json").read_text())
    user_model = get_user_model()
    user = data["user"]
    user_model.objects.create_user(username=user["username"], password=user["password"])
    # A second person with an account of their own (per-user grants: each connects as themselves).
    for other in data.get("other_users", []):
        user_model.objects.create_user(username=other["username"], password=other["password"])
    application_model = get_application_model()
    for client in data["clients"]:
        confidential = client.get("client_secret") is not None
        application = application_model(
            name=client["name"],
            client_id=client["client_id"],
            client_type=(
                application_model.CLIENT_CONFIDENTIAL if confidential else application_model.CLIENT_PUBLIC
            ),
            authorization_grant_type=GRANTS[client["grant_type"]],
            redirect_uris=" ".join(client.get("redirect_uris", [])),
            algorithm="",
        )
        if confidential:
            application.client_secret = client["client_secret"]
        application.full_clean(exclude=["user"])
        application.save()
