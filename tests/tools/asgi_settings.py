"""Settings of the ASGI site tests/tools/test_asgi_views.py serves under uvicorn."""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.tools.asgi_site"
ALLOWED_HOSTS = ["127.0.0.1"]
DEBUG = False
NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
