"""The benchmark's WSGI application: wrapped where ``BENCH_MODE`` installs nr_llm."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site")

from django.core.wsgi import get_wsgi_application  # noqa: E402

from nr_llm.observability.wsgi import DisconnectAwareWSGI  # noqa: E402

_django = get_wsgi_application()
from bench.site import WRAPPED  # noqa: E402

application = DisconnectAwareWSGI(_django) if WRAPPED else _django
