"""The applications the real-server tests serve: the demo site, wrapped or bare.

An outermost test-only layer logs ``admitted <X-Request-ID>`` once the server hands a
request over, a barrier the client waits for before it breaks the connection.
"""

import logging
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.observability.server_settings")

from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.signals import got_request_exception  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from nr_llm.observability.asgi import DisconnectAwareASGI  # noqa: E402
from nr_llm.observability.wsgi import DisconnectAwareWSGI  # noqa: E402

logger = logging.getLogger("tests.observability.servers")
BARE = os.environ.get("NR_LLM_TEST_BARE") == "1"


def _record_signal(sender, request=None, **kwargs):
    logger.warning("got_request_exception %s", getattr(request, "path", "?"))


got_request_exception.connect(_record_signal)


def _admitting_wsgi(app):
    def admitted(environ, start_response):
        logger.info("admitted %s", environ.get("HTTP_X_REQUEST_ID"))
        return app(environ, start_response)

    return admitted


def _admitting_asgi(app):
    async def admitted(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            logger.info("admitted %s", headers.get(b"x-request-id", b"").decode())
        await app(scope, receive, send)

    return admitted


if os.environ.get("NR_LLM_TEST_SERVER") == "asgi":
    _asgi = get_asgi_application()
    asgi_application = _admitting_asgi(_asgi if BARE else DisconnectAwareASGI(_asgi))
else:
    _wsgi = get_wsgi_application()
    wsgi_application = _admitting_wsgi(_wsgi if BARE else DisconnectAwareWSGI(_wsgi))
