"""The demo console's filter: a line per request of the site, not per asset a page pulls in."""

from __future__ import annotations

import logging

from django.conf import settings

from nr_llm.observability.completion import ACCESS_ATTRIBUTE

FAVICON = "/favicon.ico"


class QuietAssets(logging.Filter):
    """Drop the access records of static files and the favicon that were served (INFO).

    An admin page pulls in a dozen stylesheets, scripts and images, and a browser asks for the
    favicon on every page: their lines buried the requests someone watches the console for. An
    asset that failed (404, 5xx: WARNING and above) is still shown; it is a fault to fix.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(record, ACCESS_ATTRIBUTE, None)
        if record.levelno > logging.INFO or not isinstance(fields, dict):
            return True
        path = fields.get("path")
        if not isinstance(path, str):
            return True
        # Read at call time (CONVENTIONS: settings never captured at import).
        static = "/" + str(settings.STATIC_URL).lstrip("/")
        return not (path == FAVICON or path.startswith(static))
