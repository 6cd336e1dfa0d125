"""Public URLs of the authorization package; include them in the site's urls.py, e.g.
``path("mcp/", include("nr_llm.authorization.urls"))``: the client ID metadata document (for a
server that uses one) and the users' own Connect pages (for per-user servers)."""

from django.urls import path

from . import user_views, views

urlpatterns = [
    path(
        "oauth/client/<str:identifier>.json",
        views.client_metadata_document,
        name="nr_llm_oauth_client_metadata",
    ),
    path("accounts/", user_views.connected_accounts, name="nr_llm_connected_accounts"),
    path("connect/<str:identifier>/", user_views.connect, name="nr_llm_connect"),
    path("connect/<str:identifier>/disconnect/", user_views.disconnect, name="nr_llm_disconnect"),
    path("callback/", user_views.callback, name="nr_llm_connect_callback"),
]
