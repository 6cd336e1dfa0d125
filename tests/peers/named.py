"""Plain ``requests`` reaching test names (``https://auth.test:PORT``) as the internet would.

The test names resolve nowhere, so the tests' own helpers and the peers (the protected
MCP server introspecting at the authorization server) cannot ask DNS. ``NamedAdapter``
dials the address a name stands for and still sends SNI for the name, verifies the
certificate for it and sends it as Host: the same identity the client under test uses.
Nothing in ``socket`` is patched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter


class NamedAdapter(HTTPAdapter):
    def __init__(self, names: Mapping[str, str]) -> None:
        self._names = dict(names)
        super().__init__()

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        parts = urlsplit(request.url or "")
        address = self._names.get(parts.hostname or "")
        if address is None:
            return super().send(request, *args, **kwargs)
        original = request.url
        request.headers["Host"] = parts.netloc
        request.url = urlunsplit(parts._replace(netloc=f"{address}:{parts.port or 443}"))
        try:
            response = super().send(request, *args, **kwargs)
        finally:
            request.url = original
        response.url = original or ""  # redirects and urljoin stay on the name
        return response

    def get_connection_with_tls_context(
        self, request: requests.PreparedRequest, verify: Any, proxies: Any = None, cert: Any = None
    ) -> Any:
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        name = str(request.headers.get("Host", "")).rsplit(":", 1)[0]
        if name in self._names:
            pool_kwargs = {**pool_kwargs, "server_hostname": name, "assert_hostname": name}  # type: ignore[typeddict-unknown-key]
        return self.poolmanager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)


def named_session(names: Mapping[str, str], ca_bundle: str) -> requests.Session:
    """A session that reaches ``names`` (name to address) over https, trusting ``ca_bundle``."""
    session = requests.Session()
    session.trust_env = False
    session.verify = ca_bundle
    session.mount("https://", NamedAdapter(names))
    return session
