"""The toolkit's endpoints at the site root (so the RFC 8414 document sits at the origin),
a login page, and the toolkit's stylesheet."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.static import serve

from tests.peers.oauth_site.settings import STATIC_DIR

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("", include("oauth2_provider.urls", namespace="oauth2_provider")),
    # DEBUG is off, so Django serves no static files by itself; the consent page's stylesheet
    # is the only one, and a throwaway site needs no collectstatic step for it.
    re_path(r"^static/(?P<path>.*)$", serve, {"document_root": STATIC_DIR}),
]
