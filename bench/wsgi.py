"""The benchmark's WSGI application: wrapped in every ``BENCH_MODE`` but bare."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site")

from django.core.wsgi import get_wsgi_application  # noqa: E402

from nr_llm.observability.wsgi import DisconnectAwareWSGI  # noqa: E402

_django = get_wsgi_application()
application = _django if os.environ.get("BENCH_MODE", "bare") == "bare" else DisconnectAwareWSGI(_django)
