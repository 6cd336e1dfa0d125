"""The benchmark's WSGI application: wrapped in ``BENCH_MODE`` emit and full."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site")

from django.core.wsgi import get_wsgi_application  # noqa: E402

from nr_llm.observability.wsgi import DisconnectAwareWSGI  # noqa: E402

_django = get_wsgi_application()
application = DisconnectAwareWSGI(_django) if os.environ.get("BENCH_MODE") in ("emit", "full") else _django
