"""WSGI entry point of the authorization-server peer (gunicorn loads it in its worker)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.peers.oauth_site.settings")
application = get_wsgi_application()
