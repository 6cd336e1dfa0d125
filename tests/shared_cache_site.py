"""Settings and URLs of the site the shared-cache e2e test runs in four processes (two gunicorn
workers, two ``db_worker`` processes): the worker tests' settings, ``NR_LLM_CACHE`` over the
Redis named by ``NR_LLM_TEST_REDIS``, and one view that pings a server (``/ping/<identifier>/``,
answering the worker's pid and the era). tests/e2e/test_leases_across_processes.py runs a turn
in it (``/turn/<tool>/?seconds=S&seconds=T``: one call of the tool per ``seconds``, answering the
worker's pid and each call's status)."""

import os
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path

from tests.worker_settings import *  # noqa: F403

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "shared": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("NR_LLM_TEST_REDIS", "redis://127.0.0.1:1/0"),
    },
}
NR_LLM_CACHE = "shared"
NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
ROOT_URLCONF = "tests.shared_cache_site"
ALLOWED_HOSTS = ["127.0.0.1"]


def ping(request: HttpRequest, identifier: str) -> JsonResponse:
    from nr_llm.models import McpServer
    from nr_llm.servers.endpoints import endpoint_for, mcp_client

    report = mcp_client().ping(endpoint_for(McpServer.objects.get(identifier=identifier)))
    return JsonResponse({"pid": os.getpid(), "era": report.era, "reachable": report.reachable})


def turn(request: HttpRequest, tool: str) -> JsonResponse:
    from nr_llm import tools

    calls = [(tool, {"seconds": float(seconds)}) for seconds in request.GET.getlist("seconds")]
    results = tools.execute_many(calls, actor="site")
    return JsonResponse({"pid": os.getpid(), "results": [[result.status, result.text] for result in results]})


urlpatterns: list[Any] = [path("ping/<str:identifier>/", ping), path("turn/<str:tool>/", turn)]
