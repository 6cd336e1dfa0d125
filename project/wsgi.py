import os

from django.core.wsgi import get_wsgi_application

from nr_llm.observability.wsgi import DisconnectAwareWSGI

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

# The wrapper gives each request its disconnect signal (nr_llm/observability).
application = DisconnectAwareWSGI(get_wsgi_application())
