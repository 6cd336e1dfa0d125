"""The host gate: private, loopback and other non-public addresses are refused before anything is sent."""

from __future__ import annotations

import ipaddress
import socket

import pytest
import responses

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol import client as client_module
from nr_llm.mcp.wire.hostgate import forbidden, refuse_private, resolve


def check_host(url: str, server: str) -> None:
    refuse_private(resolve(url, server, 5), server)


REFUSED = [
    "127.0.0.1",
    "127.8.9.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
    "224.0.0.1",
    "240.0.0.1",
    "100.64.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "2002:7f00:1::",
]
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_forbidden(address: str) -> None:
    """Loopback, private, link-local, multicast, reserved, unspecified, CGNAT, mapped: forbidden."""
    assert forbidden(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    """Global IPv4 and IPv6 addresses (also IPv4-mapped) are allowed."""
    assert not forbidden(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/mcp",
        "http://[::1]:8080/mcp",
        "https://localhost/mcp",
        "http://10.0.0.8/",
        "http://[::ffff:127.0.0.1]/mcp",
        "http://[::ffff:a9fe:a9fe]/latest",
    ],
)
def test_check_host_refuses_urls_that_resolve_inside(url: str) -> None:
    """A URL whose host resolves to any forbidden address is refused_host, naming the server."""
    with pytest.raises(McpTransportError) as caught:
        check_host(url, "inner")
    assert caught.value.kind == "refused_host" and "'inner'" in str(caught.value)


@pytest.mark.parametrize("url", ["ftp://example.com/", "http:///mcp", "not a url", "http://host:99999/"])
def test_a_url_without_a_usable_http_host_is_unreachable(url: str) -> None:
    """A non-http(s) URL or one without a host is 'unreachable' before any lookup."""
    with pytest.raises(McpTransportError) as caught:
        check_host(url, "x")
    assert caught.value.kind == "unreachable"


