import os

from django.core.asgi import get_asgi_application

from nr_llm.observability.asgi import DisconnectAwareASGI

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

# The wrapper gives each request its disconnect signal (nr_llm/observability).
application = DisconnectAwareASGI(get_asgi_application())
