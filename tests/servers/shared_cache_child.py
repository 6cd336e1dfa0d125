"""One process of a site, as far as the shared caches go: ``python -m
tests.servers.shared_cache_child URL ACTION`` configures Django with the cache named in
``CHILD_CACHES`` (JSON) as ``NR_LLM_CACHE``, then pings ``URL`` (ACTION ``ping``) or lists its
tools accepting a cached answer (``list``), and prints what it got as one JSON line."""

from __future__ import annotations

import json
import os
import sys

import django
from django.conf import settings


def main() -> None:
    url, action = sys.argv[1], sys.argv[2]
    settings.configure(
        SECRET_KEY="tests-only-secret-key-0123456789abcdef",
        CACHES=json.loads(os.environ["CHILD_CACHES"]),
        DATABASES=json.loads(os.environ.get("CHILD_DATABASES", "{}")),
        NR_LLM_CACHE=os.environ.get("CHILD_ALIAS", "shared") or None,
        USE_TZ=True,
    )
    django.setup()
    from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
    from nr_llm.servers.caches import shared_caches

    shared = shared_caches()
    client = McpClient(
        connection=ConnectionSettings(allow_private_networks=True),
        era_cache=None if shared is None else shared[0],
        tools_cache=None if shared is None else shared[1],
    )
    endpoint = Endpoint(identifier="changing", url=url, budget_seconds=10)
    if action == "ping":
        report = client.ping(endpoint)
        print(json.dumps({"reachable": report.reachable, "era": report.era}))
    else:
        tools = client.list_tools(endpoint, fresh=False)
        print(json.dumps({"tools": [tool["name"] for tool in tools]}))


if __name__ == "__main__":
    main()
