"""Public URLs of the authorization package: include them in the site's urls.py when a
server uses a client ID metadata document (``path("nr-llm/", include("nr_llm.authorization.urls"))``)."""

from django.urls import path

from . import views

urlpatterns = [
    path(
        "oauth/client/<str:identifier>.json",
        views.client_metadata_document,
        name="nr_llm_oauth_client_metadata",
    )
]