def test_a_refused_host_is_not_even_connected_to() -> None:
    """With private networks off, a loopback server gets no TCP connection and no credential."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        endpoint = Endpoint(
            identifier="inner", url=f"http://127.0.0.1:{port}/mcp", credential="tok", auth_placement="bearer"
        )
        report = McpClient().ping(endpoint)
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert report.reachable is False and "not contacted" in report.error


def test_a_public_address_is_let_through() -> None:
    """With private networks off, a public literal address passes the gate and is asked."""
    with responses.RequestsMock() as mock:
        mock.post("http://93.184.216.34/mcp", status=500)
        report = McpClient().ping(Endpoint(identifier="pub", url="http://93.184.216.34/mcp"))
        assert len(mock.calls) == 1
    assert "HTTP 500" in report.error


def test_a_connection_that_lands_on_a_private_address_is_refused(monkeypatch) -> None:
    """DNS rebinding: should the name resolve publicly at the gate and privately at connect time,
    the connected peer address is checked too, and nothing is sent over it."""
    from tests.peers import sdk_server

    monkeypatch.setattr(
        client_module, "refuse_private", lambda addresses, server: None
    )  # the gate was fooled
    with sdk_server("--stateless") as url, pytest.raises(McpTransportError) as caught:
        McpClient().call_tool(Endpoint(identifier="rebound", url=url), "echo", {"text": "x"})
    assert caught.value.kind == "refused_host" and "'rebound'" in str(caught.value)


def test_allow_private_networks_skips_the_gate() -> None:
    """allow_private_networks=True lets the client talk to loopback."""
    from tests.peers import sdk_server

    with sdk_server("--stateless") as url:
        assert (
            McpClient(connection=ConnectionSettings(allow_private_networks=True))
            .ping(Endpoint(identifier="local", url=url))
            .reachable
        )


def test_a_hanging_resolver_is_bounded_by_the_budget(monkeypatch) -> None:
    """A DNS lookup that never answers ends the operation with 'timeout' at the budget, nothing sent."""
    import threading
    import time

    released = threading.Event()

    def hang(*args, **kwargs):
        released.wait(30)  # released when the test ends: no lookup thread outlives it
        raise OSError("gave up")

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    started = time.monotonic()
    try:
        report = McpClient().ping(
            Endpoint(identifier="slowdns", url="https://mcp.example.com/mcp", budget_seconds=1)
        )
    finally:
        released.set()
    assert report.reachable is False and "did not resolve within the 1.0 s left" in report.error
    assert time.monotonic() - started < 2


def test_a_host_name_is_resolved_once_and_its_vetted_address_is_dialled(monkeypatch) -> None:
    """One lookup per operation; every leg connects to the address the gate judged, never a fresh answer."""
    import sys

    from tests.peers import running

    real = socket.getaddrinfo
    lookups: list[str] = []

    def pinned_name(host, port, *args, **kwargs):
        if host == "mcp.example.com":
            lookups.append(host)
            if len(lookups) > 1:  # a rebinding resolver: only the first answer is honest
                return real("10.255.255.1", port, *args, **kwargs)
            return real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        monkeypatch.setattr(socket, "getaddrinfo", pinned_name)
        client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
        outcome = client.call_tool(
            Endpoint(identifier="named", url=f"http://mcp.example.com:{port}/fine/0/mcp"), "x"
        )
    assert outcome.text == "done"
    assert lookups == ["mcp.example.com"]


@pytest.mark.parametrize(
    "answers",
    [["93.184.216.34", "10.0.0.1"], ["10.0.0.1", "93.184.216.34"], ["2606:4700::1", "::ffff:127.0.0.1"]],
    ids=["public-then-private", "private-then-public", "v6-public-then-mapped-loopback"],
)
def test_one_private_address_among_public_ones_refuses_the_host(monkeypatch, answers: list[str]) -> None:
    """A name resolving to public and private addresses is refused: the connection could use any."""

    def mixed(host, port, *args, **kwargs):
        family = {4: socket.AF_INET, 6: socket.AF_INET6}
        return [
            (family[ipaddress.ip_address(a).version], socket.SOCK_STREAM, 6, "", (a, port)) for a in answers
        ]

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    with responses.RequestsMock() as mock:  # anything sent would be recorded here, not leave the machine
        report = McpClient().ping(
            Endpoint(
                identifier="mixed", url="https://mcp.example.com/mcp", credential="t", auth_placement="bearer"
            )
        )
        assert len(mock.calls) == 0
    assert report.reachable is False and "not contacted" in report.error and "'mixed'" in report.error


def test_an_injected_resolver_is_asked_instead_of_the_system() -> None:
    """resolve() asks the injected lookup with the URL's host and port, keeps its order and drops repeats."""
    asked: list[tuple[str, int]] = []

    def lookup(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["2001:db8::1", "93.184.216.34", "2001:db8::1"]

    assert resolve("https://mcp.test/mcp", "x", 5, lookup) == ["2001:db8::1", "93.184.216.34"]
    assert asked == [("mcp.test", 443)]


def test_an_injected_resolver_that_hangs_is_bounded_by_the_grant() -> None:
    """An injected lookup runs on the same bounded thread as the system one: 'timeout' at the grant."""
    import threading
    import time

    released = threading.Event()

    def hang(host: str, port: int) -> list[str]:
        released.wait(30)
        return []

    started = time.monotonic()
    try:
        with pytest.raises(McpTransportError) as caught:
            resolve("https://mcp.test/mcp", "slow", 1, hang)
    finally:
        released.set()
    assert caught.value.kind == "timeout" and time.monotonic() - started < 2


def test_the_host_lookup_waits_exactly_what_is_left_of_the_budget() -> None:
    """A 1.2 s budget and a lookup that never answers: 'timeout' after 1.2 s, not after 2 s (a
    leg's grant, rounded up to whole seconds) as it used to (issue 25, item 9)."""
    import threading
    import time

    released = threading.Event()

    def hang(host: str, port: int) -> list[str]:
        released.wait(30)
        return []

    client = McpClient(connection=ConnectionSettings(resolver=hang))
    started = time.monotonic()
    try:
        report = client.ping(Endpoint(identifier="slow", url="https://mcp.test/mcp", budget_seconds=1.2))
    finally:
        released.set()
    elapsed = time.monotonic() - started
    assert report.failure is not None and report.failure.kind == "timeout", report
    assert "within the 1.2 s left" in report.error
    assert 1.1 < elapsed < 1.9, elapsed  # a grant rounded up to 2 s would end past 2


@pytest.mark.parametrize("answer", [[], ["not-an-address"]], ids=["nothing", "not-an-address"])
def test_an_injected_resolver_without_a_usable_answer_is_unreachable(answer: list[str]) -> None:
    """No address, or something that is not one: 'unreachable', as a failed system lookup is."""
    with pytest.raises(McpTransportError) as caught:
        resolve("https://mcp.test/mcp", "x", 5, lambda host, port: answer)
    assert caught.value.kind == "unreachable"


def test_the_client_hands_its_resolver_to_the_host_gate() -> None:
    """ConnectionSettings(resolver=...) is what the gate asks: a name mapped to a private address
    is refused."""
    report = McpClient(connection=ConnectionSettings(resolver=lambda host, port: ["10.0.0.5"])).ping(
        Endpoint(identifier="mapped", url="https://mcp.test/mcp")
    )
    assert report.failure is not None and report.failure.kind == "refused_host"


def test_a_remembered_answer_is_used_again_and_judged_again() -> None:
    """remember_seconds: a second resolve within it asks no resolver; the gate still judges the
    remembered answer (refuse_private runs on what resolve returns), and 0 asks every time."""
    asked: list[str] = []

    def lookup(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["10.0.0.7"]

    first = resolve("https://mcp.test/mcp", "x", 5, lookup, remember_seconds=60)
    again = resolve("https://mcp.test/mcp", "x", 5, lookup, remember_seconds=60)
    assert first == again == ["10.0.0.7"] and asked == ["mcp.test"]
    with pytest.raises(McpTransportError) as refused:
        refuse_private(again, "x")
    assert refused.value.kind == "refused_host"
    resolve("https://mcp.test/mcp", "x", 5, lookup, remember_seconds=0)
    resolve("https://mcp.test/mcp", "x", 5, lookup, remember_seconds=0)
    assert asked == ["mcp.test"] * 3


def test_a_remembered_answer_is_per_host_port_and_resolver() -> None:
    """Another port, another host or another resolver is looked up on its own."""
    asked: list[tuple[str, int]] = []

    def lookup(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["93.184.216.34"]

    def other(host: str, port: int) -> list[str]:
        asked.append(("other", port))
        return ["93.184.216.35"]

    for url in ("https://mcp.test/mcp", "https://mcp.test:8443/mcp", "https://auth.test/mcp"):
        resolve(url, "x", 5, lookup, remember_seconds=60)
    assert resolve("https://mcp.test/mcp", "x", 5, other, remember_seconds=60) == ["93.184.216.35"]
    assert asked == [("mcp.test", 443), ("mcp.test", 8443), ("auth.test", 443), ("other", 443)]


def test_a_refusal_names_the_setting_that_allows_private_networks_and_what_it_is_for() -> None:
    """The refusal an operator reads says which setting lets the server through, and that it is for
    development and internal servers, not a switch to flip on a public site by reflex."""
    with pytest.raises(McpTransportError) as caught:
        refuse_private(["10.0.0.7"], "inner")
    message = str(caught.value)
    assert caught.value.kind == "refused_host"
    assert "MCP server 'inner' was not contacted" in message
    assert "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True" in message
    assert "for development and for internal servers" in message
